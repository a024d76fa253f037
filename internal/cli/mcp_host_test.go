package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// A real host calls spawn: the real claude CLI, with `spawn mcp` as an MCP
// server, is scripted to start a run, wait for it and read its result; the
// run's coder is another real claude under the same scripted model. The
// host's transcript holds the tool results, and the branch the work.
func TestMCPRealClaudeHostRunsATask(t *testing.T) {
	repo := testenv.Repo(t)
	const hostPrompt = "HOST: hand the notes task to spawn and report its outcome"
	tool := func(id, name string, input map[string]any) modelserver.Turn {
		return modelserver.Turn{Tools: []modelserver.ToolCall{{ID: id, Name: "mcp__spawn__" + name, Input: input}}}
	}
	sc := modelserver.Scenario{Anthropic: append([]modelserver.Script{
		{Match: hostPrompt, Turns: []modelserver.Turn{
			tool("s1", "spawn_start", map[string]any{"task": "write notes for the host", "mode": "solo", "branch": "spawn/hosted"}),
			tool("s2", "spawn_wait", map[string]any{"id": "last", "seconds": 50}),
			tool("s3", "spawn_result", map[string]any{"id": "last"}),
			{Text: "spawn wrote the notes on spawn/hosted."},
		}},
	}, notesScript)}
	env, _ := mcpEnv(t, sc, repo)

	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"spawn": map[string]any{
		"command": os.Args[0], "args": []string{"mcp", "--repo", repo},
		// This test binary is spawn when this is set (see TestMain).
		"env": map[string]string{"SPAWN_TEST_BE_SPAWN": "1"},
	}}})
	require.NoError(t, err)
	cfgPath := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(cfgPath, cfg, 0o644))

	host := exec.Command(testenv.Claude(t), "-p", hostPrompt, "--output-format", "stream-json", "--verbose",
		"--mcp-config", cfgPath, "--strict-mcp-config",
		"--allowedTools", "mcp__spawn__spawn_start,mcp__spawn__spawn_wait,mcp__spawn__spawn_result")
	host.Dir, host.Env = repo, env
	var stdout, stderr bytes.Buffer
	host.Stdout, host.Stderr = &stdout, &stderr
	began := time.Now()
	require.NoError(t, host.Run(), "the host claude failed: %s\n%s", stderr.String(), stdout.String())
	t.Logf("the host's session took %v", time.Since(began))

	// The host's transcript: each spawn tool's result, as the host got it.
	results := map[string]string{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Content []struct {
					Type      string          `json:"type"`
					ToolUseID string          `json:"tool_use_id"`
					IsError   bool            `json:"is_error"`
					Content   json.RawMessage `json:"content"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != "user" {
			continue
		}
		for _, c := range ev.Message.Content {
			if c.Type == "tool_result" {
				assert.False(t, c.IsError, "%s: %s", c.ToolUseID, c.Content)
				results[c.ToolUseID] = string(c.Content)
			}
		}
	}
	require.Len(t, results, 3, "the host got three tool results:\n%s", stdout.String())
	assert.Regexp(t, `\\"id\\":\\"\d{8}-\d{6}-[0-9a-f]{4}\\"`, results["s1"])
	assert.Contains(t, results["s2"], `\"done\":true`)
	assert.Contains(t, results["s3"], `\"status\":\"succeeded\"`)
	assert.Contains(t, results["s3"], `\"branch\":\"spawn/hosted\"`)
	assert.Contains(t, stdout.String(), "spawn wrote the notes on spawn/hosted.")
	assert.Equal(t, "notes", testenv.Git(t, repo, "show", "spawn/hosted:notes.txt"))
}
