package isolation

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation/inside"
)

func TestMain(m *testing.M) {
	// The test binary stands in for spawn's: it answers as the model
	// bridge and the Seatbelt probe's subject, as internal/entry does.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case inside.BridgeArg:
			proc.Exit(inside.Bridge(os.Args[2:]))
		case inside.ProbeArg:
			proc.Exit(inside.ProbeSubject(os.Args[2:], os.Stdout))
		}
	}
	proc.Main()
	if kind := os.Getenv(standInEnv); kind != "" {
		os.Exit(sandboxExecStandIn(kind, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func runtimeGOOS() string { return runtime.GOOS }

// A machine without bubblewrap: auto runs unconfined and says why; bwrap
// refuses with how to install it; none never probes.
func TestWithoutBubblewrapAutoFallsBackAndBwrapFailsClosed(t *testing.T) {
	env := []string{"PATH=" + t.TempDir()}
	r, err := Resolve(context.Background(), ModeAuto, env, "")
	require.NoError(t, err)
	assert.Equal(t, ModeNone, r.Mode)
	assert.Contains(t, r.Reason, "not installed")

	_, err = Resolve(context.Background(), ModeBwrap, env, "")
	var u *Unavailable
	require.ErrorAs(t, err, &u)
	assert.Contains(t, err.Error(), "apt-get install bubblewrap")

	r, err = Resolve(context.Background(), ModeNone, []string{"PATH=/usr/bin:/bin"}, "")
	require.NoError(t, err)
	assert.Equal(t, ModeNone, r.Mode)
	assert.Contains(t, r.Reason, "configuration")
}

// The agent's command line: bwrap's namespaces, no capability and no
// nested user namespace, the system roots read-only and nothing else of the
// host (no `--ro-bind / /`, no HOME, no /tmp of the host's), the secrets of
// /etc masked, private tmpfs, mounts ordered parents before children, the
// root read-only, and the agent's own argv after "--".
func TestWrapShowsOnlyWhatItIsGiven(t *testing.T) {
	s := Spec{Bwrap: "/usr/bin/bwrap",
		ReadOnly: []string{"/home/u/src/repo/.git/objects", "/usr/local/go"},
		Writable: []string{"/home/u/src/repo/.spawn/worktrees/1", "/tmp/agents/coder"},
		Files:    []Bind{{Src: "/run/spawn/hooks.json", Dst: "/tmp/agents/coder/hooks.json"}}}
	cmd := s.Wrap(runners.Command{Path: "claude", Args: []string{"-p"}, Dir: "/home/u/src/repo/.spawn/worktrees/1", Env: []string{"A=1"}})
	assert.Equal(t, "/usr/bin/bwrap", cmd.Path)
	assert.Equal(t, []string{"A=1"}, cmd.Env)
	assert.True(t, cmd.Wrapper, "signals for the agent pass bubblewrap by")
	assert.False(t, Spec{SandboxExec: SandboxExec}.Wrap(runners.Command{Path: "claude"}).Wrapper, "sandbox-exec becomes the agent")
	argv := strings.Join(cmd.Args, " ")
	for _, want := range []string{"--die-with-parent", "--unshare-user", "--unshare-pid", "--cap-drop ALL", "--disable-userns",
		"--ro-bind /usr /usr", "--ro-bind /etc /etc", "--proc /proc", "--dev /dev", "--tmpfs /tmp", "--tmpfs /run", "--tmpfs /dev/shm",
		"--ro-bind /dev/null /etc/shadow", "--symlink ../run /var/run"} {
		assert.Contains(t, argv, want)
	}
	for _, never := range []string{"--ro-bind / /", "/home/u/src/repo /home/u/src/repo ", "--ro-bind /home ", "--bind /tmp ", "/usr/local/go", "--unshare-net"} {
		assert.NotContains(t, argv, never)
	}
	order := []string{"--tmpfs /tmp", "--ro-bind /etc /etc", "--ro-bind /dev/null /etc/shadow", "--bind /tmp/agents/coder /tmp/agents/coder",
		"--ro-bind /run/spawn/hooks.json /tmp/agents/coder/hooks.json", "--ro-bind /home/u/src/repo/.git/objects", "--bind /home/u/src/repo/.spawn/worktrees/1",
		"--remount-ro / --chdir /home/u/src/repo/.spawn/worktrees/1 -- claude -p"}
	last := -1
	for _, o := range order {
		i := strings.Index(argv, o)
		require.GreaterOrEqual(t, i, 0, o)
		assert.Greater(t, i, last, "%s comes after the previous mount", o)
		last = i
	}
	assert.Contains(t, Spec{Bwrap: "bwrap", NoNetwork: true}.Confine(proc.Cmd{Path: "true"}).Args, "--unshare-net")
}

// The agents' environment holds no credential of any kind, and spawn's
// own values replace the user's homes and API bases.
func TestAgentEnvHoldsNoCredential(t *testing.T) {
	env := AgentEnv([]string{"PATH=/bin", "ANTHROPIC_API_KEY=sk", "GITHUB_TOKEN=gh", "GH_HOST=x", "SSH_AUTH_SOCK=/s",
		"AWS_ACCESS_KEY_ID=a", "GOOGLE_APPLICATION_CREDENTIALS=/c", "DB_PASSWORD=p", "HOME=/home/u", "ANTHROPIC_BASE_URL=https://a",
		"CLAUDE_CONFIG_DIR=/home/u/.claude", "XDG_CACHE_HOME=/home/u/.cache", "LANG=C"},
		"HOME=/private", "ANTHROPIC_BASE_URL=http://127.0.0.1:1/anthropic", "ANTHROPIC_API_KEY=throwaway", "CLAUDE_CONFIG_DIR=/private/claude")
	assert.Equal(t, []string{"PATH=/bin", "LANG=C", "HOME=/private", "ANTHROPIC_BASE_URL=http://127.0.0.1:1/anthropic", "ANTHROPIC_API_KEY=throwaway", "CLAUDE_CONFIG_DIR=/private/claude"}, env,
		"each variable spawn sets replaces the user's, and spawn's homes and caches are never the user's")
}

// An agent running unconfined moves the user's branch, adds a tag,
// plants a hook and sets core.fsmonitor: the guard sees each change and
// puts everything back, and leaves the run's own branch alone.
func TestGuardUndoesRefConfigAndHookChanges(t *testing.T) {
	ctx := context.Background()
	repo := testenv.Repo(t)
	testenv.Git(t, repo, "branch", "spawn/r1/task")
	g := Guard{Git: git.Repo{Dir: repo, Env: testenv.Env(t)}, CommonDir: filepath.Join(repo, ".git"),
		Own: func(ref string) bool { return strings.HasPrefix(ref, "refs/heads/spawn/r1/") }}
	before, err := g.Take(ctx)
	require.NoError(t, err)
	main := testenv.Git(t, repo, "rev-parse", "main")
	config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)

	wt := filepath.Join(t.TempDir(), "wt")
	testenv.Git(t, repo, "worktree", "add", "-q", wt, "spawn/r1/task")
	testenv.Git(t, wt, "commit", "-q", "--allow-empty", "-m", "evil")
	testenv.Git(t, wt, "update-ref", "refs/heads/main", "HEAD")
	testenv.Git(t, wt, "tag", "v9")
	testenv.Git(t, wt, "config", "core.fsmonitor", "touch /tmp/pwned")
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "info", "attributes"), []byte("* filter=evil\n"), 0o644))
	// The committed README.md's blob, replaced in place by a backdoor.
	blob := testenv.Git(t, repo, "rev-parse", "main:README.md")
	obj := filepath.Join(repo, ".git", "objects", blob[:2], blob[2:])
	require.NoError(t, os.Chmod(obj, 0o644))
	require.NoError(t, os.WriteFile(obj, []byte("backdoor"), 0o444))

	changes, err := g.Check(ctx, before)
	require.NoError(t, err)
	var what []string
	for _, c := range changes {
		if !strings.Contains(c.What, "object store") {
			assert.True(t, c.Restored, c.What)
		}
		what = append(what, c.What)
	}
	all := strings.Join(what, "\n")
	assert.Contains(t, all, ".git/config was changed")
	assert.Contains(t, all, "refs/heads/main moved")
	assert.Contains(t, all, "refs/tags/v9 was created")
	assert.Contains(t, all, ".git/hooks/pre-commit was added")
	assert.Contains(t, all, ".git/info/attributes was created")
	assert.Contains(t, all, "objects/"[:0]+blob[:2]+"/"+blob[2:]+" was", "the replaced object")
	assert.NotContains(t, all, "spawn/r1/task", "the run's own branch may move")

	assert.Equal(t, main, testenv.Git(t, repo, "rev-parse", "main"))
	assert.Empty(t, testenv.Git(t, repo, "tag", "-l", "v9"))
	now, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, string(config), string(now))
	assert.NoFileExists(t, filepath.Join(repo, ".git", "hooks", "pre-commit"))
}

// On a machine with bubblewrap (every CI machine), Probe says a run gets
// it, and a wrapped command really runs confined: it cannot write outside
// what it was given, which is all it sees of the host's /tmp.
func TestProbeFindsWorkingBubblewrapAndItConfines(t *testing.T) {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	r := Probe(context.Background(), env, "")
	if r.Mode != ModeBwrap {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs bubblewrap: %s", r.Reason)
		}
		t.Skip(r.Reason)
	}
	ok, denied := t.TempDir(), t.TempDir()
	s := Spec{Bwrap: r.Bwrap, Writable: []string{ok}}
	cmd := s.Wrap(runners.Command{Path: "sh", Args: []string{"-c", "echo x > " + ok + "/in; echo x > " + denied + "/out"}})
	_, err := proc.Run(context.Background(), proc.Cmd{Path: cmd.Path, Args: cmd.Args, Env: env})
	var exit *proc.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Contains(t, exit.Stderr, denied, "the host's other directories are not there at all")
	assert.FileExists(t, filepath.Join(ok, "in"))
	assert.NoFileExists(t, filepath.Join(denied, "out"))
}
