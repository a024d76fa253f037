package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// OpenAt learns, from a subdirectory, the top, the .git and the commit a
// revision names, with what git itself answers for each; a revision
// naming nothing is no error, a directory outside git is ErrNotRepo.
func TestOpenAtAnswersAsGitDoes(t *testing.T) {
	ctx := context.Background()
	top := testenv.Repo(t)
	env := testenv.Env(t)
	sub := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	r, sha, err := OpenAt(ctx, sub, env, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if want := testenv.Git(t, top, "rev-parse", "HEAD"); sha != want {
		t.Errorf("sha %q, want %q", sha, want)
	}
	realTop, _ := filepath.EvalSymlinks(top)
	if got, _ := filepath.EvalSymlinks(r.Dir); got != realTop {
		t.Errorf("top %q, want %q", r.Dir, top)
	}
	common, err := r.CommonDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := filepath.EvalSymlinks(common); got != filepath.Join(realTop, ".git") {
		t.Errorf("common dir %q, want %s/.git", common, top)
	}
	if _, sha, err := OpenAt(ctx, sub, env, "no-such-branch"); err != nil || sha != "" {
		t.Errorf("a revision naming nothing: sha %q, err %v; want none, no error", sha, err)
	}
	if _, _, err := OpenAt(ctx, t.TempDir(), env, "HEAD"); !errors.Is(err, ErrNotRepo) {
		t.Errorf("outside git: %v, want ErrNotRepo", err)
	}

	// A linked worktree's own git directory, read from its .git file, is
	// the one git names.
	wt, err := r.AddWorktree(ctx, filepath.Join(t.TempDir(), "wt"), "side", sha)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := wt.GitDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := testenv.Git(t, wt.Dir, "rev-parse", "--absolute-git-dir"); dir != want {
		t.Errorf("GitDir %q, want %q", dir, want)
	}
	if c, _ := wt.CommonDir(ctx); c != common {
		t.Errorf("the worktree's common dir %q, want %q", c, common)
	}
}
