package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// TestMain lets the test binary stand in for the spawn binary, so a test can
// signal a real spawn process.
func TestMain(m *testing.M) {
	if os.Getenv("SPAWN_TEST_BE_SPAWN") == "1" {
		os.Exit(Main(os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestInterruptStopsTheAgentKeepsTheWorkAndExits130(t *testing.T) {
	for _, tt := range []struct {
		name    string
		signals int
	}{
		{"one Ctrl-C: graceful", 1},
		{"two Ctrl-C: at once", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			claude := testenv.Claude(t)
			srv, err := modelserver.Start(modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
				{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/draft.txt", "content": "work in progress\n"}}}},
				{Hang: true},
			}}}})
			require.NoError(t, err)
			defer srv.Close()
			repo := testenv.Repo(t)

			cmd := exec.Command(os.Args[0], "run", "--mode", "solo", "--repo", repo, "--json", "--branch", "spawn/interrupted", "write a draft")
			cmd.Env = testenv.Env(t, append(srv.ClaudeEnv(), "SPAWN_CLAUDE_COMMAND="+claude, "SPAWN_TEST_BE_SPAWN=1")...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Process.Kill() }()

			// Wait until the coder has written its file and waits on the model.
			require.Eventually(t, func() bool {
				for _, req := range srv.Requests() {
					for _, tr := range req.ToolResults() {
						if tr.ID == "w1" {
							return true
						}
					}
				}
				return false
			}, time.Minute, 50*time.Millisecond)

			start := time.Now()
			for range tt.signals {
				require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
				time.Sleep(50 * time.Millisecond)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("spawn did not exit after SIGINT; stderr:\n%s", stderr.String())
			}
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "stderr: %s", stderr.String())
			assert.Equal(t, 130, exit.ExitCode())
			assert.Less(t, time.Since(start), 15*time.Second)
			assert.Contains(t, stderr.String(), "interrupted")

			var rec struct {
				Status       string `json:"status"`
				ExitCode     int    `json:"exit_code"`
				CommandLines []struct {
					Pid int `json:"pid"`
				} `json:"command_lines"`
				Error struct {
					Kind string `json:"kind"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rec), stdout.String())
			assert.Equal(t, "interrupted", rec.Status)
			assert.Equal(t, 130, rec.ExitCode)
			assert.Equal(t, "interrupted", rec.Error.Kind)
			assert.Equal(t, "work in progress", testenv.Git(t, repo, "show", "spawn/interrupted:draft.txt"), "the work is committed")
			require.Len(t, rec.CommandLines, 1)
			testenv.AssertGroupGone(t, rec.CommandLines[0].Pid, "no orphan survives")
		})
	}
}
