package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// `spawn demo` is what `make demo` shows a new user: offline, the real
// claude fixes the bug, the real gemini asks for a test with negative
// numbers, claude adds it in its resumed session, gemini approves.
func TestDemoFixesTheBugAndIsApproved(t *testing.T) {
	claude, gemini := testenv.Claude(t), testenv.Gemini(t)
	dir := t.TempDir()
	r := spawnMain(t, testenv.Env(t), "", "demo", "--claude", claude, "--gemini", gemini, "--dir", dir, "--json")
	require.Equal(t, 0, r.code, r.stderr)

	var rec struct {
		Status         string            `json:"status"`
		Verdict        string            `json:"verdict"`
		ReviewFeedback []json.RawMessage `json:"review_feedback"`
		Branch         string            `json:"branch"`
		Sandbox        string            `json:"sandbox_path"`
		Commits        []struct {
			Message string `json:"message"`
		} `json:"commits"`
		CommandLines []struct {
			Argv []string `json:"argv"`
		} `json:"command_lines"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rec))
	assert.Equal(t, "succeeded", rec.Status)
	assert.Equal(t, "approved", rec.Verdict)
	assert.Len(t, rec.ReviewFeedback, 2)
	require.Len(t, rec.Commits, 2)
	assert.Equal(t, "spawn: Fix the failing test in calc.go", rec.Commits[0].Message)
	assert.Equal(t, "spawn: address review round 1: Fix the failing test in calc.go", rec.Commits[1].Message)
	repo := filepath.Join(dir, "calc")
	assert.Contains(t, testenv.Git(t, repo, "show", rec.Branch+":calc.go"), "return a + b")
	assert.Contains(t, testenv.Git(t, repo, "show", rec.Branch+":calc_test.go"), "func TestAddNegative")
	assert.Contains(t, testenv.Git(t, repo, "show", "main:calc.go"), "return a - b", "the user's branch keeps the bug")
	require.Len(t, rec.CommandLines, 4, "coder, reviewer, coder resumed, reviewer resumed")
	assert.Equal(t, claude, rec.CommandLines[0].Argv[0])
	assert.Equal(t, gemini, rec.CommandLines[1].Argv[0])
	assert.False(t, strings.Contains(r.stdout, "test-key"), "no API key in the output")
}
