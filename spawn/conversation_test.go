package spawn

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

// countSource accepts negative counts, as pflag's Count flags do.
const countSource = "package count\n\n// Clamp returns n as a count; negative counts are valid (pflag).\nfunc Clamp(n int) int { return n }\n"

// negative is the reviewer's finding the coder declines.
var negative = finding("high", "technical_feasibility", "count.go", 3, "Clamp accepts negative counts")

// declineStory: the coder writes count.go and runs the tests; the reviewer
// asks it to reject negative counts; the coder declines with a reason and
// changes nothing; the reviewer, shown the reply under its finding,
// accepts it.
func declineStory() modelserver.Scenario {
	return modelserver.Scenario{
		Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
			{Text: "Writing count.go.", Tools: []modelserver.ToolCall{write("w1", "count.go", countSource)}},
			{Tools: []modelserver.ToolCall{bash("t1", "go test ./...")}},
			{Text: "Added Clamp."},
			{Text: "I did not change count.go: negative counts are valid in pflag.\n\n" + negative.ID + ": declined - negative counts are valid in pflag"},
		}}},
		Gemini: reviewRounds(
			answer("request_changes", nil, negative),
			answer("approve", []string{negative.ID}),
		),
	}
}

func TestACoderThatDeclinesWithAReasonTheReviewerAcceptsIsApproved(t *testing.T) {
	r := runTeam(t, observability.ModePingpong, declineStory(), nil)
	require.NoError(t, r.err)
	assert.Equal(t, observability.VerdictApproved, r.rec.Verdict)

	// The record shows the exchange: the finding, the coder's reply to it
	// and its messages, and the finding resolved by the next review.
	assert.Equal(t, []observability.CoderReply{{Iteration: 2, FindingID: negative.ID, Action: observability.CoderDeclined,
		Reason: "negative counts are valid in pflag"}}, r.rec.CoderReplies)
	require.Len(t, r.rec.CoderMessages, 2)
	assert.Equal(t, 1, r.rec.CoderMessages[0].Iteration)
	assert.Contains(t, r.rec.CoderMessages[0].Text, "Added Clamp.")
	assert.Equal(t, 2, r.rec.CoderMessages[1].Iteration)
	assert.Contains(t, r.rec.CoderMessages[1].Text, "I did not change count.go")
	require.Len(t, r.rec.ReviewFeedback, 2)
	assert.Equal(t, []string{negative.ID}, r.rec.ReviewFeedback[1].Resolved)
	assert.Equal(t, observability.FindingResolved, r.rec.ReviewFeedback[0].Findings[0].Status)

	// The reviewer was told what it can use: the worktree, the coder's
	// tests, and in round 2 the reply under the open finding.
	ps := r.reviewerPrompts()
	require.Len(t, ps, 2)
	assert.Contains(t, ps[0], "Your working directory is the coder's git worktree with the change applied")
	assert.Contains(t, ps[0], "<<<UNTRUSTED DATA: coder's test run>>>\n$ go test ./...\n")
	assert.Contains(t, ps[0], "<<<UNTRUSTED DATA: coder's message>>>\nAdded Clamp.")
	assert.Contains(t, ps[1], "- "+negative.ID+" [high] technical_feasibility, count.go:3: Clamp accepts negative counts\n  the coder's reply: declined: negative counts are valid in pflag\n")
	assert.NotContains(t, ps[1], "coder's test run", "the fix turn ran no tests")

	// The coder was told its work would be reviewed by another model family.
	var first string
	for _, req := range r.srv.Requests() {
		if req.API == modelserver.APIAnthropic && req.Main {
			first = strings.Join(req.UserTexts(), "\n")
			break
		}
	}
	assert.Contains(t, first, "add the total function")
	assert.Contains(t, first, "a reviewer from another model family")
}

func TestTheRecordsCostCoversTheCoderAndTheReviewers(t *testing.T) {
	r := runTeam(t, observability.ModePingpong, declineStory(), nil)
	require.NoError(t, r.err)
	u := r.rec.Usage
	type who struct {
		role      observability.Role
		iteration int
	}
	var got []who
	var cost float64
	var in, out int64
	var turns int
	for _, a := range u.ByAgent {
		got = append(got, who{a.Role, a.Iteration})
		assert.Greater(t, a.CostUSD, 0.0, "%s in round %d has a cost", a.Role, a.Iteration)
		assert.Greater(t, a.InputTokens, int64(0))
		cost, in, out, turns = cost+a.CostUSD, in+a.InputTokens, out+a.OutputTokens, turns+a.Turns
	}
	assert.Equal(t, []who{{"coder", 1}, {"reviewer", 1}, {"coder", 2}, {"reviewer", 2}}, got)
	assert.InDelta(t, cost, u.CostUSD, 1e-12, "cost_usd is the sum over every agent")
	assert.Equal(t, in, u.InputTokens)
	assert.Equal(t, out, u.OutputTokens)
	assert.Equal(t, turns, u.Turns)
}

func TestMaxCostBoundsTheWholeRunReviewersIncluded(t *testing.T) {
	// One model turn for the coder, one for the reviewer.
	story := func() modelserver.Scenario {
		return modelserver.Scenario{
			Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{{Text: "Nothing to change."}}}},
			Gemini:    reviewRounds(answer("request_changes", nil, negative)),
		}
	}
	// Measure the coder's turn alone as the relay prices it (every
	// request, the CLI's side requests too), and a review as the reviewer's
	// CLI counts it (the relay sees at least that), under budgets that stop
	// nothing; then give the run a budget the coder's turn fits in but the
	// review uses up: the fix turn must not start.
	solo := runSolo(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{{Text: "Nothing to change."}}}}}, "add the total function", func(c *config.Config) { c.Spawn.MaxCostUSD = 1 })
	require.NoError(t, solo.err)
	coder := solo.rec.Usage.RelayedCostUSD
	require.GreaterOrEqual(t, coder, solo.rec.Usage.CostUSD, "the relay sees all the CLI says it spent")
	measured := runTeam(t, observability.ModeSequential, story(), func(c *config.Config) {
		c.Spawn.MaxCostUSD = 1
		c.Team.MaxIterations = 1
	})
	require.GreaterOrEqual(t, len(measured.rec.Usage.ByAgent), 2)
	reviewer := measured.rec.Usage.ByAgent[1].CostUSD
	t.Logf("the coder's turn at the relay $%g (its CLI says $%g), a review $%g", coder, solo.rec.Usage.CostUSD, reviewer)
	require.Greater(t, reviewer, 0.0)

	budget := coder + reviewer/2
	r := runTeam(t, observability.ModeSequential, story(), func(c *config.Config) { c.Spawn.MaxCostUSD = budget })
	require.Error(t, r.err)
	assert.Equal(t, fault.KindBudget, KindOf(r.err), "%v", r.err)
	assert.Contains(t, r.err.Error(), "max_cost_usd")
	assert.GreaterOrEqual(t, r.rec.Usage.RelayedCostUSD, budget, "the run spent its budget")
	for _, cl := range r.rec.CommandLines {
		assert.Less(t, cl.Iteration, 2, "no fix turn was started: %v", cl.Argv)
	}
}
