package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	p.Flush()
	assert.Contains(t, buf.String(), "spawn: reviewer · turn 1 · 0 files changed · $0.0215")
	buf.Reset()
	p.Event(observability.Event{Kind: observability.EventAgent, Role: observability.RoleReviewer, RunCostUSD: 0.021,
		Agent: &observability.Progress{Kind: observability.ProgressTool, Tool: "glob", Turns: 1, CostUSD: 0.001}})
	p.Close()
	assert.Contains(t, buf.String(), "$0.0215", "the running total does not go down")
}

// A person watching a run sees each line within milliseconds, without
// waiting for the run's end, and every line of a burst, in order.
func TestTheNarrationShowsEachLineSoonAndInOrder(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	p := newProgressLine(lockedWriter{&mu, &buf}, false, true)
	p.Event(agentEvent(observability.Progress{Kind: observability.ProgressTool, Tool: "Bash", Input: []byte(`{"command":"go test ./..."}`)}))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(buf.String(), "coder    tool:   Bash go test ./...\n")
	}, 5*time.Second, time.Millisecond)
	for i := range 1000 {
		p.Event(agentEvent(observability.Progress{Kind: observability.ProgressText, Detail: fmt.Sprintf("line %d", i)}))
	}
	p.Close()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 1001)
	for i, l := range lines[1:] {
		require.Equal(t, fmt.Sprintf("  coder    says:   line %d", i), l)
	}
}

// lockedWriter is a writer that a test reads while another goroutine
// writes to it.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestAgentLineIsFmts: a line of what an agent did is fmt's "  %-8s %s\n"
// of its role and text.
func TestAgentLineIsFmts(t *testing.T) {
	for _, role := range []string{"", "coder", "reviewer", "a-long-role", "rôle"} {
		var p progressLine
		p.agentLine(role, "tool:   Bash go test")
		assert.Equal(t, fmt.Sprintf("  %-8s %s\n", role, "tool:   Bash go test"), p.w.String())
	}
}
