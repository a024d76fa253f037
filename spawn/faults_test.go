package spawn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// writeThenFinish is a coder that writes draft.txt and says it is done.
func writeThenFinish() modelserver.Scenario {
	return turns(
		modelserver.Turn{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/draft.txt", "content": "the coder's work\n"}}}},
		modelserver.Turn{Text: "Wrote draft.txt."},
	)
}

// breakDir replaces dir with a regular file, so that nothing can be written
// in it any more (permission bits do not stop root).
func breakDir(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.WriteFile(dir, []byte("not a directory\n"), 0o644))
}

// The run directory becomes unwritable mid-run (the disk fills): the
// coder's work is committed first, then the failure is reported truthfully
// with exit 1, and the record in memory still says what was committed.
func TestRecordUnwritableMidRunStillCommitsTheWork(t *testing.T) {
	broken := false
	r := runSoloWith(t, writeThenFinish(), "write a draft", nil, func(r *soloRun, e observability.Event) {
		if !broken && e.Kind == observability.EventAgent && e.Agent.Kind == observability.ProgressFileChanged {
			broken = true
			breakDir(t, filepath.Join(r.repo, sandbox.Dir, "runs", e.Run))
		}
	})
	require.True(t, broken)
	require.Error(t, r.err)
	assert.Equal(t, fault.KindInternal, KindOf(r.err), r.err.Error())
	assert.Equal(t, fault.ExitInternal, r.rec.ExitCode)
	assert.Contains(t, r.err.Error(), "cannot write the record")
	assert.Contains(t, r.err.Error(), "the work is committed on "+r.rec.Branch)
	assert.Equal(t, "the coder's work", testenv.Git(t, r.repo, "show", r.rec.Branch+":draft.txt"), "the work is committed")
	require.NotEmpty(t, r.rec.Commits, "the record never claims the coder changed nothing")
}

// A transcript that cannot be created is spawn's failure (internal, exit
// 1), not the agent's crash. The agent never starts: the model has no
// script to answer with.
func TestTranscriptCreateFailureIsInternal(t *testing.T) {
	broken := false
	r := runSoloWith(t, modelserver.Scenario{}, "write a draft", nil, func(r *soloRun, e observability.Event) {
		if !broken && e.Kind == observability.EventPhase && e.Phase == observability.PhaseCoder {
			broken = true
			breakDir(t, filepath.Join(r.repo, sandbox.Dir, "runs", e.Run))
		}
	})
	require.Error(t, r.err)
	assert.Equal(t, fault.KindInternal, KindOf(r.err), r.err.Error())
	assert.NotEqual(t, fault.KindAgentCrashed, KindOf(r.err))
}

// The user deletes the worktree mid-run: spawn says the sandbox's worktree
// is gone and where the branch is, instead of a fork/exec error.
func TestWorktreeDeletedMidRunSaysSo(t *testing.T) {
	deleted := false
	r := runSoloWith(t, writeThenFinish(), "write a draft", nil, func(r *soloRun, e observability.Event) {
		if !deleted && e.Kind == observability.EventAgent && e.Agent.Kind == observability.ProgressFileChanged {
			deleted = true
			require.NoError(t, os.RemoveAll(filepath.Join(r.repo, sandbox.Dir, "worktrees", e.Run)))
		}
	})
	require.True(t, deleted)
	require.Error(t, r.err)
	assert.Equal(t, fault.KindSandboxGone, KindOf(r.err), r.err.Error())
	assert.Contains(t, r.err.Error(), "the sandbox's worktree is gone")
	assert.Contains(t, r.err.Error(), "the branch "+r.rec.Branch)
	assert.NotContains(t, r.err.Error(), "fork/exec")
}

// .spawn/runs cannot be written: spawn refuses before creating anything
// (no branch, no worktree), instead of leaving a sandbox without a record.
func TestUnwritableRegistryCreatesNothing(t *testing.T) {
	repo := testenv.Repo(t)
	require.NoError(t, os.MkdirAll(filepath.Join(repo, sandbox.Dir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, sandbox.Dir, "runs"), nil, 0o644))
	cfg := testConfig()
	cfg.Team.Mode = observability.ModeSolo
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = "git" }) // any binary: the checks come first
	rec, err := Run(t.Context(), Options{Task: "do it", RepoDir: repo, Config: cfg, Env: testenv.Env(t)}, nil)
	require.Error(t, err)
	assert.Equal(t, fault.ExitUsage, rec.ExitCode)
	assert.Contains(t, err.Error(), "cannot keep run records in")
	assert.NoDirExists(t, filepath.Join(repo, sandbox.Dir, "worktrees"))
	assert.Equal(t, "main", strings.TrimSpace(testenv.Git(t, repo, "branch", "--format=%(refname:short)")))
}
