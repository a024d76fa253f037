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

// `spawn demo` is what `make demo` shows a new user: the real claude fixes
// the bug offline, and the fix is committed on the sandbox branch.
func TestDemoFixesTheBug(t *testing.T) {
	claude := testenv.Claude(t)
	dir := t.TempDir()
	r := spawnMain(t, testenv.Env(t), "", "demo", "--claude", claude, "--dir", dir, "--json")
	require.Equal(t, 0, r.code, r.stderr)

	var rec struct {
		Status  string `json:"status"`
		Branch  string `json:"branch"`
		Sandbox string `json:"sandbox_path"`
		Commits []struct {
			Message string `json:"message"`
		} `json:"commits"`
		CommandLines []struct {
			Argv []string `json:"argv"`
		} `json:"command_lines"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rec))
	assert.Equal(t, "succeeded", rec.Status)
	require.Len(t, rec.Commits, 1)
	assert.Equal(t, "spawn: Fix the failing test in calc.go", rec.Commits[0].Message)
	repo := filepath.Join(dir, "calc")
	assert.Contains(t, testenv.Git(t, repo, "show", rec.Branch+":calc.go"), "return a + b")
	assert.Contains(t, testenv.Git(t, repo, "show", "main:calc.go"), "return a - b", "the user's branch keeps the bug")
	require.Len(t, rec.CommandLines, 1)
	assert.Equal(t, claude, rec.CommandLines[0].Argv[0])
	assert.False(t, strings.Contains(r.stdout, "test-key"), "no API key in the output")
}
