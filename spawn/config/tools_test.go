package config

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolTimeoutAndTheReviewersToolsAreConfigured(t *testing.T) {
	def := Default()
	assert.Equal(t, 20*time.Minute, def.Spawn.ToolTimeout)
	assert.Equal(t, []string{"list_directory", "read_file", "grep_search", "glob"}, def.Runners.Gemini.AllowedTools,
		"the reviewer gets read-only file tools by default")

	path := writeConfig(t, "[spawn]\ntool_timeout = \"45m\"\n[runners.gemini]\nallowed_tools = [\"read_file\"]\nexcluded_tools = [\"glob\"]\n")
	loaded, err := Load(context.Background(), Source{File: path, RepoDir: t.TempDir(), Env: []string{"SPAWN_TOOL_TIMEOUT=50m"}})
	cfg := loaded.Config
	require.NoError(t, err)
	assert.Equal(t, 50*time.Minute, cfg.Spawn.ToolTimeout, "the environment over the file")
	assert.Equal(t, []string{"read_file"}, cfg.Runners.Gemini.AllowedTools)
	assert.Equal(t, []string{"glob"}, cfg.Runners.Gemini.ExcludedTools)
}

func TestBadToolSettingsNameTheirKey(t *testing.T) {
	tests := []struct {
		name, body, key, msg string
	}{
		{"a tool timeout that is not positive", "[spawn]\ntool_timeout = \"0s\"\n", "spawn.tool_timeout", "must be a positive duration"},
		{"a reviewer offered no tool", "[runners.gemini]\nallowed_tools = []\n", "runners.gemini.allowed_tools", "at least one tool"},
		{"two tools in one string", "[runners.gemini]\nallowed_tools = [\"read_file,glob\"]\n", "runners.gemini.allowed_tools", `"read_file,glob"`},
		{"an empty exclusion", "[runners.gemini]\nexcluded_tools = [\" \"]\n", "runners.gemini.excluded_tools", "not a tool name"},
		{"tools for claude here", "[runners.claude]\nallowed_tools = [\"Read\"]\n", "runners.claude.allowed_tools", "permissions.allowed_tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(context.Background(), Source{File: writeConfig(t, tt.body), RepoDir: t.TempDir()})
			var ce *Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.key, ce.Key)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}
