package spawn

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

func allowSleep(c *config.Config) {
	c.Permissions.AllowedTools = append(c.Permissions.AllowedTools, "Bash(sleep:*)")
}

func TestATestSuiteLongerThanTheIdleTimeoutIsNotSilence(t *testing.T) {
	sc := turns(
		modelserver.Turn{Tools: []modelserver.ToolCall{bash("b1", "sleep 8")}},
		modelserver.Turn{Text: "The suite passed."},
	)
	r := runSolo(t, sc, "run the slow suite", func(c *config.Config) {
		allowSleep(c)
		c.Spawn.IdleTimeout = 3 * time.Second
		c.Spawn.ToolTimeout = time.Minute
	})
	require.NoError(t, r.err, "a running tool call is under tool_timeout, not idle_timeout")
	require.NoError(t, r.srv.Verify())
}

// A CLI that does not bound its own tool calls (codex) and whose command
// stays silent past tool_timeout is stopped by the watcher, told apart with
// the command and how to raise tool_timeout.
func TestAToolCallSilentPastTheToolTimeoutIsStoppedWithHowToRaiseIt(t *testing.T) {
	sc := modelserver.Scenario{OpenAI: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "c1", Name: "exec_command", Input: map[string]any{"cmd": "sleep 60"}}}},
	}}}}
	start := time.Now()
	r := runSeated(t, observability.ModeSolo, "codex", nil, sc, func(c *config.Config) {
		c.Spawn.IdleTimeout = time.Minute
		c.Spawn.ToolTimeout = 3 * time.Second
	})
	require.Error(t, r.err)
	assert.Less(t, time.Since(start), 40*time.Second, "stopped by the tool timeout, not the idle one")
	assert.Equal(t, fault.KindTimeout, KindOf(r.err))
	assert.Contains(t, r.err.Error(), "sleep 60", "the message names the command")
	assert.Contains(t, r.err.Error(), "printed nothing for 3s (the tool timeout)", "and the value")
	assert.Contains(t, r.err.Error(), "raise it with --tool-timeout, tool_timeout in [spawn] of spawn-team.toml or SPAWN_TOOL_TIMEOUT", "and how to raise it")
	assertGone(t, r.rec)
}

// claude is given tool_timeout as its Bash tool's timeout: a command still
// running then is stopped by claude, which tells the coder, and the coder
// goes on; the run ends as the coder ends it.
func TestAClaudeCommandPastTheToolTimeoutIsStoppedAndTheCoderIsTold(t *testing.T) {
	const marker = "sleep 61"
	sc := turns(
		modelserver.Turn{Tools: []modelserver.ToolCall{bash("b1", marker)}},
		modelserver.Turn{Text: "The suite hangs; I stopped it."},
	)
	start := time.Now()
	r := runSolo(t, sc, "run the endless suite", func(c *config.Config) {
		allowSleep(c)
		c.Spawn.IdleTimeout = time.Minute
		c.Spawn.ToolTimeout = 3 * time.Second
	})
	require.NoError(t, r.err)
	require.NoError(t, r.srv.Verify())
	assert.Less(t, time.Since(start), 40*time.Second, "stopped at the tool timeout")
	var told string
	for _, req := range r.srv.Requests() {
		for _, tr := range req.ToolResults() {
			if tr.ID == "b1" {
				told = tr.Content
			}
		}
	}
	assert.Contains(t, told, "Command timed out after 3s", "the coder was told")
	assert.Empty(t, testenv.Processes(t, func(c string) bool { return strings.HasPrefix(c, marker) }), "the command is gone")
	assertGone(t, r.rec)
}
