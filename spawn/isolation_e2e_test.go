package spawn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
)

// requireBwrap skips a test that needs bubblewrap on a machine without
// it, except under CI=true, where a missing bubblewrap fails the test.
func requireBwrap(t *testing.T) {
	t.Helper()
	if r := isolation.Probe(context.Background(), testenv.Env(t), ""); r.Mode != isolation.ModeBwrap {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs bubblewrap: %s", r.Reason)
		}
		t.Skipf("no bubblewrap here: %s", r.Reason)
	}
}

// guarded is everything of the user's that a run must leave as it was:
// the work tree (userState), every ref outside the run's namespace,
// .git/config and the hooks.
type guardedState struct {
	user   userState
	refs   string
	config string
	hooks  string
}

func takeGuarded(t *testing.T, repo, runID string) guardedState {
	t.Helper()
	var refs []string
	for _, l := range strings.Split(testenv.Git(t, repo, "for-each-ref", "--format=%(refname) %(objectname)"), "\n") {
		if runID == "" || !strings.HasPrefix(l, "refs/heads/spawn/"+runID+"/") {
			refs = append(refs, l)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Join(repo, ".git", "hooks"))
	require.NoError(t, err)
	var hooks []string
	for _, e := range entries {
		hooks = append(hooks, e.Name())
	}
	return guardedState{user: snapshot(t, repo), refs: strings.Join(refs, "\n"), config: string(cfg), hooks: strings.Join(hooks, ",")}
}

func canary(t *testing.T, name string) string {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return name + "-canary-" + hex.EncodeToString(b)
}

// attackTest is the test code a prompt-injected coder writes and runs with
// `go test`: it tries to write outside the worktree, prints its whole
// environment and every file under its HOME, and tries the user's HOME.
const attackTest = `package attack

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAttack(t *testing.T) {
	for _, kv := range os.Environ() {
		fmt.Println("ENV", kv)
	}
	for _, p := range []string{"%s", "%s", "%s"} {
		if err := os.WriteFile(p, []byte("pwned"), 0o644); err != nil {
			fmt.Println("DENIED", p, err)
		} else {
			fmt.Println("ESCAPED", p)
		}
	}
	n := 0
	for _, root := range []string{os.Getenv("HOME"), "%s"} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
				if b, _ := os.ReadFile(p); strings.Contains(string(b), "-canary-") {
					fmt.Println("LEAK", p)
				}
			}
			return nil
		})
	}
	fmt.Println("FILES", n)
}
`

// A prompt-injected coder under bubblewrap tries every way out a
// security reviewer would: writes outside the worktree and to /tmp, edits
// the user's .git/config and hooks, moves the user's branch and tags,
// reconfigures git, and runs test code that writes outside, dumps its
// environment and reads its HOME. What it writes outside its worktree
// lands in its sandbox's own /tmp or fails, its git commands act on its
// own store, nothing of the user's changes, no secret leaks anywhere; its
// normal work (Write, go test, its own commits) still succeeds.
func TestSandboxedCoderCannotTouchAnythingOfTheUsers(t *testing.T) {
	requireBwrap(t)
	apiKey, ghToken, sshKey := canary(t, "sk-ant"), canary(t, "ghp"), canary(t, "ssh")
	escape := filepath.Join(os.TempDir(), "escape-"+rand.Text()+".txt")
	testEscape := filepath.Join(os.TempDir(), "escape-test-"+rand.Text()+".txt")
	userHome := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(userHome, ".ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(userHome, ".ssh", "id_ed25519"), []byte(sshKey), 0o600))

	repo := "{{workdir}}/../../.."                  // the user's repository, seen from the worktree
	outsideTest := "../../../outside-from-test.txt" // go test runs in the worktree
	bash := func(id, cmd string) modelserver.ToolCall {
		return modelserver.ToolCall{ID: id, Name: "Bash", Input: map[string]any{"command": cmd, "description": id}}
	}
	attacks := []modelserver.ToolCall{
		{ID: "write-up", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/../../outside.txt", "content": "x"}},
		{ID: "write-tmp", Name: "Write", Input: map[string]any{"file_path": escape, "content": "x"}},
		{ID: "read-config", Name: "Read", Input: map[string]any{"file_path": repo + "/.git/config"}},
		{ID: "edit-config", Name: "Edit", Input: map[string]any{"file_path": repo + "/.git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = touch " + escape}},
		{ID: "write-hook", Name: "Write", Input: map[string]any{"file_path": repo + "/.git/hooks/pre-commit", "content": "#!/bin/sh\ntouch " + escape + "\n"}},
		bash("branch-f", "git branch -f main HEAD"),
		bash("update-ref", "git update-ref refs/heads/main HEAD"),
		bash("tag-f", "git tag -f v1"),
		bash("hooks-path", "git config core.hooksPath /tmp/x"),
	}
	var turns []modelserver.Turn
	for _, a := range attacks {
		turns = append(turns, modelserver.Turn{Tools: []modelserver.ToolCall{a}})
	}
	turns = append(turns,
		modelserver.Turn{Tools: []modelserver.ToolCall{
			{ID: "gomod", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/go.mod", "content": "module attack\n\ngo 1.21\n"}},
			{ID: "attack-test", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/attack_test.go",
				"content": sprintf(attackTest, outsideTest, testEscape, filepath.Join(userHome, "planted.txt"), userHome)}},
		}},
		modelserver.Turn{Tools: []modelserver.ToolCall{bash("go-test", "go test -count=1 -v ./...")}},
		modelserver.Turn{Tools: []modelserver.ToolCall{bash("commit", "git add -A && git commit -q -m 'Add the attack test'")}},
		modelserver.Turn{Text: "Done."},
	)
	var before guardedState
	r := runSoloWith(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: turns}}}, "harden the repository", func(c *config.Config) {
		c.Sandbox.Isolation = isolation.ModeBwrap
		c.Permissions.AllowedTools = append(c.Permissions.AllowedTools, "Bash(git:*)")
		c.Spawn.IdleTimeout = 2 * time.Minute
	}, func(r *soloRun, e observability.Event) {
		if e.Kind == observability.EventStarted {
			testenv.Git(t, r.repo, "tag", "v1")
			before = takeGuarded(t, r.repo, e.Run)
		}
	}, "HOME="+userHome, "ANTHROPIC_API_KEY="+apiKey, "GITHUB_TOKEN="+ghToken)
	repo = r.repo
	outsideTest = filepath.Join(repo, "outside-from-test.txt")
	require.NoError(t, r.err)
	assert.Equal(t, "bwrap", r.rec.Isolation.Mode)
	assert.Empty(t, r.rec.SecurityFindings, "nothing changed, so nothing was undone")

	// Nothing of the user's changed.
	after := takeGuarded(t, repo, r.rec.ID)
	assert.Equal(t, before, after)
	for _, p := range []string{filepath.Join(repo, ".spawn", "outside.txt"), escape, testEscape, outsideTest, filepath.Join(userHome, "planted.txt")} {
		assert.NoFileExists(t, p)
	}

	// What the coder was told: its writes outside the worktree went into
	// the sandbox's own /tmp, or failed, and left nothing on the host (the
	// checks above); its git commands ran in its own store.
	results := map[string]modelserver.ToolResultSeen{}
	var bodies []string
	for _, req := range r.srv.Requests() {
		assert.Equal(t, apiKey, req.Header.Get("x-api-key"), "the relay added the real key upstream")
		bodies = append(bodies, string(req.Body))
		for _, res := range req.ToolResults() {
			results[res.ID] = res
		}
	}
	for _, a := range attacks {
		_, ok := results[a.ID]
		require.True(t, ok, "the coder tried %s", a.ID)
	}
	goTest := results["go-test"].Content
	assert.Contains(t, goTest, "DENIED "+filepath.Join(userHome, "planted.txt"))
	assert.NotContains(t, goTest, "LEAK")
	assert.Contains(t, goTest, "FILES ")
	assert.Contains(t, goTest, "ENV ANTHROPIC_API_KEY=spawn-relay-", "the coder holds the run's throwaway key")
	assert.False(t, results["commit"].IsError, "the coder's own commit works: %s", results["commit"].Content)
	assert.Contains(t, testenv.Git(t, repo, "log", "--format=%s", r.rec.Branch), "Add the attack test")

	// No secret anywhere: model requests, the run's files, the branch.
	var written []string
	require.NoError(t, filepath.WalkDir(filepath.Join(repo, ".spawn"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, rerr := os.ReadFile(p)
			if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return rerr
			}
			written = append(written, string(b))
		}
		return err
	}))
	branch := testenv.Git(t, repo, "log", "-p", r.rec.Branch)
	for _, secret := range []string{apiKey, ghToken, sshKey} {
		for _, b := range bodies {
			require.NotContains(t, b, secret, "a model request")
		}
		for _, w := range written {
			require.NotContains(t, w, secret, "a file spawn or the coder wrote")
		}
		require.NotContains(t, branch, secret, "the branch")
	}
}

// Without bubblewrap, a coder that reaches past its own git store into
// the user's repository (a tag, core.hooksPath) is caught after its turn:
// both are undone, reported as critical sandbox_tamper findings, and the
// run ends with exit code 7, its work kept on its branch.
func TestTamperWithoutSandboxIsUndoneAndReported(t *testing.T) {
	repo := ""
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "w", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/work.txt", "content": "work\n"}}}},
		{Tools: []modelserver.ToolCall{{ID: "c", Name: "Bash", Input: map[string]any{"command": "git add work.txt && git commit -q -m work && git -C ../../.. tag evil && git -C ../../.. config core.hooksPath /tmp/x", "description": "tamper"}}}},
		{Text: "Done."},
	}}}}
	var before guardedState
	r := runSoloWith(t, sc, "do the work", func(c *config.Config) {
		c.Sandbox.Isolation = isolation.ModeNone
		c.Permissions.AllowedTools = append(c.Permissions.AllowedTools, "Bash(git:*)")
	}, func(r *soloRun, e observability.Event) {
		if e.Kind == observability.EventStarted {
			repo = r.repo
			before = takeGuarded(t, repo, e.Run)
		}
	})
	for _, req := range r.srv.Requests() {
		for _, res := range req.ToolResults() {
			t.Logf("tool %s error=%v: %s", res.ID, res.IsError, res.Content)
		}
	}
	require.Error(t, r.err)
	assert.Equal(t, fault.KindSandboxTamper, KindOf(r.err))
	assert.Equal(t, fault.ExitTamper, r.rec.ExitCode)
	assert.Equal(t, "none", r.rec.Isolation.Mode)
	assert.Contains(t, r.rec.Isolation.Reason, "none")
	assert.Equal(t, before, takeGuarded(t, r.repo, r.rec.ID), "the branch and the config are back")

	var what []string
	for _, f := range r.rec.SecurityFindings {
		assert.Equal(t, observability.FindingSandboxTamper, f.Kind)
		assert.Equal(t, observability.SeverityCritical, f.Severity)
		what = append(what, f.Description)
	}
	joined := strings.Join(what, "\n")
	assert.Contains(t, joined, ".git/config was changed")
	assert.Contains(t, joined, "refs/tags/evil was created")
	assert.Contains(t, testenv.Git(t, r.repo, "log", "--format=%s", r.rec.Branch), "work", "the work is kept on the branch")
	assert.Contains(t, strings.Join(r.rec.Notes, "\n"), "NO SANDBOX", "running without bubblewrap is said loudly")
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// With network = "model-only", the coder still works through the model
// relay, but nothing it runs reaches anything else, not even a server on
// the same machine.
func TestModelOnlyNetworkReachesOnlyTheModel(t *testing.T) {
	requireBwrap(t)
	reached := make(chan string, 10)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached <- r.URL.Path }))
	defer other.Close()
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "fetch", Name: "Bash", Input: map[string]any{"command": "git ls-remote " + other.URL + "/exfiltrate", "description": "call out"}}}},
		{Tools: []modelserver.ToolCall{{ID: "w", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/done.txt", "content": "done\n"}}}},
		{Text: "Done."},
	}}}}
	r := runSolo(t, sc, "call out", func(c *config.Config) {
		c.Sandbox.Isolation = isolation.ModeBwrap
		c.Sandbox.Network = isolation.NetworkModelOnly
		c.Permissions.AllowedTools = append(c.Permissions.AllowedTools, "Bash(git:*)")
	})
	require.NoError(t, r.err)
	assert.Equal(t, "model-only", r.rec.Isolation.Network)
	var fetch modelserver.ToolResultSeen
	for _, req := range r.srv.Requests() {
		for _, res := range req.ToolResults() {
			if res.ID == "fetch" {
				fetch = res
			}
		}
	}
	assert.True(t, fetch.IsError, "the call out failed: %s", fetch.Content)
	assert.Empty(t, reached, "no request left the sandbox but to the model")
	assert.Contains(t, fetch.Content, "connect", "the sandbox has no route out")
	assert.Contains(t, r.rec.CommandLines[0].Argv, "--unshare-net")
	assert.Contains(t, testenv.Git(t, r.rec.SandboxPath, "show", "HEAD:done.txt"), "done")
}

// With --branch outside spawn/<id>/, the run's branch is the user's name
// but still the only ref of the user's that moves: the coder commits and
// moves refs in its own store, and spawn publishes its work on the run's
// branch alone.
func TestUserChosenBranchIsStillTheOnlyRefTheRunMoves(t *testing.T) {
	requireBwrap(t)
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "w", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/work.txt", "content": "work\n"}}}},
		{Tools: []modelserver.ToolCall{{ID: "commit", Name: "Bash", Input: map[string]any{"command": "git add work.txt && git commit -q -m mine", "description": "commit"}}}},
		{Tools: []modelserver.ToolCall{{ID: "move", Name: "Bash", Input: map[string]any{"command": "git update-ref refs/heads/main HEAD", "description": "move main"}}}},
		{Text: "Done."},
	}}}}
	srv := testenv.ModelServer(t, sc)
	repo := testenv.Repo(t)
	main := testenv.Git(t, repo, "rev-parse", "main")
	cfg := testConfig()
	cfg.Team.Mode = observability.ModeSolo
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = testenv.Claude(t) })
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 0 })
	cfg.Sandbox.Isolation = isolation.ModeBwrap
	cfg.Permissions.AllowedTools = append(cfg.Permissions.AllowedTools, "Bash(git:*)")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec, err := Run(ctx, Options{Task: "do the work", RepoDir: repo, Branch: "feature/mine", Config: cfg, Env: testenv.Env(t, srv.ClaudeEnv()...)}, nil)
	require.NoError(t, err)
	assert.Equal(t, "feature/mine", rec.Branch)

	results := map[string]modelserver.ToolResultSeen{}
	for _, req := range srv.Requests() {
		for _, res := range req.ToolResults() {
			results[res.ID] = res
		}
	}
	assert.False(t, results["commit"].IsError, "the coder commits in its own store: %s", results["commit"].Content)
	assert.Equal(t, main, testenv.Git(t, repo, "rev-parse", "main"), "its main is its own store's, not the user's")
	assert.Equal(t, "work\n", testenv.Git(t, repo, "show", "feature/mine:work.txt")+"\n", "spawn published the work on the run's branch")
	assert.Contains(t, testenv.Git(t, repo, "log", "--format=%s", "feature/mine"), "mine")
	assert.Empty(t, rec.SecurityFindings)
}

// What the user and other runs do in the repository while an agent works
// is theirs: a commit on main and a new branch of the user's, and another
// run's branch, made during the coder's turn, are all still there when
// the run ends, and none is a sandbox_tamper finding. Under bubblewrap the
// agents cannot write any of it, so nothing is checked or undone; without
// it, the guard leaves every run's spawn/ branches alone (it cannot tell
// the user's own commit on main from an agent's there, see
// TestTamperWithoutSandboxIsUndoneAndReported).
func TestOthersWorkDuringATurnIsKept(t *testing.T) {
	for _, mode := range []isolation.Mode{isolation.ModeBwrap, isolation.ModeNone} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == isolation.ModeBwrap {
				requireBwrap(t)
			}
			sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
				{Tools: []modelserver.ToolCall{{ID: "w", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/work.txt", "content": "work\n"}}}},
				{Text: "Done."},
			}}}}
			var userHead string
			r := runSoloWith(t, sc, "do the work", func(c *config.Config) {
				c.Sandbox.Isolation = mode
			}, func(r *soloRun, e observability.Event) {
				if e.Kind != observability.EventAgent || e.Agent == nil || e.Agent.Kind != "file_changed" {
					return
				}
				// The coder is in its turn: another run makes its branch.
				testenv.Git(t, r.repo, "branch", "spawn/20990101-000000-beef/other-task", "HEAD")
				if mode == isolation.ModeBwrap {
					// The user goes on working: a commit on main, a branch.
					require.NoError(t, os.WriteFile(filepath.Join(r.repo, "mine.txt"), []byte("mine\n"), 0o644))
					testenv.Git(t, r.repo, "add", "mine.txt")
					testenv.Git(t, r.repo, "commit", "-q", "-m", "my own work")
					testenv.Git(t, r.repo, "branch", "my-feature")
					userHead = testenv.Git(t, r.repo, "rev-parse", "main")
				}
			})
			require.NoError(t, r.err)
			assert.Equal(t, observability.StatusSucceeded, r.rec.Status)
			assert.Empty(t, r.rec.SecurityFindings)
			assert.NotEmpty(t, testenv.Git(t, r.repo, "rev-parse", "--verify", "spawn/20990101-000000-beef/other-task"), "the other run's branch")
			if mode == isolation.ModeBwrap {
				require.NotEmpty(t, userHead, "the user committed during the coder's turn")
				assert.Equal(t, userHead, testenv.Git(t, r.repo, "rev-parse", "main"), "main keeps the user's commit")
				assert.Equal(t, userHead, testenv.Git(t, r.repo, "rev-parse", "my-feature"))
			}
			assert.Equal(t, "work", testenv.Git(t, r.repo, "show", r.rec.Branch+":work.txt"))
		})
	}
}
