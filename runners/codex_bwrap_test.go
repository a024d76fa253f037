package runners

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// spawnBwrap returns the bubblewrap argv spawn runs an agent under (its
// namespaces, / read-only, a private /tmp, the given paths writable), up
// to "--", or skips the test where bubblewrap cannot run, except under
// CI=true. The network is not unshared: the scripted server listens on
// the host's loopback.
func spawnBwrap(t *testing.T, extra []string, writable ...string) []string {
	t.Helper()
	base := []string{"--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid",
		"--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	testenv.Bubblewrap(t, append(base, "--")...)
	// /tmp is private and writable, as in spawn's sandbox: codex's own
	// sandbox makes /tmp a writable root, and masks .git and .agents under
	// it with mounts, which need their mount points made. The checkout,
	// where codex is installed, is shown again: it may be under /tmp.
	root := testenv.Root(t)
	args := append([]string{"bwrap"}, append(append(base, "--tmpfs", "/tmp", "--ro-bind", root, root), extra...)...)
	for _, p := range writable {
		args = append(args, "--bind", p, p)
	}
	return append(args, "--")
}

// escapeScenario is a coder turn that writes in its worktree, outside it
// and in .git.
func escapeScenario(outside string) modelserver.Scenario {
	return modelserver.Scenario{OpenAI: []modelserver.Script{{Match: "write things", Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "call_inside", Name: "exec_command", Input: map[string]any{"cmd": "echo inside > inside.txt"}}}},
		{Tools: []modelserver.ToolCall{{ID: "call_outside", Name: "exec_command", Input: map[string]any{"cmd": "echo outside > " + outside + "/escape.txt"}}}},
		{Tools: []modelserver.ToolCall{{ID: "call_commit", Name: "exec_command", Input: map[string]any{"cmd": "git add inside.txt && git commit -qm by-the-coder"}}}},
		{Text: "done."},
	}}}}
}

// outsideDir makes a directory outside codex's writable roots in
// workspace-write mode, which are the working directory, /tmp and $TMPDIR:
// under /var/tmp. It is removed when the test ends.
func outsideDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "spawn-codex-test-")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, os.RemoveAll(dir)) })
	return dir
}

// Codex's own sandbox works inside spawn's bubblewrap: a coder writes in its
// worktree, not outside it (where spawn's sandbox would let it), and not in
// .git, so its own git commit fails.
func TestCodexSandboxNestsInBubblewrap(t *testing.T) {
	t.Parallel()
	outside := outsideDir(t)
	s := newCodexSeat(t, escapeScenario(outside), CodexWorkspaceWrite)
	s.wrap = spawnBwrap(t, nil, s.repo, s.home, s.tmp, outside)

	r := s.run(Turn{Prompt: "write things"}, "")
	require.NoError(t, r.err)
	require.NotNil(t, r.result)
	assert.False(t, r.result.IsError, r.result.ErrorMessage)

	b, err := os.ReadFile(filepath.Join(s.repo, "inside.txt"))
	require.NoError(t, err)
	assert.Equal(t, "inside\n", string(b))
	assert.NoFileExists(t, filepath.Join(outside, "escape.txt"))
	assert.Contains(t, toolResultSeen(t, s.srv, "call_outside").Content, "Read-only file system")
	assert.Contains(t, toolResultSeen(t, s.srv, "call_commit").Content, "index.lock': Read-only file system")
	assert.Equal(t, "initial", testenv.Git(t, s.repo, "log", "-1", "--format=%s"))
}

// Where bubblewrap forbids nested user namespaces, codex's sandbox cannot
// start and every command fails; with spawn's sandbox around it, full
// access is the way to run, and then spawn's sandbox is the only boundary.
func TestCodexInBubblewrapWithoutNestedNamespaces(t *testing.T) {
	t.Parallel()
	t.Run("workspace-write: every command fails", func(t *testing.T) {
		t.Parallel()
		outside := t.TempDir()
		s := newCodexSeat(t, escapeScenario(outside), CodexWorkspaceWrite)
		s.wrap = spawnBwrap(t, []string{"--disable-userns"}, s.repo, s.home, s.tmp, outside)
		r := s.run(Turn{Prompt: "write things"}, "")
		require.NoError(t, r.err)
		assert.NoFileExists(t, filepath.Join(s.repo, "inside.txt"))
		assert.Contains(t, toolResultSeen(t, s.srv, "call_inside").Content, "bwrap: Creating new namespace failed")
	})
	t.Run("full access, confined", func(t *testing.T) {
		t.Parallel()
		outside := outsideDir(t)
		s := newCodexSeat(t, escapeScenario(outside), CodexFullAccess)
		s.codex.Confined = true
		s.wrap = spawnBwrap(t, []string{"--disable-userns"}, s.repo, s.home, s.tmp, outside)
		r := s.run(Turn{Prompt: "write things"}, "")
		require.NoError(t, r.err)
		assert.FileExists(t, filepath.Join(s.repo, "inside.txt"))
		// spawn's sandbox decides: here it bound outside writable
		assert.FileExists(t, filepath.Join(outside, "escape.txt"))
		assert.Equal(t, "by-the-coder", testenv.Git(t, s.repo, "log", "-1", "--format=%s"))
		assert.False(t, strings.Contains(toolResultSeen(t, s.srv, "call_inside").Content, "bwrap"))
	})
}
