package spawn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documented spawn-team.toml is loadable and says exactly what the
// built-in defaults are.
func TestDocumentedConfigIsTheDefault(t *testing.T) {
	cfg, err := LoadConfigFile(filepath.Join("..", ConfigFile), Config{})
	require.NoError(t, err)
	assert.Equal(t, DefaultConfig(), cfg)
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), ConfigFile)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

func TestConfigErrorsNameFileKeyAndLine(t *testing.T) {
	tests := []struct {
		name, body string
		line       int
		key, msg   string
	}{
		{
			name: "unknown key",
			body: "[spawn]\nidle_timeout = \"1m\"\nidle_timout = \"2m\"\n",
			line: 3, key: "spawn.idle_timout", msg: "unknown key",
		},
		{
			name: "unknown table",
			body: "[spawn-team]\nmode = \"solo\"\n\n[reviewer]\nmodel = \"x\"\n",
			line: 4, key: "reviewer", msg: "unknown key",
		},
		{
			name: "wrong type",
			body: "[spawn]\nmax_turns = \"ten\"\n",
			line: 2, key: "spawn.max_turns", msg: "incompatible types",
		},
		{
			name: "bad duration",
			body: "[spawn]\n\nidle_timeout = \"5 minutes\"\n",
			line: 3, key: "spawn.idle_timeout", msg: "invalid duration",
		},
		{
			name: "bad mode",
			body: "[spawn-team]\nmax_iterations = 2\nmode = \"yolo\"\n",
			line: 3, key: "spawn-team.mode", msg: `"yolo" is not a mode`,
		},
		{
			name: "bypass refused",
			body: "[permissions]\nmode = \"bypassPermissions\"\n",
			line: 2, key: "permissions.mode", msg: "never bypasses permissions",
		},
		{
			name: "syntax error",
			body: "[spawn]\nidle_timeout = \n",
			line: 2, msg: "expected value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			_, err := LoadConfigFile(path, DefaultConfig())
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, path, ce.File)
			assert.Equal(t, tt.line, ce.Line, err.Error())
			if tt.key != "" {
				assert.Equal(t, tt.key, ce.Key)
			}
			assert.Contains(t, err.Error(), tt.msg)
			assert.Equal(t, ExitUsage, ExitCode(err, ""))
		})
	}
}

func TestConfigFileOverridesOnlyWhatItSets(t *testing.T) {
	path := writeConfig(t, "[spawn]\nidle_timeout = \"90s\"\n[permissions]\nallowed_tools = [\"Read\"]\n")
	cfg, err := LoadConfigFile(path, DefaultConfig())
	require.NoError(t, err)
	def := DefaultConfig()
	assert.Equal(t, 90*time.Second, cfg.Spawn.IdleTimeout)
	assert.Equal(t, []string{"Read"}, cfg.Permissions.AllowedTools)
	assert.Equal(t, def.Permissions.Escalatable, cfg.Permissions.Escalatable)
	assert.Equal(t, def.Spawn.TotalTimeout, cfg.Spawn.TotalTimeout)
}

func TestEnvironmentOverridesFile(t *testing.T) {
	cfg, err := ApplyEnv(DefaultConfig(), []string{"SPAWN_IDLE_TIMEOUT=7s", "SPAWN_MAX_TURNS=4", "SPAWN_CLAUDE_MODEL=opus"})
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, cfg.Spawn.IdleTimeout)
	assert.Equal(t, 4, cfg.Spawn.MaxTurns)
	assert.Equal(t, "opus", cfg.Runners.Claude.Model)

	_, err = ApplyEnv(DefaultConfig(), []string{"SPAWN_TOTAL_TIMEOUT=forever"})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "SPAWN_TOTAL_TIMEOUT", ce.Key)
	assert.Contains(t, err.Error(), `cannot use "forever"`)

	_, err = ApplyEnv(DefaultConfig(), []string{"SPAWN_MODE=chaos"})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "spawn-team.mode", ce.Key)
}

func TestFindConfigOrder(t *testing.T) {
	repo := t.TempDir()
	xdg := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + xdg}

	path, err := FindConfig("", repo, env)
	require.NoError(t, err)
	assert.Empty(t, path, "no file anywhere: defaults")

	require.NoError(t, os.MkdirAll(filepath.Join(xdg, "spawn"), 0o755))
	user := filepath.Join(xdg, "spawn", ConfigFile)
	require.NoError(t, os.WriteFile(user, nil, 0o644))
	path, err = FindConfig("", repo, env)
	require.NoError(t, err)
	assert.Equal(t, user, path)

	inRepo := filepath.Join(repo, ConfigFile)
	require.NoError(t, os.WriteFile(inRepo, nil, 0o644))
	path, err = FindConfig("", repo, env)
	require.NoError(t, err)
	assert.Equal(t, inRepo, path, "the repository's file wins over the user's")

	explicit := writeConfig(t, "")
	path, err = FindConfig(explicit, repo, env)
	require.NoError(t, err)
	assert.Equal(t, explicit, path)

	_, err = FindConfig(filepath.Join(repo, "missing.toml"), repo, env)
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
}

func TestLoadConfigPrecedence(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, ConfigFile), []byte("[spawn]\nidle_timeout = \"1m\"\ntotal_timeout = \"2m\"\n"), 0o644))
	cfg, path, err := LoadConfig(context.Background(), "", repo, []string{"PATH=" + os.Getenv("PATH"), "SPAWN_TOTAL_TIMEOUT=3m"})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(repo, ConfigFile), path)
	assert.Equal(t, time.Minute, cfg.Spawn.IdleTimeout, "file over default")
	assert.Equal(t, 3*time.Minute, cfg.Spawn.TotalTimeout, "environment over file")
}
