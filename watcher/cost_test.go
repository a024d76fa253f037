package watcher

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

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
		tr.observe(runners.Event{Kind: runners.KindToolResult, ToolResult: &runners.ToolResult{ToolUseID: id, Content: out, IsError: isErr}})
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
