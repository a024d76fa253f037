package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// openJail runs the git helper unconfined, with env: what spawn does
// without bubblewrap (its confined form is tested in package spawn).
type openJail struct{ env []string }

func (j openJail) Confine(c proc.Cmd) proc.Cmd {
	c.Env = j.env
	return c
}

// testExe is this test binary, which answers as spawn's git helper.
func testExe(tb testing.TB) string {
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return exe
}

// newSandbox makes a sandbox of a fresh repository.
func newSandbox(t *testing.T) (*Sandbox, openJail) {
	t.Helper()
	repo := testenv.Repo(t)
	env := testenv.Env(t)
	plan, err := Prepare(t.Context(), Request{RepoDir: repo, ID: "20261123-000000-abcd", Task: "the task", Env: env})
	require.NoError(t, err)
	sb, err := plan.Create(t.Context(), testExe(t))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, sb.Close()) })
	return sb, openJail{env}
}

// The sandbox is not a linked worktree of the user's repository: the
// coder's store is a directory of its own that borrows the user's objects
// through alternates, and the user's repository holds only the run's
// branch, at the base, which only Save moves.
func TestTheCoderHasAGitStoreOfItsOwn(t *testing.T) {
	sb, _ := newSandbox(t)
	fi, err := os.Lstat(filepath.Join(sb.Path, ".git"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir(), "the store is a directory, not a pointer into the user's .git")
	alt, err := os.ReadFile(filepath.Join(sb.Path, ".git", "objects", "info", "alternates"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(sb.Repo.Dir, ".git", "objects")+"\n", string(alt))
	assert.NotContains(t, testenv.Git(t, sb.Repo.Dir, "worktree", "list"), sb.Path, "no worktree of the user's repository")
	assert.Equal(t, sb.Base, testenv.Git(t, sb.Repo.Dir, "rev-parse", sb.Branch))
	assert.Equal(t, "refs/heads/"+sb.Branch, testenv.Git(t, sb.Path, "symbolic-ref", "HEAD"))
	assert.FileExists(t, filepath.Join(sb.Path, "README.md"))
	assert.Equal(t, "Test User", testenv.Git(t, sb.Path, "config", "user.name"), "the coder commits as the user would")
}

// The branch spawn names is not looked up before the run (it holds the
// run's id): if it exists all the same when the sandbox is made, Create
// fails, moves nothing and leaves nothing behind.
func TestCreateNeverTakesABranchThatExists(t *testing.T) {
	repo := testenv.Repo(t)
	env := testenv.Env(t)
	plan, err := Prepare(t.Context(), Request{RepoDir: repo, ID: "20261123-000000-abcd", Task: "the task", Env: env})
	require.NoError(t, err)
	testenv.Git(t, repo, "commit", "--quiet", "--allow-empty", "-m", "meanwhile")
	meanwhile := testenv.Git(t, repo, "rev-parse", "HEAD")
	testenv.Git(t, repo, "branch", plan.Branch, meanwhile)
	sb, err := plan.Create(t.Context(), testExe(t))
	require.Error(t, err)
	assert.Nil(t, sb)
	assert.Contains(t, err.Error(), plan.Branch)
	assert.Equal(t, meanwhile, testenv.Git(t, repo, "rev-parse", plan.Branch), "the branch stays where it was")
	assert.NoDirExists(t, plan.Path, "nothing is left of the sandbox")
}

// The run's branch is made while the worktree is checked out: when the
// checkout fails (here a blob of the base is missing from the user's
// store), Create fails, the branch is taken away again and nothing is left
// behind.
func TestCreateThatCannotCheckOutLeavesNoBranch(t *testing.T) {
	repo := testenv.Repo(t)
	env := testenv.Env(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "lost.txt"), []byte("a blob that goes missing\n"), 0o644))
	testenv.Git(t, repo, "add", "lost.txt")
	testenv.Git(t, repo, "commit", "--quiet", "-m", "lost")
	blob := testenv.Git(t, repo, "rev-parse", "HEAD:lost.txt")
	require.NoError(t, os.Remove(filepath.Join(repo, ".git", "objects", blob[:2], blob[2:])))
	plan, err := Prepare(t.Context(), Request{RepoDir: repo, ID: "20261128-000000-abcd", Task: "the task", Env: env})
	require.NoError(t, err)
	sb, err := plan.Create(t.Context(), testExe(t))
	require.Error(t, err)
	assert.Nil(t, sb)
	assert.Contains(t, err.Error(), "check out")
	assert.Empty(t, testenv.Git(t, repo, "for-each-ref", "refs/heads/spawn/"), "no branch of the run is left")
	assert.NoDirExists(t, plan.Path, "nothing is left of the sandbox")
}

// Save commits what the coder left, publishes the coder's own commits and
// spawn's into the user's repository (the objects verified) and moves the
// run's branch there; Head is the published tip. A save with nothing new
// costs no publish and changes nothing.
func TestSavePublishesTheCodersWorkOnTheRunsBranch(t *testing.T) {
	ctx := t.Context()
	sb, jail := newSandbox(t)
	require.NoError(t, os.WriteFile(filepath.Join(sb.Path, "a.txt"), []byte("a\n"), 0o644))
	testenv.Git(t, sb.Path, "add", "a.txt")
	testenv.Git(t, sb.Path, "commit", "-q", "-m", "the coder's own")
	require.NoError(t, os.WriteFile(filepath.Join(sb.Path, "b.txt"), []byte("b\n"), 0o644))

	saved, err := sb.Save(ctx, jail, "spawn: b")
	require.NoError(t, err)
	require.NotEmpty(t, saved.Committed)
	assert.Equal(t, saved.Committed, saved.Published)
	require.Len(t, saved.Own, 2)
	assert.Equal(t, "the coder's own", saved.Own[0].Subject)
	assert.Equal(t, saved.Committed, testenv.Git(t, sb.Repo.Dir, "rev-parse", sb.Branch), "the run's branch is the coder's tip")
	assert.Equal(t, "b", testenv.Git(t, sb.Repo.Dir, "show", sb.Branch+":b.txt"), "its objects are in the user's repository")
	assert.Equal(t, "Test User", testenv.Git(t, sb.Repo.Dir, "log", "-1", "--format=%an", sb.Branch), "spawn commits as the user")
	head, err := sb.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, saved.Committed, head)
	testenv.Git(t, sb.Repo.Dir, "fsck", "--strict", "--no-dangling")

	again, err := sb.Save(ctx, jail, "spawn: nothing")
	require.NoError(t, err)
	assert.Empty(t, again.Committed)
	assert.Nil(t, again.Own)
	assert.Equal(t, saved.Committed, again.Published)
}

// What the coder staged with git itself (a rename with git mv, a
// deletion with git rm) is saved and published as it is in the index.
func TestSavePublishesWhatTheCoderStaged(t *testing.T) {
	ctx := t.Context()
	sb, jail := newSandbox(t)
	testenv.Git(t, sb.Path, "mv", "README.md", "READ-ME.md")
	require.NoError(t, os.WriteFile(filepath.Join(sb.Path, "gone.txt"), []byte("gone\n"), 0o644))
	testenv.Git(t, sb.Path, "add", "gone.txt")
	testenv.Git(t, sb.Path, "commit", "-q", "-m", "the coder's own")
	testenv.Git(t, sb.Path, "rm", "-q", "gone.txt")

	saved, err := sb.Save(ctx, jail, "spawn: the rest")
	require.NoError(t, err)
	require.NotEmpty(t, saved.Committed)
	assert.Equal(t, "READ-ME.md", testenv.Git(t, sb.Repo.Dir, "ls-tree", "--name-only", sb.Branch))
	assert.Empty(t, testenv.Git(t, sb.Path, "status", "--porcelain"), "nothing is left uncommitted")
}

// A coder that points its store's HEAD at refs/heads/main (in its own
// store) and leaves work behind moves nothing of the user's: spawn's
// commit lands in the coder's store, and what the user's repository gets
// is the run's branch, moved by compare-and-swap; Save says where HEAD
// pointed.
func TestARedirectedHeadMovesOnlyTheRunsBranch(t *testing.T) {
	sb, jail := newSandbox(t)
	main := testenv.Git(t, sb.Repo.Dir, "rev-parse", "main")
	require.NoError(t, os.WriteFile(filepath.Join(sb.Path, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sb.Path, "w.txt"), []byte("w\n"), 0o644))
	saved, err := sb.Save(t.Context(), jail, "spawn: w")
	require.NoError(t, err)
	assert.Equal(t, "refs/heads/main", saved.HeadRef)
	assert.Equal(t, main, testenv.Git(t, sb.Repo.Dir, "rev-parse", "main"), "the user's main")
	assert.Equal(t, saved.Committed, testenv.Git(t, sb.Repo.Dir, "rev-parse", sb.Branch))
}

// The store is found at the path spawn made, never through a pointer: a
// .git the coder replaced with a file or a link is refused, and nothing
// moves.
func TestAReplacedStoreIsRefused(t *testing.T) {
	for _, replace := range []func(t *testing.T, git string){
		func(t *testing.T, git string) {
			require.NoError(t, os.Rename(git, git+".moved"))
			require.NoError(t, os.WriteFile(git, []byte("gitdir: "+git+".moved\n"), 0o644))
		},
		func(t *testing.T, git string) {
			require.NoError(t, os.Rename(git, git+".moved"))
			require.NoError(t, os.Symlink(git+".moved", git))
		},
	} {
		sb, jail := newSandbox(t)
		replace(t, filepath.Join(sb.Path, ".git"))
		require.NoError(t, os.WriteFile(filepath.Join(sb.Path, "w.txt"), []byte("w\n"), 0o644))
		_, err := sb.Save(t.Context(), jail, "spawn: w")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not the directory spawn made")
		assert.Equal(t, sb.Base, testenv.Git(t, sb.Repo.Dir, "rev-parse", sb.Branch))
	}
}

// Repository-configured programs in the coder's store (an fsmonitor and
// hooks) do not run when spawn saves: spawn's git is hardened against
// them even where nothing else confines it.
func TestSaveRunsNoProgramTheStoreConfigures(t *testing.T) {
	sb, jail := newSandbox(t)
	mark := filepath.Join(t.TempDir(), "ran")
	payload := filepath.Join(t.TempDir(), "payload.sh")
	require.NoError(t, os.WriteFile(payload, []byte("#!/bin/sh\necho $0 >> "+mark+"\n"), 0o755))
	hooks := filepath.Join(sb.Path, "hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	for _, h := range []string{"pre-commit", "post-commit", "reference-transaction"} {
		require.NoError(t, os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\n"+payload+"\n"), 0o755))
	}
	testenv.Git(t, sb.Path, "config", "core.fsmonitor", payload)
	testenv.Git(t, sb.Path, "config", "core.hooksPath", hooks)
	require.NoError(t, os.WriteFile(filepath.Join(sb.Path, "w.txt"), []byte("w\n"), 0o644))
	saved, err := sb.Save(t.Context(), jail, "spawn: w")
	require.NoError(t, err)
	assert.NotEmpty(t, saved.Committed)
	assert.NoFileExists(t, mark)
}

// The helper's answer is data from the coder's side: a pack that does not
// verify (here: a commit whose tree is missing) is refused, and the run's
// branch stays where it was.
func TestAnUnverifiablePackMovesNothing(t *testing.T) {
	sb, _ := newSandbox(t)
	other := testenv.Repo(t)
	require.NoError(t, os.WriteFile(filepath.Join(other, "x.txt"), []byte("x\n"), 0o644))
	testenv.Git(t, other, "add", "x.txt")
	testenv.Git(t, other, "commit", "-q", "-m", "x")
	tip := testenv.Git(t, other, "rev-parse", "HEAD")
	// Only the commit object, without its tree.
	pack := filepath.Join(t.TempDir(), "pack")
	cmd := exec.Command("sh", "-c", "echo "+tip+" | git pack-objects --stdout > "+pack)
	cmd.Dir = other
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	packed, err := os.ReadFile(pack)
	require.NoError(t, err)
	var said bytes.Buffer
	said.WriteString(`{"tip":"` + tip + `","pack":true}` + "\n")
	frames := &frameWriter{w: &said}
	_, err = frames.Write(packed)
	require.NoError(t, err)
	require.NoError(t, frames.end())
	said.WriteString("{}\n")
	answer := filepath.Join(t.TempDir(), "answer")
	require.NoError(t, os.WriteFile(answer, said.Bytes(), 0o644))
	forged := fakeHelper{script: "cat " + answer + "; cat >/dev/null"}
	_, err = sb.Save(t.Context(), forged, "spawn: nothing")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "could not be verified")
	assert.Equal(t, sb.Base, testenv.Git(t, sb.Repo.Dir, "rev-parse", sb.Branch))
	_, err = exec.Command("git", "-C", sb.Repo.Dir, "cat-file", "-e", tip).CombinedOutput()
	assert.Error(t, err, "the commit did not enter the user's repository")
}

// The pack streams into the user's git as the helper sends it: a pack cut
// short (the helper's pack-objects failed halfway), or one that is not a
// pack at all (more than a pipe holds, so that the import stops reading
// while the helper still writes), fails the save without hanging, and the
// run's branch and the user's store are as they were.
func TestAPackCutShortOrForgedMovesNothing(t *testing.T) {
	other := testenv.Repo(t)
	require.NoError(t, os.WriteFile(filepath.Join(other, "x.txt"), []byte("x\n"), 0o644))
	testenv.Git(t, other, "add", "x.txt")
	testenv.Git(t, other, "commit", "-q", "-m", "x")
	tip := testenv.Git(t, other, "rev-parse", "HEAD")
	cmd := exec.Command("git", "pack-objects", "--revs", "--stdout", "-q")
	cmd.Dir, cmd.Stdin = other, strings.NewReader(tip+"\n")
	packed, err := cmd.Output()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, want string
		pack       []byte
		end        string
	}{
		{"cut short", "pack the objects", packed[:len(packed)/2], `{"error":"pack the objects: signal: killed"}`},
		{"not a pack", "could not be verified", bytes.Repeat([]byte("not a pack "), 200_000), "{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, _ := newSandbox(t)
			var said bytes.Buffer
			said.WriteString(`{"tip":"` + tip + `","pack":true}` + "\n")
			frames := &frameWriter{w: &said}
			_, err := frames.Write(tc.pack)
			require.NoError(t, err)
			require.NoError(t, frames.end())
			said.WriteString(tc.end + "\n")
			answer := filepath.Join(t.TempDir(), "answer")
			require.NoError(t, os.WriteFile(answer, said.Bytes(), 0o644))
			_, err = sb.Save(t.Context(), fakeHelper{script: "cat " + answer + "; cat >/dev/null"}, "spawn: nothing")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, sb.Base, testenv.Git(t, sb.Repo.Dir, "rev-parse", sb.Branch), "the branch did not move")
			_, err = exec.Command("git", "-C", sb.Repo.Dir, "cat-file", "-e", tip).CombinedOutput()
			assert.Error(t, err, "the commit did not enter the user's repository")
		})
	}
}

// fakeHelper answers in the helper's place with a shell script.
type fakeHelper struct{ script string }

func (f fakeHelper) Confine(c proc.Cmd) proc.Cmd {
	c.Path, c.Args, c.Env = "sh", []string{"-c", f.script}, []string{"PATH=/usr/bin:/bin"}
	return c
}

// The note about uncommitted changes is about the user's: spawn's own
// .spawn directory, which the run creates (and excludes from git) while
// the check runs, is not one of them; any other untracked file is.
func TestDirtyIsAboutTheUsersChangesOnly(t *testing.T) {
	ctx := context.Background()
	repo := testenv.Repo(t)
	if err := os.MkdirAll(filepath.Join(repo, Dir, "runs", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	prepare := func(id string) Plan {
		plan, err := Prepare(ctx, Request{RepoDir: repo, ID: id, Task: "t", Env: testenv.Env(t)})
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	if dirty, err := prepare("20261123-000000-0001").Dirty(); err != nil || dirty {
		t.Fatalf("with only an unexcluded .spawn/: dirty %v, err %v; want clean", dirty, err)
	}
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if dirty, err := prepare("20261123-000000-0002").Dirty(); err != nil || !dirty {
		t.Fatalf("with an untracked file of the user's: dirty %v, err %v; want dirty", dirty, err)
	}
}

// countingJail is openJail that counts the helpers it starts.
type countingJail struct {
	openJail
	starts *int
}

func (j countingJail) Confine(c proc.Cmd) proc.Cmd {
	*j.starts++
	return j.openJail.Confine(c)
}

// One git helper serves a sandbox's saves (a sandbox start each would cost
// a bubblewrap), started ahead of the first: a pack larger than a frame arrives whole, a helper that
// died between two saves is replaced, and Close leaves no helper running.
func TestOneHelperServesTheSavesOfASandbox(t *testing.T) {
	sb, open := newSandbox(t)
	starts := 0
	jail := countingJail{open, &starts}
	ctx := t.Context()
	sb.Start(jail) // in the background, as a run starts it before the coder's turn
	sb.Start(jail) // one is starting: nothing more
	big := make([]byte, 3*maxFrame+17)
	for i := range big {
		big[i] = byte(i*7919 + i/251) // little for zlib to fold
	}
	require.NoError(t, os.WriteFile(filepath.Join(sb.Path, "big.bin"), big, 0o644))
	first, err := sb.Save(ctx, jail, "big")
	require.NoError(t, err)
	require.NotEmpty(t, first.Committed)
	assert.Equal(t, testenv.Git(t, sb.Repo.Dir, "hash-object", "--no-filters", filepath.Join(sb.Path, "big.bin")),
		testenv.Git(t, sb.Repo.Dir, "rev-parse", sb.Branch+":big.bin"), "the user's repository holds the file whole")
	testenv.Git(t, sb.Repo.Dir, "cat-file", "-e", sb.Branch+":big.bin")

	for i := range 3 {
		require.NoError(t, os.WriteFile(filepath.Join(sb.Path, fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o644))
		saved, err := sb.Save(ctx, jail, fmt.Sprintf("save %d", i))
		require.NoError(t, err)
		assert.Equal(t, saved.Committed, testenv.Git(t, sb.Repo.Dir, "rev-parse", sb.Branch))
	}
	assert.Equal(t, 1, starts, "one helper for every save")

	// The helper dies between two saves: the next save starts another.
	helper := sb.helper
	helper.p.Kill()
	<-helper.p.Done()
	require.NoError(t, os.WriteFile(filepath.Join(sb.Path, "after.txt"), []byte("x\n"), 0o644))
	saved, err := sb.Save(ctx, jail, "after a death")
	require.NoError(t, err)
	assert.Equal(t, saved.Committed, testenv.Git(t, sb.Repo.Dir, "rev-parse", sb.Branch))
	assert.Equal(t, 2, starts)

	// A save whose ctx ended kills the helper; the next one works.
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = sb.Save(done, jail, "cancelled")
	require.ErrorIs(t, err, context.Canceled)
	st, err := sb.Inspect(ctx, jail)
	require.NoError(t, err)
	assert.Zero(t, st.Uncommitted)

	helper = sb.helper
	require.NoError(t, sb.Close())
	select {
	case <-helper.p.Done():
	default:
		t.Fatal("the helper runs on after Close")
	}
	assert.Nil(t, sb.helper)
}

// A helper that is still starting when the sandbox closes is stopped with
// it: Close waits for the start.
func TestCloseStopsAHelperStillStarting(t *testing.T) {
	sb, open := newSandbox(t)
	sb.Start(open)
	require.NoError(t, sb.Close())
	assert.Nil(t, sb.helper)
	assert.Nil(t, sb.starting)
}

// What the caller's git process found (runs.OpenRepoAt) is what Prepare
// would find itself: taken for the same directory and base, it runs no
// process; for another base, it is not taken.
func TestPrepareTakesTheRepositoryTheCallerFound(t *testing.T) {
	repo, env := testenv.Repo(t), testenv.Env(t)
	found, err := Find(t.Context(), repo, "HEAD", env)
	require.NoError(t, err)
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	require.Equal(t, string(bytes.TrimSpace(head)), found.SHA)

	var mu sync.Mutex
	var ran []string
	ctx := proc.WithTrace(t.Context(), &proc.Trace{Waited: func(what string, _, _ time.Time) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, what)
	}})
	plan, err := Prepare(ctx, Request{RepoDir: repo, ID: "20261128-000000-abcd", Task: "t", Env: env, Found: &found})
	require.NoError(t, err)
	_, err = plan.Dirty()
	require.NoError(t, err)
	assert.Equal(t, found.SHA, plan.Base)
	assert.Equal(t, found.Repo.Dir, plan.Repo.Dir)
	assert.Equal(t, []string{"git"}, ran, "only the background status of the repository runs")

	ran = nil
	other := found
	other.SHA = "0000000000000000000000000000000000000001"
	plan, err = Prepare(ctx, Request{RepoDir: repo, Base: "main", ID: "20261128-000000-abce", Task: "t", Env: env, Found: &other})
	require.NoError(t, err)
	_, err = plan.Dirty()
	require.NoError(t, err)
	assert.Equal(t, found.SHA, plan.Base, "a Found of another base is not taken")
	assert.Len(t, ran, 2, "its own rev-parse, and the status")
}
