package spawn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
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

func TestAToolCallSilentPastTheToolTimeoutIsStoppedWithHowToRaiseIt(t *testing.T) {
	sc := turns(modelserver.Turn{Tools: []modelserver.ToolCall{bash("b1", "sleep 60")}})
	start := time.Now()
	r := runSolo(t, sc, "run the endless suite", func(c *config.Config) {
		allowSleep(c)
		c.Spawn.IdleTimeout = time.Minute
		c.Spawn.ToolTimeout = 3 * time.Second
	})
	require.Error(t, r.err)
	assert.Less(t, time.Since(start), 40*time.Second, "stopped by the tool timeout, not the idle one")
	assert.Equal(t, KindTimeout, KindOf(r.err))
	assert.Contains(t, r.err.Error(), `"sleep 60"`, "the message names the command")
	assert.Contains(t, r.err.Error(), "printed nothing for 3s (the tool timeout)", "and the value")
	assert.Contains(t, r.err.Error(), "raise it with --tool-timeout, tool_timeout in [spawn] of spawn-team.toml or SPAWN_TOOL_TIMEOUT", "and how to raise it")
	assertGone(t, r.rec)
}
