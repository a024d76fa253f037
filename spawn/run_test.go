package spawn

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// userState is what spawn must never change in the user's repository.
type userState struct {
	head, branch, status, index, files string
}

func snapshot(t *testing.T, repo string) userState {
	t.Helper()
	entries, err := os.ReadDir(repo)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if e.Name() != sandbox.Dir { // spawn's own folder, ignored by git
			names = append(names, e.Name())
		}
	}
	return userState{
		head:   testenv.Git(t, repo, "rev-parse", "HEAD"),
		branch: testenv.Git(t, repo, "symbolic-ref", "HEAD"),
		status: testenv.Git(t, repo, "status", "--porcelain", "--untracked-files=all"),
		index:  testenv.Git(t, repo, "ls-files", "--stage"),
		files:  strings.Join(names, ","),
	}
}

// soloRun runs spawn solo in a fresh repository against the scripted model.
type soloRun struct {
	repo   string
	srv    *modelserver.Server
	rec    *observability.Record
	err    error
	before userState
	notes  []string
}

func runSolo(t *testing.T, sc modelserver.Scenario, task string, tweak func(*config.Config), extraEnv ...string) *soloRun {
	t.Helper()
	return runSoloWith(t, sc, task, tweak, nil, extraEnv...)
}

// runSoloWith is runSolo with a sink that also sees every event: a test
// can act in the middle of a run (delete the worktree, fill the disk).
func runSoloWith(t *testing.T, sc modelserver.Scenario, task string, tweak func(*config.Config), sink func(*soloRun, observability.Event), extraEnv ...string) *soloRun {
	t.Helper()
	testenv.Claude(t) // skips before a repository exists when there is none
	return runSoloAt(t, testenv.Repo(t), sc, task, tweak, sink, extraEnv...)
}

// runSoloIn is runSolo in the repository repo (a second run of it).
func runSoloIn(t *testing.T, repo string, sc modelserver.Scenario, task string, tweak func(*config.Config), extraEnv ...string) *soloRun {
	t.Helper()
	return runSoloAt(t, repo, sc, task, tweak, nil, extraEnv...)
}

func runSoloAt(t *testing.T, repo string, sc modelserver.Scenario, task string, tweak func(*config.Config), sink func(*soloRun, observability.Event), extraEnv ...string) *soloRun {
	t.Helper()
	claude := testenv.Claude(t)
	srv := testenv.ModelServer(t, sc)
	r := &soloRun{repo: repo, srv: srv}
	cfg := testConfig()
	cfg.Team.Mode = observability.ModeSolo
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = claude })
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 0 })
	cfg.Spawn.IdleTimeout = time.Minute
	cfg.Spawn.TotalTimeout = 2 * time.Minute
	if tweak != nil {
		tweak(&cfg)
	}
	r.before = snapshot(t, r.repo)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := testenv.Env(t, append(srv.ClaudeEnv(), extraEnv...)...)
	keep := notes(&r.notes)
	r.rec, r.err = Run(ctx, Options{Task: task, RepoDir: r.repo, Config: cfg, Env: env}, SinkFunc(func(e observability.Event) {
		keep.Event(e)
		if sink != nil {
			sink(r, e)
		}
	}))
	require.NotEmpty(t, r.rec.ID, "a sandbox was created, so a record must exist: %v", r.err)
	return r
}

// onDisk reads the record spawn wrote and checks it matches the returned one.
func (r *soloRun) onDisk(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.repo, sandbox.Dir, "runs", r.rec.ID, "record.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, string(r.rec.Status), m["status"])
	assert.Equal(t, float64(r.rec.ExitCode), m["exit_code"])
	return m
}

func TestSoloRunCommitsTheCodersWorkOnTheSandboxBranch(t *testing.T) {
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Text: "I'll create the file.", Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write",
			Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}}}},
		{Tools: []modelserver.ToolCall{{ID: "b1", Name: "Bash",
			Input: map[string]any{"command": "git add hello.txt && git commit -m 'Add hello.txt'", "description": "Commit"}}}},
		{Tools: []modelserver.ToolCall{{ID: "w2", Name: "Write",
			Input: map[string]any{"file_path": "{{workdir}}/notes.txt", "content": "left for spawn to commit\n"}}}},
		{Text: "Created hello.txt saying hi."},
	}}}}
	r := runSolo(t, sc, "create hello.txt saying hi", func(c *config.Config) {
		c.Permissions.AllowedTools = append(c.Permissions.AllowedTools, "Bash(git add:*)", "Bash(git commit:*)")
	})
	require.NoError(t, r.err)
	rec := r.rec

	// The record says what happened.
	assert.Equal(t, observability.StatusSucceeded, rec.Status)
	assert.Equal(t, 0, rec.ExitCode)
	assert.Equal(t, observability.VerdictNone, rec.Verdict)
	assert.Equal(t, r.before.head, rec.Base)
	assert.True(t, rec.Branch == "spawn/"+rec.ID+"/create-hello-txt-saying-hi", rec.Branch)
	assert.Equal(t, filepath.Join(r.repo, sandbox.Dir, "worktrees", rec.ID), rec.SandboxPath)
	assert.Empty(t, rec.PermissionsRequested)
	assert.Nil(t, rec.Error)
	require.Len(t, rec.CommandLines, 1)
	cl := rec.CommandLines[0]
	assert.Equal(t, observability.LLMClaude, cl.LLM)
	assert.Equal(t, observability.RoleCoder, cl.Role)
	assert.Equal(t, rec.SandboxPath, cl.WorkDir)
	assert.Equal(t, 0, cl.ExitCode)
	assert.Subset(t, cl.Argv, []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"})
	assert.NotContains(t, strings.Join(cl.Argv, " "), "create hello.txt saying hi", "the prompt goes on stdin")
	assert.Greater(t, rec.Usage.Turns, 0)

	// The branch holds both commits: the coder's own and spawn's.
	require.Len(t, rec.Commits, 2)
	assert.Equal(t, "Add hello.txt", rec.Commits[0].Message)
	assert.Equal(t, observability.LLMClaude, rec.Commits[0].LLM)
	assert.Equal(t, "spawn: create hello.txt saying hi", rec.Commits[1].Message)
	assert.Equal(t, observability.LLMSpawn, rec.Commits[1].LLM)
	assert.Equal(t, rec.Commits[1].SHA, testenv.Git(t, r.repo, "rev-parse", rec.Branch))
	assert.Equal(t, "hi", testenv.Git(t, r.repo, "show", rec.Branch+":hello.txt"))
	assert.Equal(t, "left for spawn to commit", testenv.Git(t, r.repo, "show", rec.Branch+":notes.txt"))
	assert.Empty(t, testenv.Git(t, rec.SandboxPath, "status", "--porcelain"), "nothing is left uncommitted")

	// The user's tree, index, HEAD and branch are untouched.
	assert.Equal(t, r.before, snapshot(t, r.repo))
	assert.NoFileExists(t, filepath.Join(r.repo, "hello.txt"))

	// The record on disk matches, with every key, and the transcript is kept.
	m := r.onDisk(t)
	assert.Len(t, m, 38)
	transcript, err := os.ReadFile(filepath.Join(r.repo, sandbox.Dir, "runs", rec.ID, cl.Stdout))
	require.NoError(t, err)
	assert.Contains(t, string(transcript), `"type":"result"`)

	// The model server saw the real CLI run the tools.
	var seen []string
	for _, req := range r.srv.Requests() {
		for _, tr := range req.ToolResults() {
			if !tr.IsError {
				seen = append(seen, tr.ID)
			}
		}
	}
	assert.Contains(t, seen, "w1")
	assert.Contains(t, seen, "b1")
}

func TestSoloRunRecordsADeniedCommand(t *testing.T) {
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write",
			Input: map[string]any{"file_path": "{{workdir}}/Makefile", "content": "build:\n\ttouch built\n"}}}},
		{Tools: []modelserver.ToolCall{{ID: "m1", Name: "Bash",
			Input: map[string]any{"command": "make build", "description": "Build"}}}},
		{Text: "I could not run make."},
	}}}}
	r := runSolo(t, sc, "add a Makefile and build", func(c *config.Config) { c.Permissions.Escalatable = nil })
	require.NoError(t, r.err, "a denial is not a failure of the run")

	require.Len(t, r.rec.PermissionsRequested, 1)
	p := r.rec.PermissionsRequested[0]
	assert.Equal(t, "Bash", p.Tool)
	assert.Equal(t, observability.LLMClaude, p.LLM)
	assert.Equal(t, 1, p.Iteration)
	assert.Empty(t, p.Rule, "nothing escalatable matches")
	assert.Contains(t, string(p.Input), "make build")
	assert.Empty(t, r.rec.PermissionsGranted, "a denial that is not escalatable is reported, not granted")
	assert.NoFileExists(t, filepath.Join(r.rec.SandboxPath, "built"), "the denied command did not run")
	assert.Equal(t, "build:\n\ttouch built", testenv.Git(t, r.repo, "show", r.rec.Branch+":Makefile"))

	denied := false
	for _, req := range r.srv.Requests() {
		for _, tr := range req.ToolResults() {
			if tr.ID == "m1" && tr.IsError {
				denied = true
			}
		}
	}
	assert.True(t, denied, "claude answered the model with a denial")
}

func TestModelAPIErrorIsAnAgentFailure(t *testing.T) {
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Error: &modelserver.HTTPError{Status: 500, Message: "scripted outage"}},
	}}}}
	start := time.Now()
	r := runSolo(t, sc, "anything", nil)
	require.Error(t, r.err)
	assert.Less(t, time.Since(start), 60*time.Second, "retries are bounded")
	assert.Equal(t, fault.KindModelUnavailable, KindOf(r.err))
	assert.Equal(t, fault.ExitAgent, ExitCode(r.err, ""))
	assert.Contains(t, r.err.Error(), "the model API is unavailable: HTTP 500")
	assert.Equal(t, observability.StatusFailed, r.rec.Status)
	assert.Equal(t, fault.ExitAgent, r.rec.ExitCode)
	require.NotNil(t, r.rec.Error)
	assert.Equal(t, "model_unavailable", r.rec.Error.Kind)
	r.onDisk(t)
	// The coder changed nothing: no empty branch or worktree is left, the
	// record says why.
	assert.Empty(t, r.rec.Branch)
	assert.Empty(t, r.rec.SandboxPath)
	assert.NotContains(t, testenv.Git(t, r.repo, "branch", "--list"), "spawn/")
	assert.NotContains(t, testenv.Git(t, r.repo, "worktree", "list"), ".spawn")
	require.NotEmpty(t, r.rec.Notes)
	assert.Contains(t, r.rec.Notes[len(r.rec.Notes)-1], "were removed; this record stays")
}

func TestSecretsNeverReachWhatSpawnWrites(t *testing.T) {
	const canary = "canary-secret-7f3a9c2e51"
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write",
			Input: map[string]any{"file_path": "{{workdir}}/config.txt", "content": "token=" + canary + "\n"}}}},
		{Text: "Wrote the token " + canary + " into config.txt."},
	}}}}
	r := runSolo(t, sc, "store the token "+canary+" in config.txt", nil, "SPAWN_CANARY_TOKEN="+canary)
	require.NoError(t, r.err)

	runDir := filepath.Join(r.repo, sandbox.Dir, "runs", r.rec.ID)
	files := 0
	require.NoError(t, filepath.WalkDir(runDir, func(path string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		files++
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(b), canary, path)
		return nil
	}))
	assert.GreaterOrEqual(t, files, 3, "record and transcripts were written")
	for _, c := range r.rec.Commits {
		assert.NotContains(t, testenv.Git(t, r.repo, "log", "-1", "--format=%B", c.SHA), canary)
	}
	b, err := observability.Encode(r.rec, nil)
	require.NoError(t, err)
	assert.Contains(t, string(b), observability.Redacted)
}

// notes is a Sink that keeps the text of every note.
func notes(into *[]string) Sink {
	return SinkFunc(func(e observability.Event) {
		if e.Kind == observability.EventNote {
			*into = append(*into, e.Text)
		}
	})
}

func TestBadInputCreatesNothing(t *testing.T) {
	env := testenv.Env(t)
	cfg := testConfig()
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = "git" }) // any binary: the checks come first
	ctx := context.Background()

	notRepo := t.TempDir()
	empty := t.TempDir()
	testenv.Git(t, empty, "init", "--quiet")
	repo := testenv.Repo(t)
	testenv.Git(t, repo, "branch", "spawn/taken")

	tests := []struct {
		name string
		opts Options
		mode observability.Mode
		kind fault.Kind
		msg  string
	}{
		{"not a repository", Options{RepoDir: notRepo}, "", fault.KindRepo, "is not a git repository"},
		{"no commits", Options{RepoDir: empty}, "", fault.KindRepo, "has no commits yet"},
		{"unknown base", Options{RepoDir: repo, Base: "no-such-ref"}, "", fault.KindRepo, `the base "no-such-ref" names no commit`},
		{"existing branch", Options{RepoDir: repo, Branch: "spawn/taken"}, "", fault.KindRepo, "already exists"},
		{"bad branch name", Options{RepoDir: repo, Branch: "bad..name"}, "", fault.KindRepo, "not a valid branch name"},
		{"empty task", Options{RepoDir: repo, Task: " "}, "", fault.KindUsage, "no task given"},
		{"unknown mode", Options{RepoDir: repo}, "chaos", fault.KindConfig, `"chaos" is not a mode`},
		{"missing reviewer CLI", Options{RepoDir: repo}, observability.ModePingpong, fault.KindMissingCLI, "gemini CLI (no-such-gemini) is not on PATH; install the pinned gemini 0.61.0"},
		{"missing CLI", Options{RepoDir: repo}, "", fault.KindMissingCLI, "claude CLI (no-such-claude) is not on PATH; install the pinned claude 2.1.332"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts.Task == "" {
				opts.Task = "do it"
			}
			opts.Config, opts.Env = cfg, env
			opts.Config.Team.Mode = observability.ModeSolo
			if tt.mode != "" {
				opts.Config.Team.Mode = tt.mode
			}
			opts.Config.Runners.Edit("gemini", func(s *runners.Settings) { s.Command = "no-such-gemini" })
			if tt.name == "missing CLI" {
				opts.Config.Runners.Edit("claude", func(s *runners.Settings) { s.Command = "no-such-claude" })
			}
			var events []observability.Event
			rec, err := Run(ctx, opts, SinkFunc(func(e observability.Event) { events = append(events, e) }))
			require.Error(t, err)
			assert.Empty(t, events, "no run started")
			assert.Empty(t, rec.ID, "no run exists")
			assert.Equal(t, observability.StatusFailed, rec.Status)
			assert.Equal(t, string(tt.kind), rec.Error.Kind)
			assert.Equal(t, tt.kind, KindOf(err))
			assert.Equal(t, fault.ExitUsage, ExitCode(err, observability.VerdictNone))
			assert.Equal(t, fault.ExitUsage, rec.ExitCode)
			assert.Contains(t, err.Error(), tt.msg)
			assert.NotContains(t, err.Error(), "\n", "one sentence")
			if _, statErr := os.Stat(opts.RepoDir); statErr == nil {
				assert.NoDirExists(t, filepath.Join(opts.RepoDir, sandbox.Dir))
			}
		})
	}
	assert.Equal(t, []string{"main", "spawn/taken"}, strings.Fields(testenv.Git(t, repo, "branch", "--format=%(refname:short)")))
}

func TestUncommittedChangesAreNotedAndLeftAlone(t *testing.T) {
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{{Text: "Nothing to do."}}}}}
	claude := testenv.Claude(t)
	srv := testenv.ModelServer(t, sc)
	repo := testenv.Repo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("# edited, not committed\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "scratch.txt"), []byte("mine\n"), 0o644))
	before := snapshot(t, repo)

	cfg := testConfig()
	cfg.Team.Mode = observability.ModeSolo
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = claude })
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 0 })
	var said []string
	rec, err := Run(context.Background(), Options{Task: "look around", RepoDir: repo,
		Config: cfg, Env: testenv.Env(t, srv.ClaudeEnv()...)}, notes(&said))
	require.NoError(t, err)
	require.Len(t, said, 1)
	assert.Contains(t, said[0], "has uncommitted changes (README.md, scratch.txt); the sandbox starts from", "the note names the files")
	assert.Contains(t, rec.Notes, said[0], "the note is in the record too")
	assert.Equal(t, before, snapshot(t, repo))
	assert.Empty(t, rec.Commits, "the coder changed nothing, so nothing was committed")
	assert.Equal(t, "# test", testenv.Git(t, repo, "show", rec.Branch+":README.md"), "the sandbox starts from the base, without the user's edits")
	exclude, err := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(exclude), "/.spawn/"))
}
