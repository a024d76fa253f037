package watcher

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

func TestAReviewersCostIsEstimatedFromItsReportedTokens(t *testing.T) {
	// gemini reports tokens in its result and no price, and no usage on the way.
	s := &Session{}
	tr := newTracker(s, Policy{}, map[string]bool{}, func(observability.Progress) {})
	tr.observe(runners.Event{Kind: runners.KindInit, Init: &runners.Init{Model: "gemini-2.5-pro"}})
	tr.observe(runners.Event{Kind: runners.KindText, Text: "{...}"})
	assert.Zero(t, s.CostUSD)
	tr.observe(runners.Event{Kind: runners.KindResult, Result: &runners.Result{Usage: runners.Usage{InputTokens: 1_000_000, OutputTokens: 100_000}}})
	assert.InDelta(t, 2.25, s.CostUSD, 1e-9)
}

// The session's Tests is the last test run's command and the end of its
// output, made when the process finishes.
func TestTheCodersLastTestRunIsKept(t *testing.T) {
	s := &Session{}
	tr := newTracker(s, Policy{}, map[string]bool{}, func(observability.Progress) {})
	bash := func(id, cmd string) {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		tr.observe(runners.Event{Kind: runners.KindToolUse, ToolUse: &runners.ToolUse{ID: id, Name: "Bash", Input: in, Kind: runners.ToolShell}})
	}
	result := func(id, out string, isErr bool) {
		tr.observe(runners.Event{Kind: runners.KindToolResult, ToolResult: &runners.ToolResult{ToolUseID: id, Content: runners.OutputOf(out), IsError: isErr}})
	}
	bash("1", "ls -la")
	result("1", "total 0", false)
	tr.finish(nil)
	assert.Empty(t, s.Tests, "ls is not a test run")
	bash("2", "cd pkg && go test ./... -run TestX")
	result("2", "--- FAIL: TestX\nFAIL", true)
	tr.finish(nil)
	assert.Equal(t, "$ cd pkg && go test ./... -run TestX\n--- FAIL: TestX\nFAIL\n", s.Tests, "a failing run is a result too")
	bash("3", "npm test")
	long := ""
	for i := 0; i < 100; i++ {
		long += "line\n"
	}
	result("3", long+"all passed", false)
	tr.finish(nil)
	assert.Contains(t, s.Tests, "$ npm test\n[...]\n")
	assert.Contains(t, s.Tests, "all passed\n")
	assert.LessOrEqual(t, len(s.Tests), maxTestBytes+100)
}

// codexThread plays a codex thread: each process prints the next of its
// recorded streams, read by codex's parser.
type codexThread struct {
	runners.Codex
	streams []string
	n       int
}

func (a *codexThread) Command(runners.Turn) (runners.Command, error) {
	a.n++
	return runners.Command{Path: "cat", Args: []string{a.streams[a.n-1]}}, nil
}

// codexStream writes a codex process's stream in thread that says text
// and reports the thread's running total.
func codexStream(t *testing.T, thread, text string, total runners.Usage) string {
	t.Helper()
	lines := fmt.Sprintf(`{"type":"thread.started","thread_id":%q}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":%q}}
{"type":"turn.completed","usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d}}
`, thread, text, total.InputTokens, total.CachedTokens, total.OutputTokens)
	path := filepath.Join(t.TempDir(), "stream.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(lines), 0o600))
	return path
}

// Codex reports its thread's running total. A session resumed in a
// thread that had used 50 input tokens, whose question is answered in a
// second process, is charged each process's own turn: its tokens, its
// cost, and a budget its own turns stay under does not stop it, though
// the totals codex reported would exceed it. The session ends with the
// thread's total, for a later resume to count from, which a failed turn
// (no total) leaves as it was.
func TestAResumedCodexThreadIsChargedItsOwnTurns(t *testing.T) {
	const model = "gpt-5.5"
	before := runners.Usage{InputTokens: 50, CachedTokens: 10, OutputTokens: 25}
	totals := []runners.Usage{{InputTokens: 90, CachedTokens: 18, OutputTokens: 45}, {InputTokens: 120, CachedTokens: 24, OutputTokens: 60}}
	own := []runners.Usage{{InputTokens: 40, CachedTokens: 8, OutputTokens: 20}, {InputTokens: 30, CachedTokens: 6, OutputTokens: 15}}
	agent := &codexThread{Codex: runners.Codex{Model: model}, streams: []string{
		codexStream(t, "th-1", "Should I drop the legacy table?", totals[0]),
		codexStream(t, "th-1", "Done. I kept it.", totals[1]),
	}}
	q, err := NewQuestionDetector(nil)
	require.NoError(t, err)
	ownCost := runners.EstimateCost(model, own[0]) + runners.EstimateCost(model, own[1])
	reported := runners.EstimateCost(model, totals[0]) + runners.EstimateCost(model, totals[1])
	budget := 2 * ownCost
	require.Less(t, budget, reported, "the totals codex reported would exceed the budget")

	s, err := Supervise(context.Background(), agent, runners.Turn{Prompt: "go on", Resume: "th-1"},
		Policy{Questions: q, MinConfidence: 0.6, MaxAutoAnswers: 1, MaxCostUSD: budget}, Hooks{Total: before})
	require.NoError(t, err)
	assert.Empty(t, s.Stopped, "the budget holds")
	require.Len(t, s.Processes, 2, "the question was answered in the thread")
	for i, p := range s.Processes {
		assert.Equal(t, own[i], p.Usage, "process %d's own tokens", i+1)
	}
	assert.InDelta(t, ownCost, s.CostUSD, 1e-12)
	assert.Equal(t, totals[1], s.Total)

	// A turn that failed reported no total: the thread keeps its own.
	failed := filepath.Join(t.TempDir(), "failed.jsonl")
	require.NoError(t, os.WriteFile(failed, []byte(`{"type":"thread.started","thread_id":"th-1"}
{"type":"turn.failed","error":{"message":"unexpected status 500"}}
`), 0o600))
	agent = &codexThread{Codex: runners.Codex{Model: model}, streams: []string{failed}}
	s, err = Supervise(context.Background(), agent, runners.Turn{Prompt: "go on", Resume: "th-1"}, Policy{}, Hooks{Total: totals[1]})
	require.NoError(t, err)
	assert.Zero(t, s.Processes[0].Usage)
	assert.Equal(t, totals[1], s.Total, "what the thread's next resume counts from")

	// A thread that starts over (codex began a new one) is all its own.
	agent = &codexThread{Codex: runners.Codex{Model: model}, streams: []string{codexStream(t, "th-2", "Done.", totals[0])}}
	s, err = Supervise(context.Background(), agent, runners.Turn{Prompt: "go on", Resume: "th-1"}, Policy{}, Hooks{Total: totals[1]})
	require.NoError(t, err)
	assert.Equal(t, totals[0], s.Processes[0].Usage)
	assert.InDelta(t, runners.EstimateCost(model, totals[0]), s.CostUSD, 1e-12)
	assert.Equal(t, totals[0], s.Total)
}
