package spawn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/demo"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// reviewRound is what one review round of a pingpong run sent the model.
type reviewRound struct {
	fresh bool
	// prompt and full are the round's prompt bytes and a full re-review's
	// prompt bytes, as the record has them.
	prompt, full int
	// body is the bytes of the round's main request to the reviewer's
	// model API; freshBody is what a fresh full review's request would have
	// been: round 1's request (a fresh full review) with its prompt swapped
	// for a full re-review's prompt of this round, both as JSON-escaped in
	// the body.
	body, freshBody int
	tokens          observability.Tokens
}

// promptRatio is the round's prompt over a full re-review's prompt.
func (r reviewRound) promptRatio() float64 { return float64(r.prompt) / float64(r.full) }

// bodyRatio is the round's whole request over a fresh full review's.
func (r reviewRound) bodyRatio() float64 { return float64(r.body) / float64(r.freshBody) }

// bigSource is the coder's first version: a change large enough (about 12
// KB) that the reviewer's instructions are not most of a full review.
func bigSource() string {
	var b strings.Builder
	b.WriteString("package calc\n\n")
	for i := range 300 {
		fmt.Fprintf(&b, "var v%03d = %d // a value the task asks for\n", i, i)
	}
	return b.String()
}

// fiveRoundPingpong is pingpongRounds of a claude coder and a gemini
// reviewer.
func fiveRoundPingpong(tb testing.TB) []reviewRound {
	tb.Helper()
	return pingpongRounds(tb, "claude", "gemini")
}

// pingpongRounds runs a pingpong of five review rounds between the CLIs
// coderCLI and reviewerCLI (of two families, so of two model APIs): the
// coder writes a large file, each review asks for one more small fix and
// resolves the last, the fifth approves. The coder's turns are in the tool
// shapes of its CLI. It returns the rounds as the reviewer's model saw
// them.
func pingpongRounds(tb testing.TB, coderCLI, reviewerCLI string) []reviewRound {
	tb.Helper()
	const rounds = 5
	reg := runners.NewRegistry()
	ca, err := reg.Lookup(coderCLI)
	require.NoError(tb, err)
	ra, err := reg.Lookup(reviewerCLI)
	require.NoError(tb, err)
	coderAPI, reviewerAPI := ca.Provider().Route, ra.Provider().Route
	require.NotEqual(tb, coderAPI, reviewerAPI, "the scripts tell the seats apart by their model API")
	tools, err := demo.Tools(coderAPI)
	require.NoError(tb, err)

	source := bigSource()
	coder := modelserver.Script{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{tools.Write("w1", "calc.go", source)}},
		{Text: "Wrote calc.go."},
	}}
	bugs := make([]string, rounds-1)
	var answers []modelserver.Turn
	for i := range rounds - 1 {
		bug := finding("high", "technical_feasibility", "calc.go", 3+i, fmt.Sprintf("v%03d has the wrong sign", i))
		bugs[i] = bug.ID
		var resolved []string
		if i > 0 {
			resolved = []string{bugs[i-1]}
		}
		answers = append(answers, modelserver.Turn{Text: answer("request_changes", resolved, bug)})
		old := fmt.Sprintf("var v%03d = %d // a value the task asks for\n", i, i)
		new := fmt.Sprintf("var v%03d = -%d // a value the task asks for\n", i, i)
		source = strings.Replace(source, old, new, 1)
		coder.Turns = append(coder.Turns,
			modelserver.Turn{Tools: []modelserver.ToolCall{tools.Read(fmt.Sprintf("r%d", i), "calc.go")}},
			modelserver.Turn{Tools: []modelserver.ToolCall{tools.Edit(fmt.Sprintf("e%d", i), "calc.go", old, new, source)}},
			modelserver.Turn{Text: fmt.Sprintf("%s: fixed - negated v%03d", bugs[i], i)},
		)
	}
	answers = append(answers, modelserver.Turn{Text: answer("approve", []string{bugs[rounds-2]})})
	// One script per round, the latest first: a resumed request holds the
	// prompts of the earlier rounds too, and a fresh seat's history is empty.
	var reviewer []modelserver.Script
	for k := rounds; k >= 1; k-- {
		reviewer = append(reviewer, modelserver.Script{Match: fmt.Sprintf("round %d", k), Turns: answers[k-1 : k]})
	}
	var sc modelserver.Scenario
	*sc.Scripts(coderAPI) = []modelserver.Script{coder}
	*sc.Scripts(reviewerAPI) = reviewer
	require.NoError(tb, sc.Validate())

	srv := testenv.ModelServer(tb, sc)
	senv, err := srv.Env(tb.TempDir())
	require.NoError(tb, err)
	cfg := testConfig()
	cfg.Team.Mode = observability.ModePingpong
	cfg.Team.MaxIterations = rounds
	cfg.Team.Coder, cfg.Team.Reviewers = coderCLI, []string{reviewerCLI}
	for name, bin := range map[string]string{coderCLI: agentBin(tb, coderCLI), reviewerCLI: agentBin(tb, reviewerCLI)} {
		cfg.Runners.Edit(name, func(s *runners.Settings) { s.Command, s.MaxRetries = bin, 0 })
	}
	cfg.Spawn.IdleTimeout = time.Minute
	cfg.Spawn.TotalTimeout = 3 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rec, err := Run(ctx, Options{Task: "add the values", RepoDir: testenv.Repo(tb), Config: cfg, Env: testenv.Env(tb, senv...)}, nil)
	require.NoError(tb, err)
	require.Equal(tb, observability.VerdictApproved, rec.Verdict, "notes %v; review %+v", rec.Notes, rec.ReviewFeedback)
	require.NoError(tb, srv.Verify(), "every scripted turn was served")
	require.Len(tb, rec.ReviewFeedback, rounds)

	var bodies []int
	var first string // round 1's prompt: a fresh full review
	for _, req := range srv.Requests() {
		if req.API != reviewerAPI || !req.Main {
			continue
		}
		if first == "" {
			// The prompt is the request's longest user text: the CLI's
			// own user texts (codex's environment context, claude's
			// reminders) are short beside a full review.
			for _, t := range req.UserTexts() {
				if len(t) > len(first) {
					first = t
				}
			}
			require.NotEmpty(tb, first)
		}
		bodies = append(bodies, len(req.Body))
	}
	require.Len(tb, bodies, rounds, "one main %s request per round", reviewerAPI)
	quoted, err := json.Marshal(first)
	require.NoError(tb, err)
	escape := float64(len(quoted)) / float64(len(first)) // JSON escaping of a prompt in the body
	out := make([]reviewRound, rounds)
	for i, fb := range rec.ReviewFeedback {
		out[i] = reviewRound{fresh: fb.Fresh, prompt: fb.PromptBytes, full: fb.FullPromptBytes, body: bodies[i], tokens: fb.Tokens,
			freshBody: bodies[0] - len(quoted) + int(escape*float64(fb.FullPromptBytes))}
	}
	return out
}

// agentBin is the path of the pinned binary of the CLI name.
func agentBin(tb testing.TB, name string) string {
	tb.Helper()
	switch name {
	case "claude":
		return testenv.Claude(tb)
	case "codex":
		return testenv.Codex(tb)
	case "gemini":
		return testenv.Gemini(tb)
	}
	tb.Fatalf("no pinned binary for the CLI %q", name)
	return ""
}

// TestReReviewsSendLessThanAFreshFullReview: for every reviewer CLI, in a
// five-round pingpong with a coder of another family (each CLI codes once,
// in its own tools), every re-review's new prompt is at most 40% of a full
// re-review's prompt, and its whole request (the session it replays
// included) is no larger than a fresh full review's.
func TestReReviewsSendLessThanAFreshFullReview(t *testing.T) {
	for _, c := range []struct{ reviewer, coder string }{
		{reviewer: "gemini", coder: "claude"},
		{reviewer: "codex", coder: "gemini"},
		{reviewer: "claude", coder: "codex"},
	} {
		t.Run(c.reviewer+"-reviews-"+c.coder, func(t *testing.T) {
			t.Parallel()
			rounds := pingpongRounds(t, c.coder, c.reviewer)
			for i, r := range rounds {
				t.Logf("%s reviews %s, round %d: fresh=%v prompt %d / full %d = %.2f; request %d / fresh full %d = %.2f; tokens %+v",
					c.reviewer, c.coder, i+1, r.fresh, r.prompt, r.full, r.promptRatio(), r.body, r.freshBody, r.bodyRatio(), r.tokens)
				assert.Positive(t, r.tokens.Input, "round %d: the tokens %s reported are recorded", i+1, c.reviewer)
				if i == 0 {
					assert.True(t, r.fresh)
					assert.Equal(t, r.full, r.prompt, "round 1 is a full review")
					continue
				}
				assert.LessOrEqual(t, r.promptRatio(), 0.40, "round %d: the new prompt", i+1)
				assert.LessOrEqual(t, r.bodyRatio(), 1.0, "round %d: the whole request", i+1)
			}
		})
	}
}
