package runs

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

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// cleanRepo is a repository with one commit on main, opened as a Repo.
func cleanRepo(t *testing.T) *Repo {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	g := git.Repo{Dir: dir, Env: env}
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main"},
		{"config", "user.name", "Test User"},
		{"config", "user.email", "test@example.com"},
	} {
		_, err := g.Run(ctx, args...)
		require.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# test\n"), 0o644))
	_, err := g.CommitAll(ctx, "initial")
	require.NoError(t, err)
	repo, err := OpenRepo(ctx, dir, env)
	require.NoError(t, err)
	return repo
}

// testRun is a run made as spawn makes one: a worktree on its own branch,
// a run directory and a finished record.
type testRun struct {
	ID       string
	Branch   string
	Worktree string
	Dir      string // the run directory
	sb       *sandbox.Sandbox
	env      []string
}

// newTestRun creates a finished run from base ("" is HEAD), finished at
// finished.
func newTestRun(t *testing.T, repo *Repo, id, base string, finished time.Time) *testRun {
	t.Helper()
	ctx := context.Background()
	plan, err := sandbox.Prepare(ctx, sandbox.Request{RepoDir: repo.Dir, Base: base, ID: id, Task: "a task", Env: repo.env})
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	sb, err := plan.Create(ctx, exe)
	require.NoError(t, err)
	run, err := repo.Registry.Create(id)
	require.NoError(t, err)
	rec := observability.New(id, "a task", observability.ModeSolo, finished.Add(-time.Minute))
	rec.Repo, rec.Base, rec.Branch, rec.SandboxPath = repo.Dir, sb.Base, sb.Branch, sb.Path
	rec.Finish(observability.StatusSucceeded, 0, finished)
	require.NoError(t, observability.WriteFile(run.RecordPath(), rec, nil))
	require.NoError(t, run.Close())
	return &testRun{ID: id, Branch: sb.Branch, Worktree: sb.Path, Dir: run.Dir, sb: sb, env: repo.env}
}

// commit writes name in the run's worktree and commits it; it returns the
// commit's sha.
func (r *testRun) commit(t *testing.T, name string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(r.Worktree, name), []byte(name+"\n"), 0o644))
	saved, err := r.sb.Save(context.Background(), isolation.GitJail(isolation.Report{Mode: isolation.ModeNone}, r.env, r.sb), "add "+name)
	require.NoError(t, err)
	require.NotEmpty(t, saved.Committed)
	return saved.Committed
}

func branchExists(t *testing.T, repo *Repo, branch string) bool {
	t.Helper()
	return repo.Git.BranchExists(context.Background(), branch)
}

// kindOf is the kind of the *fault.Error in err's tree, "" when none.
func kindOf(err error) fault.Kind {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return ""
}

func cleanOK(t *testing.T, repo *Repo, opts CleanOptions) []Cleaned {
	t.Helper()
	got, err := repo.Clean(context.Background(), opts)
	require.NoError(t, err)
	return got
}

func TestCleanRefusesAnUnpushedUnmergedCommitAndForceDropsIt(t *testing.T) {
	repo := cleanRepo(t)
	run := newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	sha := run.commit(t, "work.txt")

	got := cleanOK(t, repo, CleanOptions{Refs: []string{run.ID}})
	require.Len(t, got, 1)
	assert.Equal(t, CleanRefused, got[0].Action)
	require.Len(t, got[0].Unsaved, 1)
	assert.Equal(t, run.Branch, got[0].Unsaved[0].Branch)
	assert.Equal(t, []CommitRef{{SHA: sha, Subject: "add work.txt"}}, got[0].Unsaved[0].Commits)
	assert.Contains(t, got[0].Reason, run.Branch+" has 1 commit neither merged nor pushed ("+sha[:12]+")")
	assert.Contains(t, got[0].Reason, "--force")
	assert.True(t, branchExists(t, repo, run.Branch), "a refused run keeps its branch")
	assert.True(t, exists(run.Worktree), "a refused run keeps its worktree")

	// A dry run says what --force would do, and does nothing.
	got = cleanOK(t, repo, CleanOptions{Refs: []string{run.ID}, Force: true, DryRun: true})
	assert.Equal(t, CleanWouldRemove, got[0].Action)
	assert.Equal(t, []string{run.Branch}, got[0].Branches)
	assert.Equal(t, run.Worktree, got[0].Worktree)
	assert.True(t, branchExists(t, repo, run.Branch))
	assert.True(t, exists(run.Worktree))

	got = cleanOK(t, repo, CleanOptions{Refs: []string{run.ID}, Force: true})
	assert.Equal(t, CleanRemoved, got[0].Action)
	assert.Len(t, got[0].Unsaved, 1, "what --force dropped is still named")
	assert.False(t, branchExists(t, repo, run.Branch))
	assert.False(t, exists(run.Worktree))
	assert.True(t, exists(filepath.Join(run.Dir, "record.json")), "the record stays without --purge")
	wt, err := repo.Git.Run(context.Background(), "worktree", "list", "--porcelain")
	require.NoError(t, err)
	assert.NotContains(t, wt, run.ID, "git forgets the worktree")

	// Cleaning it again has nothing to do.
	got = cleanOK(t, repo, CleanOptions{Refs: []string{run.ID}})
	assert.Equal(t, CleanNothing, got[0].Action)
}

func TestCleanRemovesAMergedRunWithoutForce(t *testing.T) {
	repo := cleanRepo(t)
	run := newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	run.commit(t, "work.txt")
	_, err := repo.Git.Run(context.Background(), "merge", "--quiet", "--no-edit", run.Branch)
	require.NoError(t, err)

	got := cleanOK(t, repo, CleanOptions{Refs: []string{"last"}})
	assert.Equal(t, CleanRemoved, got[0].Action, got[0].Reason)
	assert.Empty(t, got[0].Unsaved)
	assert.False(t, branchExists(t, repo, run.Branch))
	assert.False(t, exists(run.Worktree))
}

func TestCleanRemovesAPushedRunWithoutForce(t *testing.T) {
	repo := cleanRepo(t)
	ctx := context.Background()
	remote := t.TempDir()
	_, err := (git.Repo{Dir: remote, Env: repo.env}).Run(ctx, "init", "--quiet", "--bare")
	require.NoError(t, err)
	_, err = repo.Git.Run(ctx, "remote", "add", "origin", remote)
	require.NoError(t, err)
	run := newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	run.commit(t, "work.txt")
	_, err = repo.Git.Run(ctx, "push", "--quiet", "origin", run.Branch)
	require.NoError(t, err)

	got := cleanOK(t, repo, CleanOptions{Refs: []string{run.ID}})
	assert.Equal(t, CleanRemoved, got[0].Action, got[0].Reason)
	assert.False(t, branchExists(t, repo, run.Branch))
}

func TestCleanRemovesEveryBranchOfTheRunsNamespace(t *testing.T) {
	repo := cleanRepo(t)
	run := newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	extra := "spawn/" + run.ID + "/experiment"
	_, err := repo.Git.Run(context.Background(), "branch", extra)
	require.NoError(t, err)
	// A user's branch that merely looks alike is not the run's.
	_, err = repo.Git.Run(context.Background(), "branch", "spawn/"+run.ID+"-mine")
	require.NoError(t, err)

	got := cleanOK(t, repo, CleanOptions{Refs: []string{run.ID}})
	assert.Equal(t, CleanRemoved, got[0].Action, got[0].Reason)
	assert.ElementsMatch(t, []string{run.Branch, extra}, got[0].Branches)
	assert.False(t, branchExists(t, repo, extra))
	assert.True(t, branchExists(t, repo, "spawn/"+run.ID+"-mine"))
}

func TestCleanRefusesUncommittedWorkInTheWorktree(t *testing.T) {
	repo := cleanRepo(t)
	run := newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	require.NoError(t, os.WriteFile(filepath.Join(run.Worktree, "notes.txt"), []byte("mine\n"), 0o644))

	got := cleanOK(t, repo, CleanOptions{All: true})
	require.Len(t, got, 1)
	assert.Equal(t, CleanRefused, got[0].Action)
	assert.Equal(t, 1, got[0].Uncommitted)
	assert.Contains(t, got[0].Reason, "1 path uncommitted")
	assert.True(t, exists(filepath.Join(run.Worktree, "notes.txt")))
}

func TestCleanNeverTouchesALiveRun(t *testing.T) {
	repo := cleanRepo(t)
	ctx := context.Background()
	plan, err := sandbox.Prepare(ctx, sandbox.Request{RepoDir: repo.Dir, ID: "20250101-000000-live", Task: "live", Env: repo.env})
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	sb, err := plan.Create(ctx, exe)
	require.NoError(t, err)
	live, err := repo.Registry.Create("20250101-000000-live") // this process holds its lock
	require.NoError(t, err)
	defer func() { require.NoError(t, live.Close()) }()
	rec := observability.New(live.ID, "live", observability.ModeSolo, time.Now())
	rec.Branch, rec.SandboxPath = sb.Branch, sb.Path
	require.NoError(t, observability.WriteFile(live.RecordPath(), rec, nil))

	for _, dry := range []bool{true, false} {
		got := cleanOK(t, repo, CleanOptions{All: true, Force: true, Purge: true, DryRun: dry})
		require.Len(t, got, 1)
		assert.Equal(t, CleanLive, got[0].Action)
		assert.Contains(t, got[0].Reason, "is live")
	}
	assert.True(t, branchExists(t, repo, sb.Branch))
	assert.True(t, exists(sb.Path))
	assert.True(t, exists(live.RecordPath()))
}

func TestCleanPurgeRemovesTheRunDirectory(t *testing.T) {
	repo := cleanRepo(t)
	run := newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	got := cleanOK(t, repo, CleanOptions{Refs: []string{run.ID}, Purge: true})
	assert.Equal(t, CleanRemoved, got[0].Action, got[0].Reason)
	assert.True(t, got[0].Purged)
	assert.False(t, exists(run.Dir))
	_, err := repo.Find(run.ID)
	assert.Equal(t, fault.KindUsage, kindOf(err), "a purged run is gone from the registry")
}

// Two runs that share commits (the second started from the first's
// branch) do not keep each other's work safe: cleaning both would lose it.
func TestCleanDoesNotCountAnotherRunsBranchAsSafe(t *testing.T) {
	repo := cleanRepo(t)
	first := newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	first.commit(t, "first.txt")
	second := newTestRun(t, repo, "20250101-000001-bbbb", first.Branch, time.Now())

	got := cleanOK(t, repo, CleanOptions{All: true})
	require.Len(t, got, 2)
	for _, c := range got {
		assert.Equal(t, CleanRefused, c.Action, c.ID)
	}
	assert.True(t, branchExists(t, repo, first.Branch))
	assert.True(t, branchExists(t, repo, second.Branch))

	// A tag keeps the commit: both go.
	_, err := repo.Git.Run(context.Background(), "tag", "keep", first.Branch)
	require.NoError(t, err)
	got = cleanOK(t, repo, CleanOptions{All: true})
	for _, c := range got {
		assert.Equal(t, CleanRemoved, c.Action, c.Reason)
	}
}

func TestCleanRefusesABranchCheckedOutElsewhere(t *testing.T) {
	repo := cleanRepo(t)
	run := newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	// The user's work tree takes the branch.
	_, err := repo.Git.Run(context.Background(), "checkout", "--quiet", run.Branch)
	require.NoError(t, err)

	got := cleanOK(t, repo, CleanOptions{Refs: []string{run.ID}, Force: true})
	assert.Equal(t, CleanRefused, got[0].Action)
	assert.Contains(t, got[0].Reason, "is checked out in "+canon(repo.Dir))
	assert.True(t, branchExists(t, repo, run.Branch))
}

func TestCleanOlderThanSelectsByWhenTheRunEnded(t *testing.T) {
	repo := cleanRepo(t)
	now := time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)
	old := newTestRun(t, repo, "20250101-000000-aaaa", "", now.Add(-8*24*time.Hour))
	recent := newTestRun(t, repo, "20250101-000001-bbbb", "", now.Add(-time.Hour))

	got := cleanOK(t, repo, CleanOptions{OlderThan: 7 * 24 * time.Hour, Now: func() time.Time { return now }})
	require.Len(t, got, 1)
	assert.Equal(t, old.ID, got[0].ID)
	assert.Equal(t, CleanRemoved, got[0].Action, got[0].Reason)
	assert.True(t, branchExists(t, repo, recent.Branch))

	// --all lists only runs that had something to clean.
	got = cleanOK(t, repo, CleanOptions{All: true, DryRun: true})
	require.Len(t, got, 1)
	assert.Equal(t, recent.ID, got[0].ID)
}

func TestCleanUsageErrors(t *testing.T) {
	repo := cleanRepo(t)
	newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	for name, opts := range map[string]CleanOptions{
		"nothing selected": {},
		"ids and --all":    {Refs: []string{"last"}, All: true},
		"unknown id":       {Refs: []string{"nope"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := repo.Clean(context.Background(), opts)
			require.Error(t, err)
			assert.Equal(t, fault.KindUsage, kindOf(err))
			assert.False(t, strings.Contains(err.Error(), "\n"), "one sentence")
		})
	}
	entries, err := repo.Registry.List()
	require.NoError(t, err)
	assert.Len(t, entries, 1)
	assert.Equal(t, StateFinished, entries[0].State)
}

// Cleaning a repository that never had a run finds nothing and creates
// nothing: no .spawn/ for a lock to live in.
func TestCleanWithoutRunsCreatesNothing(t *testing.T) {
	repo := cleanRepo(t)
	got := cleanOK(t, repo, CleanOptions{All: true, Force: true, Purge: true})
	assert.Empty(t, got)
	assert.False(t, exists(filepath.Join(repo.Dir, sandbox.Dir)))
	status, err := repo.Git.Status(context.Background())
	require.NoError(t, err)
	assert.Empty(t, status)
}
