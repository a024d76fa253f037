package spawn

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/demo"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// served are the processes of a run's codex seat in role, in the order
// they started, and the tokens the model server's answers reported to
// each: an answer is the process's that started last before it.
func served(t *testing.T, srv *modelserver.Server, rec *observability.Record, role observability.Role) ([]observability.CommandLine, []observability.Tokens) {
	t.Helper()
	var procs []observability.CommandLine
	for _, c := range rec.CommandLines {
		if c.Role == role && c.LLM == observability.LLMCodex {
			procs = append(procs, c)
		}
	}
	require.NotEmpty(t, procs, "the run has a codex %s", role)
	tokens := make([]observability.Tokens, len(procs))
	for _, req := range srv.Requests() {
		if req.API != modelserver.APIOpenAI {
			continue
		}
		i := -1
		for j, c := range procs {
			if !req.Start.Before(c.StartedAt) {
				i = j
			}
		}
		require.GreaterOrEqual(t, i, 0, "an answer before codex's first process")
		tokens[i].Input += req.Usage.Input
		tokens[i].Cached += req.Usage.Cached
		tokens[i].Output += req.Usage.Output
	}
	return procs, tokens
}

func usageOf(t observability.Tokens) runners.Usage {
	return runners.Usage{InputTokens: t.Input, CachedTokens: t.Cached, OutputTokens: t.Output}
}

// assertOwnUsage checks that the record counts each session of the codex
// seat in role at the tokens the model server answered it with, and that
// the run's totals are its sessions' sums.
func assertOwnUsage(t *testing.T, srv *modelserver.Server, rec *observability.Record, role observability.Role) {
	t.Helper()
	procs, tokens := served(t, srv, rec, role)
	require.GreaterOrEqual(t, len(procs), 2, "the codex %s ran in two rounds", role)
	assert.Equal(t, procs[len(procs)-2].Session, procs[len(procs)-1].Session, "its last round resumed its thread")
	want := map[int]observability.Tokens{}
	var all observability.Tokens
	for i, c := range procs {
		w := want[c.Iteration]
		w.Input, w.Cached, w.Output = w.Input+tokens[i].Input, w.Cached+tokens[i].Cached, w.Output+tokens[i].Output
		want[c.Iteration] = w
		all.Input += tokens[i].Input
		all.Output += tokens[i].Output
		require.Positive(t, tokens[i].Input, "the server answered process %d", i+1)
	}

	// # each session of the seat counts what it was served, not its thread's running total
	var sum observability.AgentUsage
	var codex observability.Tokens
	for _, u := range rec.Usage.ByAgent {
		sum.InputTokens += u.InputTokens
		sum.OutputTokens += u.OutputTokens
		sum.CostUSD += u.CostUSD
		if u.Role != role || u.LLM != observability.LLMCodex {
			continue
		}
		w := want[u.Iteration]
		assert.Equal(t, w.Input, u.InputTokens, "round %d's input tokens", u.Iteration)
		assert.Equal(t, w.Output, u.OutputTokens, "round %d's output tokens", u.Iteration)
		assert.InDelta(t, runners.EstimateCost(procs[0].Model, usageOf(w)), u.CostUSD, 1e-12, "round %d's cost", u.Iteration)
		codex.Input += u.InputTokens
		codex.Output += u.OutputTokens
	}
	assert.Equal(t, all, codex, "the seat used what the server answered it, over the run")

	// # each process keeps its thread's running total, what it was served so far
	thread := map[string]observability.Tokens{}
	for i, c := range procs {
		th := thread[c.Session]
		th.Input, th.Cached, th.Output = th.Input+tokens[i].Input, th.Cached+tokens[i].Cached, th.Output+tokens[i].Output
		thread[c.Session] = th
		if assert.NotNil(t, c.SessionTokens, "process %d", i+1) {
			assert.Equal(t, th, *c.SessionTokens, "process %d's thread total", i+1)
		}
	}

	for _, c := range rec.CommandLines {
		if c.LLM != observability.LLMCodex {
			assert.Nil(t, c.SessionTokens, "%s reports each process's own use", c.LLM)
		}
	}

	// # a reviewer's round counts its own tokens too
	if role == observability.RoleReviewer {
		for _, fb := range rec.ReviewFeedback {
			assert.Equal(t, want[fb.Iteration], fb.Tokens, "round %d's review tokens", fb.Iteration)
		}
	}

	// # the run's totals are its sessions'
	assert.Equal(t, sum.InputTokens, rec.Usage.InputTokens)
	assert.Equal(t, sum.OutputTokens, rec.Usage.OutputTokens)
	assert.InDelta(t, sum.CostUSD, rec.Usage.CostUSD, 1e-12)
}

// Codex reports its thread's running total, so a resumed codex seat's
// turn reports every earlier turn of its thread again. Whether codex
// codes or reviews, a pingpong whose codex seat is resumed records each
// round at the tokens the model answered that round with, and the run's
// tokens and cost are the sums of the rounds'.
func TestAResumedCodexSeatCountsOnlyItsOwnTokens(t *testing.T) {
	t.Run("coder", func(t *testing.T) {
		t.Parallel()
		sc, err := demo.Scenario(api(t, "codex"), api(t, "claude"))
		require.NoError(t, err)
		r := runSeated(t, observability.ModePingpong, "codex", []string{"claude"}, sc, nil)
		require.NoError(t, r.err)
		require.Equal(t, observability.VerdictApproved, r.rec.Verdict)
		assertOwnUsage(t, r.srv, r.rec, observability.RoleCoder)
	})
	t.Run("reviewer", func(t *testing.T) {
		t.Parallel()
		// A change large enough that round 3 resumes the reviewer's
		// session (round 2 starts one with the delta review).
		const rounds = 3
		tools, err := demo.Tools(modelserver.APIAnthropic)
		require.NoError(t, err)
		source := bigSource()
		coder := []modelserver.Turn{{Tools: []modelserver.ToolCall{tools.Write("w1", "calc.go", source)}}, {Text: "Wrote calc.go."}}
		var answers []string
		var last []string
		for i := range rounds - 1 {
			bug := finding("high", "technical_feasibility", "calc.go", 3+i, fmt.Sprintf("v%03d has the wrong sign", i))
			answers = append(answers, answer("request_changes", last, bug))
			last = []string{bug.ID}
			old := fmt.Sprintf("var v%03d = %d // a value the task asks for\n", i, i)
			new := fmt.Sprintf("var v%03d = -%d // a value the task asks for\n", i, i)
			source = strings.Replace(source, old, new, 1)
			coder = append(coder,
				modelserver.Turn{Tools: []modelserver.ToolCall{tools.Edit(fmt.Sprintf("e%d", i), "calc.go", old, new, source)}},
				modelserver.Turn{Text: fmt.Sprintf("%s: fixed - negated v%03d", bug.ID, i)})
		}
		sc := modelserver.Scenario{
			Anthropic: []modelserver.Script{{Turns: coder}},
			OpenAI:    reviewRounds(append(answers, answer("approve", last))...),
		}
		r := runSeated(t, observability.ModePingpong, "claude", []string{"codex"}, sc, func(c *config.Config) { c.Team.MaxIterations = rounds })
		require.NoError(t, r.err)
		require.Equal(t, observability.VerdictApproved, r.rec.Verdict)
		require.Len(t, r.rec.ReviewFeedback, rounds)
		require.False(t, r.rec.ReviewFeedback[rounds-1].Fresh, "round %d resumes the reviewer's session", rounds)
		assertOwnUsage(t, r.srv, r.rec, observability.RoleReviewer)
	})
}

// A run whose codex coder stopped after round 1 is resumed by spawn
// resume in its coder's thread: the fix turn counts from the total its
// thread had in the record, not from nothing.
func TestSpawnResumeCountsACodexCodersTurnFromItsRecordedTotal(t *testing.T) {
	sc, err := demo.Scenario(api(t, "codex"), api(t, "claude"))
	require.NoError(t, err)
	r := runSeated(t, observability.ModePingpong, "codex", []string{"claude"}, sc, func(c *config.Config) { c.Team.MaxIterations = 1 })
	require.Equal(t, observability.VerdictChangesRequested, r.rec.Verdict, "%v", r.err)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rec, err := Resume(ctx, ResumeOptions{Ref: r.rec.ID, Config: r.cfg, RepoDir: r.repo, Env: r.env}, nil)
	require.NoError(t, err)
	require.Equal(t, observability.VerdictApproved, rec.Verdict)
	assertOwnUsage(t, r.srv, rec, observability.RoleCoder)
}

// max_cost_usd bounds what the run spent: a codex coder resumed in its
// thread spends its own turn, not its thread's running total again. A
// budget above what the model answered the run, and below what counting
// each codex turn's running total would add up to, lets the run finish.
func TestABudgetIsNotSpentByACodexThreadsRunningTotal(t *testing.T) {
	const budget = 0.00135
	tools, err := demo.Tools(modelserver.APIOpenAI)
	require.NoError(t, err)
	bug := finding("medium", "general_polish", "notes.txt", 1, "Say what the notes are")
	round1 := []modelserver.Turn{{Tools: []modelserver.ToolCall{tools.Write("w1", "notes.txt", "notes\n")}}}
	for i := range 8 {
		round1 = append(round1, modelserver.Turn{Tools: []modelserver.ToolCall{tools.Shell(fmt.Sprintf("s%d", i), "true")}})
	}
	coder := append(round1,
		modelserver.Turn{Text: "Wrote notes.txt."},
		modelserver.Turn{Tools: []modelserver.ToolCall{tools.Edit("e1", "notes.txt", "notes\n", "notes of the run\n", "notes of the run\n")}},
		modelserver.Turn{Text: bug.ID + ": fixed - the notes say what they are"},
	)
	sc := modelserver.Scenario{
		OpenAI:    []modelserver.Script{{Turns: coder}},
		Anthropic: reviewRounds(answer("request_changes", nil, bug), answer("approve", []string{bug.ID})),
	}
	r := runSeated(t, observability.ModePingpong, "codex", []string{"claude"}, sc, func(c *config.Config) { c.Spawn.MaxCostUSD = budget })
	require.NoError(t, r.err)
	assert.Equal(t, observability.VerdictApproved, r.rec.Verdict)
	require.NoError(t, r.srv.Verify(), "every scripted turn was served")

	// # the budget lies between the run's own use and its running totals'
	procs, tokens := served(t, r.srv, r.rec, observability.RoleCoder)
	var own, running float64
	var thread runners.Usage
	for i, c := range procs {
		u := usageOf(tokens[i])
		thread = runners.Usage{InputTokens: thread.InputTokens + u.InputTokens, OutputTokens: thread.OutputTokens + u.OutputTokens}
		own += runners.EstimateCost(c.Model, u)
		running += runners.EstimateCost(c.Model, thread)
	}
	for _, u := range r.rec.Usage.ByAgent {
		if u.Role == observability.RoleReviewer {
			own += u.CostUSD
			running += u.CostUSD
		}
	}
	assert.Less(t, max(own, r.rec.Usage.RelayedCostUSD), budget)
	assert.Greater(t, running, budget)
	assert.InDelta(t, own, r.rec.Usage.CostUSD, 1e-12)
}
