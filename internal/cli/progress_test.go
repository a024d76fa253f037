package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/infinite-improbability-drive/spawn/observability"
)

func TestProgressLineOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressLine(&buf, true, true)
	p.Event(agentEvent(observability.Progress{Kind: observability.ProgressTool, Tool: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`), Turns: 2, Files: 1, CostUSD: 0.0123}))
	p.Event(agentEvent(observability.Progress{Kind: observability.ProgressEscalation, Rule: "Bash(make:*)", Turns: 3, Files: 1}))
	p.Close()
	out := buf.String()
	assert.Contains(t, out, "coder    tool:   Bash go test ./...\n")
	assert.Contains(t, out, "granted Bash(make:*); resuming the session")
	assert.Contains(t, out, "spawn: coder · turn 2 · 1 files changed · $0.0123")
	assert.True(t, strings.HasSuffix(out, "\r\033[K"), "the status line is erased at the end")
}

func TestProgressWithoutATerminalHasNoStatusLine(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressLine(&buf, false, true)
	p.Event(observability.Event{Kind: observability.EventNote, Text: "the sandbox starts without your uncommitted changes"})
	p.Event(agentEvent(observability.Progress{Kind: observability.ProgressQuestion, Detail: "Should I?", Confidence: 0.9}))
	p.Close()
	assert.Equal(t, "note: the sandbox starts without your uncommitted changes\n  coder    asked:  Should I? (confidence 0.90)\n", buf.String())
}

func TestNotesAreShownEvenWithoutNarration(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressLine(&buf, true, false)
	p.Event(observability.Event{Kind: observability.EventNote, Text: "heads up"})
	p.Event(agentEvent(observability.Progress{Kind: observability.ProgressText, Detail: "hidden"}))
	p.Close()
	assert.Equal(t, "note: heads up\n", buf.String())
}

func agentEvent(p observability.Progress) observability.Event {
	return observability.Event{Kind: observability.EventAgent, Role: observability.RoleCoder, Agent: &p}
}

func TestStatusLineShowsTheRunsRunningTotalThatNeverGoesDown(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressLine(&buf, true, true)
	p.Event(observability.Event{Kind: observability.EventAgent, Role: observability.RoleCoder, RunCostUSD: 0.02,
		Agent: &observability.Progress{Kind: observability.ProgressText, Detail: "done", Turns: 3, CostUSD: 0.02}})
	// The reviewer's own session starts at $0; the run's total goes on.
	p.Event(observability.Event{Kind: observability.EventAgent, Role: observability.RoleReviewer, RunCostUSD: 0.0215,
		Agent: &observability.Progress{Kind: observability.ProgressTool, Tool: "read_file", Turns: 1, CostUSD: 0.0015}})
	assert.Contains(t, buf.String(), "spawn: reviewer · turn 1 · 0 files changed · $0.0215")
	buf.Reset()
	p.Event(observability.Event{Kind: observability.EventAgent, Role: observability.RoleReviewer, RunCostUSD: 0.021,
		Agent: &observability.Progress{Kind: observability.ProgressTool, Tool: "glob", Turns: 1, CostUSD: 0.001}})
	p.Close()
	assert.Contains(t, buf.String(), "$0.0215", "the running total does not go down")
}
