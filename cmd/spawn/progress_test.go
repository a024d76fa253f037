package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/infinite-improbability-drive/spawn/watcher"
)

func TestProgressLineOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressLine(&buf, true)
	p.Progress("coder", watcher.Progress{Kind: watcher.ProgressTool, Tool: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`), Turns: 2, Files: 1, CostUSD: 0.0123})
	p.Progress("coder", watcher.Progress{Kind: watcher.ProgressEscalation, Rule: "Bash(make:*)", Turns: 3, Files: 1})
	p.Close()
	out := buf.String()
	assert.Contains(t, out, "coder    tool:   Bash go test ./...\n")
	assert.Contains(t, out, "granted Bash(make:*); resuming the session")
	assert.Contains(t, out, "spawn: coder · turn 2 · 1 files changed · $0.0123")
	assert.True(t, strings.HasSuffix(out, "\r\033[K"), "the status line is erased at the end")
}

func TestProgressWithoutATerminalHasNoStatusLine(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressLine(&buf, false)
	p.Progress("coder", watcher.Progress{Kind: watcher.ProgressQuestion, Detail: "Should I?", Confidence: 0.9})
	p.Close()
	assert.Equal(t, "  coder    asked:  Should I? (confidence 0.90)\n", buf.String())
}
