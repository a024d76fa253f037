package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documented spawn-team.toml is loadable and says exactly what the
// built-in defaults are.
func TestDocumentedConfigIsTheDefault(t *testing.T) {
	loaded, err := Load(context.Background(), Source{File: filepath.Join("..", "..", File), Env: []string{"PATH=" + os.Getenv("PATH")}})
	cfg, path := loaded.Config, firstFile(loaded)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("..", "..", File), path)
	assert.Equal(t, Default(), cfg)
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), File)
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
			name: "a misspelt key names the nearest valid one and its table's keys",
			body: "[spawn]\nidle_timeout = \"1m\"\nidle_timout = \"2m\"\n",
			line: 3, key: "spawn.idle_timout", msg: "did you mean spawn.idle_timeout? The keys of [spawn] are: auto_answer, idle_timeout,",
		},
		{
			name: "an unknown table lists the tables",
			body: "[reviewer]\nmodel = \"x\"\n",
			line: 1, key: "reviewer", msg: "the tables are: [github], [observability], [permissions], [runners.claude], [runners.codex], [runners.gemini], [sandbox], [spawn-team], [spawn]",
		},
		{
			name: "a bare integer for a duration says to give it a unit",
			body: "[spawn]\nmax_turns = 3\nidle_timeout = 300\n",
			line: 3, key: "spawn.idle_timeout", msg: `write it with a unit, in quotes, such as "300s"`,
		},
		{
			name: "wrong type",
			body: "[spawn]\nmax_turns = \"ten\"\n",
			line: 2, key: "spawn.max_turns", msg: "is a string, and must be a whole number, such as max_turns = 3",
		},
		{
			name: "a string for a list",
			body: "[permissions]\nallowed_tools = \"Read\"\n",
			line: 2, key: "permissions.allowed_tools", msg: `is a string, and must be a list of strings, such as allowed_tools = ["Read", `,
		},
		{
			name: "a number for a string",
			body: "[sandbox]\nisolation = 1\n",
			line: 2, key: "sandbox.isolation", msg: `is a whole number, and must be a string in quotes, such as isolation = "auto"`,
		},
		{
			name: "bad duration",
			body: "[spawn]\n\nidle_timeout = \"5 minutes\"\n",
			line: 3, key: "spawn.idle_timeout", msg: `must be a duration in quotes, such as idle_timeout = "5m"`,
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
			_, err := Load(context.Background(), Source{File: path, RepoDir: t.TempDir()})
			var ce *Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, path, ce.File)
			assert.Equal(t, tt.line, ce.Line, err.Error())
			if tt.key != "" {
				assert.Equal(t, tt.key, ce.Key)
			}
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestFileOverridesOnlyWhatItSets(t *testing.T) {
	path := writeConfig(t, "[spawn]\nidle_timeout = \"90s\"\n[permissions]\nallowed_tools = [\"Read\"]\n")
	loaded, err := Load(context.Background(), Source{File: path, RepoDir: t.TempDir()})
	cfg := loaded.Config
	require.NoError(t, err)
	def := Default()
	assert.Equal(t, 90*time.Second, cfg.Spawn.IdleTimeout)
	assert.Equal(t, []string{"Read"}, cfg.Permissions.AllowedTools)
	assert.Equal(t, def.Permissions.Escalatable, cfg.Permissions.Escalatable)
	assert.Equal(t, def.Spawn.TotalTimeout, cfg.Spawn.TotalTimeout)
}

func TestEnvironmentOverridesFile(t *testing.T) {
	loaded, err := Load(context.Background(), Source{RepoDir: t.TempDir(), Env: []string{"SPAWN_IDLE_TIMEOUT=7s", "SPAWN_MAX_TURNS=4", "SPAWN_CLAUDE_MODEL=opus"}})
	cfg := loaded.Config
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, cfg.Spawn.IdleTimeout)
	assert.Equal(t, 4, cfg.Spawn.MaxTurns)
	assert.Equal(t, "opus", cfg.Runners["claude"].Model)

	_, err = Load(context.Background(), Source{RepoDir: t.TempDir(), Env: []string{"SPAWN_TOTAL_TIMEOUT=forever"}})
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "SPAWN_TOTAL_TIMEOUT", ce.Key)
	assert.Contains(t, err.Error(), `cannot use "forever"`)

	_, err = Load(context.Background(), Source{RepoDir: t.TempDir(), Env: []string{"SPAWN_MODE=chaos"}})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "SPAWN_MODE", ce.Key, "a bad value names the variable that set it")
	assert.Contains(t, err.Error(), `"chaos" is not a mode`)
}

// firstFile is the first file Load read, "" for none.
func firstFile(l Loaded) string {
	if len(l.Files) == 0 {
		return ""
	}
	return l.Files[0]
}

// The user's own file and the repository's are both read, the user's
// first; --config takes the user's file's place.
func TestFilesAreTheUsersThenTheRepositorys(t *testing.T) {
	repo := t.TempDir()
	xdg := t.TempDir()
	env := ReadEnvironment([]string{"XDG_CONFIG_HOME=" + xdg})

	user, inRepo, err := Files("", repo, env)
	require.NoError(t, err)
	assert.Empty(t, user+inRepo, "no file anywhere: defaults")

	require.NoError(t, os.MkdirAll(filepath.Join(xdg, "spawn"), 0o755))
	own := filepath.Join(xdg, "spawn", File)
	require.NoError(t, os.WriteFile(own, nil, 0o644))
	repoFile := filepath.Join(repo, File)
	require.NoError(t, os.WriteFile(repoFile, nil, 0o644))
	user, inRepo, err = Files("", repo, env)
	require.NoError(t, err)
	assert.Equal(t, own, user)
	assert.Equal(t, repoFile, inRepo)

	explicit := writeConfig(t, "")
	user, inRepo, err = Files(explicit, repo, env)
	require.NoError(t, err)
	assert.Equal(t, explicit, user)
	assert.Equal(t, repoFile, inRepo)

	_, _, err = Files(filepath.Join(repo, "missing.toml"), repo, env)
	var ce *Error
	require.True(t, errors.As(err, &ce))
}

func TestLoadConfigPrecedence(t *testing.T) {
	repo := t.TempDir()
	xdg := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(xdg, "spawn"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(xdg, "spawn", File), []byte("[spawn]\nidle_timeout = \"2m\"\nmax_auto_answers = 1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, File), []byte("[spawn]\nidle_timeout = \"1m\"\ntotal_timeout = \"2m\"\n"), 0o644))
	loaded, err := Load(context.Background(), Source{RepoDir: repo, Env: []string{"PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + xdg, "SPAWN_TOTAL_TIMEOUT=3m", "SPAWN_MAX_TURNS=9"},
		Flags: Overrides{TotalTimeout: ptr(4 * time.Minute)}})
	require.NoError(t, err)
	cfg := loaded.Config
	assert.Equal(t, []string{filepath.Join(xdg, "spawn", File), filepath.Join(repo, File)}, loaded.Files)
	assert.Equal(t, time.Minute, cfg.Spawn.IdleTimeout, "the repository's file over the user's")
	assert.Equal(t, 1, cfg.Spawn.MaxAutoAnswers, "the user's file over the default")
	assert.Equal(t, 9, cfg.Spawn.MaxTurns, "environment over default")
	assert.Equal(t, 4*time.Minute, cfg.Spawn.TotalTimeout, "flag over environment over file")
	assert.Empty(t, loaded.Notes, "shorter timeouts tighten")
}

// Given the top of the work tree (the caller found it), Load reads the
// repository's file there and runs no git: with no git on PATH, the
// file in the subdirectory the run names is not the one read.
func TestLoadTakesTheTopItIsGiven(t *testing.T) {
	top := t.TempDir()
	sub := filepath.Join(top, "pkg")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(top, File), []byte("[spawn]\nidle_timeout = \"1m\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, File), []byte("[spawn]\nidle_timeout = \"2m\"\n"), 0o644))
	env := []string{"PATH=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}

	loaded, err := Load(context.Background(), Source{RepoDir: sub, Top: top, Env: env})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(top, File)}, loaded.Files)
	assert.Equal(t, time.Minute, loaded.Config.Spawn.IdleTimeout)

	loaded, err = Load(context.Background(), Source{RepoDir: sub, Env: env})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(sub, File)}, loaded.Files, "without git, the directory itself")
}

// A repository's spawn-team.toml may tighten security, never lower it:
// each value of its that would lower it is not applied, the stricter
// value stays, and a note names the key, the value asked and the value
// kept. Values that tighten, or change nothing, pass silently.
func TestARepositorysFileOnlyTightens(t *testing.T) {
	repo := t.TempDir()
	xdg := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(xdg, "spawn"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(xdg, "spawn", File), []byte(`[spawn]
max_cost_usd = 5.0
max_turns = 40

[sandbox]
isolation = "bwrap"
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, File), []byte(`[spawn-team]
mode = "solo"
max_iterations = 9
[spawn]
max_cost_usd = 1000.0
max_turns = 0
idle_timeout = "1h"
tool_timeout = "1m"
[permissions]
mode = "auto"
allowed_tools = ["Bash", "Read"]
escalatable = []
denied_tools = []
[runners.claude]
command = "./evil"
[runners.gemini]
command = "gemini"
approval_mode = "auto_edit"
allowed_tools = ["run_shell_command"]
[sandbox]
isolation = "none"
network = "open"
[github]
trusted_authors = ["mallory"]
resolve_human_threads = true
verify_fixes = false
`), 0o644))
	loaded, err := Load(context.Background(), Source{RepoDir: repo, Env: []string{"PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + xdg}})
	require.NoError(t, err)
	cfg, def := loaded.Config, Default()
	assert.Equal(t, "solo", string(cfg.Team.Mode), "the mode is the repository's to choose")
	assert.Equal(t, time.Minute, cfg.Spawn.ToolTimeout, "a shorter limit applies")
	assert.Empty(t, cfg.Permissions.Escalatable, "fewer grants apply")
	for _, c := range []struct {
		key       string
		got, want any
	}{
		{"sandbox.isolation", cfg.Sandbox.Isolation, "bwrap"},
		{"sandbox.network", cfg.Sandbox.Network, def.Sandbox.Network},
		{"runners.claude.command", cfg.Runners["claude"].Command, "claude"},
		{"permissions.mode", cfg.Permissions.Mode, "acceptEdits"},
		{"permissions.allowed_tools", cfg.Permissions.AllowedTools, []string{"Read"}},
		{"permissions.denied_tools", cfg.Permissions.DeniedTools, def.Permissions.DeniedTools},
		{"runners.gemini.approval_mode", cfg.Runners["gemini"].ApprovalMode, "default"},
		{"runners.gemini.allowed_tools", cfg.Runners["gemini"].AllowedTools, def.Runners["gemini"].AllowedTools},
		{"spawn.max_cost_usd", cfg.Spawn.MaxCostUSD, 5.0},
		{"spawn.max_turns", cfg.Spawn.MaxTurns, 40},
		{"spawn.idle_timeout", cfg.Spawn.IdleTimeout, def.Spawn.IdleTimeout},
		{"spawn-team.max_iterations", cfg.Team.MaxIterations, def.Team.MaxIterations},
		{"github.trusted_authors", cfg.GitHub.TrustedAuthors, []string(nil)},
		{"github.resolve_human_threads", cfg.GitHub.ResolveHumanThreads, false},
		{"github.verify_fixes", cfg.GitHub.VerifyFixes, true},
	} {
		assert.EqualValues(t, c.want, c.got, c.key)
		assert.Contains(t, strings.Join(loaded.Notes, "\n"), c.key, "a note names %s", c.key)
	}
	assert.NotContains(t, strings.Join(loaded.Notes, "\n"), "runners.gemini.command", "a value that changes nothing is no news")
}

// Every rule, pattern and value is checked while loading, before anything
// is created; the error names the file and line, the variable or the flag.
func TestEveryRuleAndPatternIsValidatedWhileLoading(t *testing.T) {
	tests := []struct {
		name, body string
		line       int
		key        string
	}{
		{"unclosed question pattern", "[spawn]\nquestion_patterns = [\"(unclosed\"]\n", 2, "spawn.question_patterns"},
		{"unclosed escalatable rule", "[permissions]\nescalatable = [\"Bash(unclosed\"]\n", 2, "permissions.escalatable"},
		{"unclosed allowed rule", "[permissions]\nallowed_tools = [\"Bash(unclosed\"]\n", 2, "permissions.allowed_tools"},
		{"comma in a rule", "[permissions]\nallowed_tools = [\"Read\", \"Bash(git log, git diff)\"]\n", 2, "permissions.allowed_tools"},
		{"empty denied rule", "\n[permissions]\ndenied_tools = [\"\"]\n", 3, "permissions.denied_tools"},
		{"unknown domain", "[spawn-team]\nreview_domains = [\"speed\"]\n", 2, "spawn-team.review_domains"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			_, err := Load(context.Background(), Source{File: path, RepoDir: t.TempDir()})
			var ce *Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, path, ce.File)
			assert.Equal(t, tt.line, ce.Line, err.Error())
			assert.Equal(t, tt.key, ce.Key)
		})
	}
}

func TestFlagErrorsNameTheFlag(t *testing.T) {
	_, err := Load(context.Background(), Source{RepoDir: t.TempDir(), Flags: Overrides{Mode: "chaos"}})
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "--mode", ce.Key)
	assert.Empty(t, ce.File)
	for _, tt := range []struct {
		flags Overrides
		key   string
	}{
		{Overrides{MaxIterations: ptr(0)}, "--max-iterations"},
		{Overrides{MaxTurns: ptr(-1)}, "--max-turns"},
		{Overrides{MaxCostUSD: ptr(-1.0)}, "--max-cost"},
		{Overrides{ToolTimeout: ptr(time.Duration(0))}, "--tool-timeout"},
		{Overrides{IdleTimeout: ptr(-time.Second)}, "--idle-timeout"},
	} {
		_, err := Load(context.Background(), Source{RepoDir: t.TempDir(), Flags: tt.flags})
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, tt.key, ce.Key, err.Error())
	}
}

// A flag set to zero sets zero: --max-turns 0 lifts the file's limit; a
// flag not given leaves the file's value.
func TestLimitFlagsOverrideTheFileEvenWithZero(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, File), []byte("[spawn-team]\nmax_iterations = 2\n[spawn]\nmax_turns = 9\nmax_cost_usd = 2.0\n"), 0o644))
	loaded, err := Load(context.Background(), Source{RepoDir: repo, Flags: Overrides{MaxTurns: ptr(0), MaxCostUSD: ptr(0.5)}})
	require.NoError(t, err)
	cfg := loaded.Config
	assert.Equal(t, 0, cfg.Spawn.MaxTurns)
	assert.Equal(t, 0.5, cfg.Spawn.MaxCostUSD)
	assert.Equal(t, 2, cfg.Team.MaxIterations, "a flag not given leaves the file's value")
}

// A message about a limit says every way to change it.
func TestWaysNameTheFlagTheKeyAndTheVariable(t *testing.T) {
	assert.Equal(t, "--idle-timeout, idle_timeout in [spawn] of spawn-team.toml or SPAWN_IDLE_TIMEOUT", Ways("spawn.idle_timeout"))
	assert.Equal(t, "--max-iterations, max_iterations in [spawn-team] of spawn-team.toml or SPAWN_MAX_ITERATIONS", Ways("spawn-team.max_iterations"))
	assert.Equal(t, "--max-cost, max_cost_usd in [spawn] of spawn-team.toml or SPAWN_MAX_COST_USD", Ways("spawn.max_cost_usd"))
	assert.Equal(t, "max_auto_answers in [spawn] of spawn-team.toml", Ways("spawn.max_auto_answers"))
}

func ptr[T any](v T) *T { return &v }
