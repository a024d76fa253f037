package watcher

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// toolTimeoutRun runs the real claude under the watcher on one scripted
// Bash call, command, and the turn's closing text, with the tool timeout
// toolTimeout; it returns the outcome, the tool result the model saw and
// the transcript.
func toolTimeoutRun(t *testing.T, command string, toolTimeout time.Duration, closing string) (Outcome, modelserver.ToolResultSeen, string) {
	t.Helper()
	claude := testenv.Claude(t)
	srv, err := modelserver.Start(modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{bashCall("b1", command)}},
		{Text: closing},
	}}}})
	require.NoError(t, err)
	t.Cleanup(func() {
		srv.Close()
		assert.NoError(t, srv.Verify(), "every scripted turn was served")
	})
	var transcript bytes.Buffer
	c := &runners.Claude{Bin: claude, AllowedTools: []string{"Bash(echo:*)", "Bash(sleep:*)"}}
	out, err := Run(context.Background(), c, runners.Turn{Prompt: "run the test suite", Dir: testenv.Repo(t)}, Options{
		Env:          testenv.Env(t, srv.ClaudeEnv()...),
		Transcript:   &transcript,
		IdleTimeout:  20 * time.Second,
		ToolTimeout:  toolTimeout,
		TotalTimeout: toolTimeout + 3*time.Minute,
		Grace:        time.Second,
	})
	require.NoError(t, err)
	var seen modelserver.ToolResultSeen
	for _, req := range srv.Requests() {
		for _, tr := range req.ToolResults() {
			if tr.ID == "b1" {
				seen = tr
			}
		}
	}
	require.Equal(t, "b1", seen.ID, "the model saw the command's result; transcript:\n%s", transcript.String())
	return out, seen, transcript.String()
}

// claude's Bash tool gives a command 2 minutes by default and then moves it
// to the background, where the coder no longer waits for it. Under a tool
// timeout of 4 minutes, a command of 130 seconds (a slow test suite) runs
// in the foreground to its end: the coder sees its output before it
// answers, and the turn has one result.
func TestACommandLongerThanClaudesOwnLimitFinishesWithinTheToolTimeout(t *testing.T) {
	t.Parallel()
	start := time.Now()
	out, seen, transcript := toolTimeoutRun(t, "echo started && sleep 130 && echo finished after 130s", 4*time.Minute, "The suite passed.")
	assert.GreaterOrEqual(t, time.Since(start), 130*time.Second)

	// # the command ran to its end, and the coder saw what it printed
	assert.False(t, seen.IsError, seen.Content)
	assert.Equal(t, "started\nfinished after 130s", seen.Content)
	assert.NotContains(t, transcript, "moved to the background")

	// # the coder answered after that, once; nothing was stopped
	assert.Empty(t, out.Stopped)
	assert.Equal(t, 0, out.ExitCode)
	require.NotNil(t, out.Result)
	assert.False(t, out.Result.IsError)
	assert.Equal(t, "The suite passed.", out.Result.Text)
	assert.Equal(t, 1, strings.Count(transcript, `"type":"result"`), "one turn, one result line")
}

// A command that reaches the tool timeout is stopped by claude, which tells
// the coder; the coder goes on, and the watcher stops nothing (claude is
// given the time to report the stop before the watcher would stop it).
func TestACommandPastTheToolTimeoutIsStoppedAndTheCoderGoesOn(t *testing.T) {
	t.Parallel()
	const marker = "sleep 3172"
	testenv.KillAtCleanup(t, containing(marker))
	start := time.Now()
	out, seen, transcript := toolTimeoutRun(t, "echo started && "+marker, 3*time.Second, "The suite hangs; I stopped it.")
	assert.Less(t, time.Since(start), time.Minute)

	assert.True(t, seen.IsError)
	assert.Contains(t, seen.Content, "Command timed out after 3s")
	assert.NotContains(t, transcript, "moved to the background")
	assert.Empty(t, testenv.Processes(t, func(c string) bool { return strings.HasPrefix(c, marker) }), "the command is gone")

	assert.Empty(t, out.Stopped, "claude stopped the command, not the watcher the coder")
	require.NotNil(t, out.Result)
	assert.False(t, out.Result.IsError)
	assert.Equal(t, "The suite hangs; I stopped it.", out.Result.Text)
}
