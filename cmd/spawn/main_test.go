package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

type result struct {
	code           int
	stdout, stderr string
}

func spawnMain(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	var out, errw bytes.Buffer
	code := Main(append([]string{"spawn"}, args...), env, strings.NewReader(stdin), &out, &errw)
	return result{code, out.String(), errw.String()}
}

// Flags reach the options struct whether they come before or after the
// task words; the task comes from words, a file or stdin.
func TestRunFlagsAndTask(t *testing.T) {
	taskFile := filepath.Join(t.TempDir(), "task.md")
	require.NoError(t, os.WriteFile(taskFile, []byte("from a file\n"), 0o644))
	tests := []struct {
		name  string
		args  []string
		stdin string
		check func(t *testing.T, o *runOptions, task string)
	}{
		{"flags first", []string{"run", "--mode", "solo", "--json", "fix", "the", "bug"}, "", func(t *testing.T, o *runOptions, task string) {
			assert.Equal(t, "solo", o.Mode)
			assert.True(t, o.JSON)
			assert.Equal(t, "fix the bug", task)
		}},
		{"flags after the task", []string{"run", "fix", "the", "bug", "--mode=pingpong", "--idle-timeout", "90s", "--base", "main"}, "", func(t *testing.T, o *runOptions, task string) {
			assert.Equal(t, "pingpong", o.Mode)
			assert.Equal(t, "1m30s", o.IdleTimeout.String())
			assert.Equal(t, "main", o.Base)
			assert.Equal(t, "fix the bug", task)
		}},
		{"double dash keeps dashes", []string{"run", "--json", "--", "remove", "the", "--force", "flag"}, "", func(t *testing.T, o *runOptions, task string) {
			assert.True(t, o.JSON)
			assert.Equal(t, "remove the --force flag", task)
		}},
		{"stdin", []string{"run", "-", "--repo", "/x"}, "from stdin\n", func(t *testing.T, o *runOptions, task string) {
			assert.Equal(t, "/x", o.Repo)
			assert.Equal(t, "from stdin\n", task)
		}},
		{"task file", []string{"run", "--task-file", taskFile}, "", func(t *testing.T, o *runOptions, task string) {
			assert.Equal(t, "from a file\n", task)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *runOptions
			d := &deps{io: IO{In: strings.NewReader(tt.stdin), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}}
			app := newApp(d, func(_ context.Context, _ *deps, o *runOptions) error { got = o; return nil }, runDemo)
			require.NoError(t, app.Run(reorderArgs(app, append([]string{"spawn"}, tt.args...))))
			require.NotNil(t, got)
			task, err := readTask(got, d.io.In)
			require.NoError(t, err)
			tt.check(t, got, task)
		})
	}
}

func TestUsageAndRepositoryErrors(t *testing.T) {
	notRepo := t.TempDir()
	repo := testenv.Repo(t)
	badConfig := filepath.Join(t.TempDir(), "spawn-team.toml")
	require.NoError(t, os.WriteFile(badConfig, []byte("[spawn]\nidle_timeout = \"1m\"\nmax_trns = 3\n"), 0o644))
	env := testenv.Env(t)

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no task", []string{"run", "--repo", repo}, 2, "no task given"},
		{"unknown flag", []string{"run", "--frobnicate", "x"}, 2, "flag provided but not defined: -frobnicate"},
		{"not a repository", []string{"run", "--repo", notRepo, "do it"}, 2, "is not a git repository; run spawn inside one or pass --repo"},
		{"unknown config key", []string{"run", "--repo", repo, "--config", badConfig, "do it"}, 2, badConfig + ":3: spawn.max_trns: unknown key"},
		{"bad flag value", []string{"run", "--repo", repo, "--mode", "chaos", "do it"}, 2, `"chaos" is not a mode`},
		{"mode not built yet", []string{"run", "--repo", repo, "--mode", "github", "do it"}, 2, "mode github is not implemented yet"},
		{"unknown command", []string{"frob"}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := spawnMain(t, env, "", tt.args...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tt.stderr)
			assert.NoDirExists(t, filepath.Join(repo, ".spawn"), "nothing half-created")
		})
	}
}

func TestJSONErrorIsOneDocument(t *testing.T) {
	r := spawnMain(t, testenv.Env(t), "", "run", "--json", "--repo", t.TempDir(), "do it")
	assert.Equal(t, 2, r.code)
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	require.NoError(t, dec.Decode(&doc))
	assert.False(t, dec.More(), "exactly one JSON document")
	assert.Equal(t, float64(2), doc["exit_code"])
	assert.Equal(t, "repo", doc["error"].(map[string]any)["kind"])
}

func TestVersionAndHelp(t *testing.T) {
	r := spawnMain(t, nil, "", "version")
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "spawn dev\n", r.stdout)
	for _, cmd := range []string{"run", "demo", "version"} {
		r := spawnMain(t, nil, "", cmd, "--help")
		assert.Equal(t, 0, r.code)
		assert.Contains(t, r.stdout, "USAGE:", cmd)
	}
}

// The story of issue #2's "done means": spawn run --mode solo --json in a
// repository, with the real claude pointed at a model, prints exactly one
// JSON document with every key, and the branch holds the commit.
func TestRunJSONWithRealClaude(t *testing.T) {
	claude := testenv.Claude(t)
	srv, err := modelserver.Start(modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}}}},
		{Text: "Created hello.txt."},
	}}}})
	require.NoError(t, err)
	defer srv.Close()
	repo := testenv.Repo(t)
	const canary = "canary-token-5d1e77a0c3"
	env := testenv.Env(t, append(srv.ClaudeEnv(), "SPAWN_CLAUDE_COMMAND="+claude, "DEPLOY_TOKEN="+canary)...)

	r := spawnMain(t, env, "", "run", "--repo", repo, "--mode", "solo", "--json", "--branch", "spawn/hello", "create hello.txt saying hi", "(not "+canary+")")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout+r.stderr, canary, "no secret on stdout or stderr")
	assert.Contains(t, r.stdout, "[REDACTED]")
	var rec map[string]any
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	require.NoError(t, dec.Decode(&rec))
	assert.False(t, dec.More(), "exactly one JSON document on stdout")
	for _, k := range []string{"schema", "id", "task", "mode", "status", "verdict", "exit_code", "repo", "base", "branch",
		"sandbox_path", "started_at", "finished_at", "duration_ms", "command_lines", "permissions_requested",
		"permissions_granted", "review_feedback", "security_findings", "commits", "pr_url", "github_reviews",
		"resolved_comments", "usage", "error"} {
		assert.Contains(t, rec, k)
	}
	assert.Equal(t, "succeeded", rec["status"])
	assert.Equal(t, "spawn/hello", rec["branch"])
	assert.Equal(t, "hi", testenv.Git(t, repo, "show", "spawn/hello:hello.txt"))
	assert.Equal(t, "spawn: create hello.txt saying hi (not [REDACTED])", testenv.Git(t, repo, "log", "-1", "--format=%s", "spawn/hello"))

	// Without --json a person gets a summary that says where the work is.
	r = spawnMain(t, env, "", "run", "create hello.txt saying hi", "--repo", repo, "--mode", "solo")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "succeeded (exit 0)")
	assert.Contains(t, r.stdout, "git merge spawn/create-hello-txt-saying-hi-")
}

// With no --mode, spawn runs the configured default, pingpong: an answer the
// reviewer cannot get right even after a repair turn is never an approval,
// and spawn exits 3.
func TestDefaultModeReviewsAndExits3WhenNotApproved(t *testing.T) {
	claude, gemini := testenv.Claude(t), testenv.Gemini(t)
	srv, err := modelserver.Start(modelserver.Scenario{
		Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
			{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}}}},
			{Text: "Created hello.txt."},
		}}},
		Gemini: []modelserver.Script{{Turns: []modelserver.Turn{{Text: "Approved!"}, {Text: "Yes, approved."}}}},
	})
	require.NoError(t, err)
	defer srv.Close()
	genv, err := srv.GeminiEnv(t.TempDir())
	require.NoError(t, err)
	env := append(testenv.Env(t, append(srv.ClaudeEnv(), "SPAWN_CLAUDE_COMMAND="+claude, "SPAWN_GEMINI_COMMAND="+gemini)...), genv...)
	repo := testenv.Repo(t)

	r := spawnMain(t, env, "", "run", "--repo", repo, "--json", "create hello.txt")
	assert.Equal(t, 3, r.code, r.stderr)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rec))
	assert.Equal(t, "pingpong", rec["mode"])
	assert.Equal(t, "review_failed", rec["verdict"])
	assert.Equal(t, float64(3), rec["exit_code"])
}
