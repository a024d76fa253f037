package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// Head answers from what Save saw or made while nothing touched the
// worktree, and asks git again once an agent may have: after Touch, a
// commit made in the worktree behind spawn's back is the tip Head names.
func TestHeadFollowsSaveAndWhatAgentsCommit(t *testing.T) {
	ctx := context.Background()
	repo := testenv.Repo(t)
	plan, err := Prepare(ctx, Request{RepoDir: repo, ID: "20261123-000000-abcd", Task: "the task", Env: testenv.Env(t)})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := plan.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sb.Path, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, sha, err := sb.Save(ctx, "spawn: a")
	if err != nil || sha == "" {
		t.Fatalf("Save: sha %q, err %v", sha, err)
	}
	if head, err := sb.Head(ctx); err != nil || head != sha {
		t.Fatalf("Head after Save: %q, %v; want %s", head, err, sha)
	}

	sb.Touch() // an agent's turn: it commits by itself
	if err := os.WriteFile(filepath.Join(sb.Path, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, sb.Path, "add", "b.txt")
	testenv.Git(t, sb.Path, "commit", "-q", "-m", "the agent's own")
	want := testenv.Git(t, sb.Path, "rev-parse", "HEAD")
	if head, err := sb.Head(ctx); err != nil || head != want {
		t.Fatalf("Head after an agent committed: %q, %v; want %s", head, err, want)
	}
	own, _, err := sb.Save(ctx, "spawn: nothing left")
	if err != nil || len(own) != 2 {
		t.Fatalf("Save after the agent's commit: own %v, err %v; want spawn's and the agent's commits", own, err)
	}
	if head, err := sb.Head(ctx); err != nil || head != want {
		t.Fatalf("Head after a Save with nothing to commit: %q, %v; want %s", head, err, want)
	}
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
