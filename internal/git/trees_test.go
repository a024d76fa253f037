package git

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

func TestTreesReadsLooseCommitsWithoutGitAndAsksGitForTheRest(t *testing.T) {
	ctx := context.Background()
	made, ran := commitRepo(t)
	packed := commitFile(t, made, "f.txt", "packed\n", "packed")
	runGit(t, made, []string{"repack", "-a", "-d", "-q"}, []string{"prune-packed"})
	loose := commitFile(t, made, "f.txt", "loose\n", "loose")
	want := map[string]string{}
	for _, sha := range []string{packed, loose} {
		tree, err := made.Run(ctx, "rev-parse", sha+"^{tree}")
		if err != nil {
			t.Fatal(err)
		}
		want[sha] = tree
	}
	r, _, err := OpenAt(ctx, made.Dir, made.Env, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Trees(ctx, []string{packed, loose})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Trees = %v, %v; want %v", got, err, want)
	}
	// The loose commit is read without git; the packed one, by git log.
	ran()
	if got, err := r.Trees(ctx, []string{loose}); err != nil || got[loose] != want[loose] {
		t.Fatalf("Trees of a loose commit = %v, %v; want %s", got, err, want[loose])
	}
	if gits := ran(); len(gits) != 0 {
		t.Fatalf("Trees of a loose commit ran git %q", gits)
	}
	if got, err := r.Trees(ctx, []string{packed}); err != nil || got[packed] != want[packed] {
		t.Fatalf("Trees of a packed commit = %v, %v; want %s", got, err, want[packed])
	}
	if gits := ran(); !reflect.DeepEqual(gits, []string{"log"}) {
		t.Fatalf("Trees of a packed commit ran git %q, want one git log", gits)
	}
}

func TestALooseObjectIsReadOnlyFromARegularFile(t *testing.T) {
	ctx := context.Background()
	made, _ := commitRepo(t)
	sha := commitFile(t, made, "f.txt", "f\n", "f")
	r, _, err := OpenAt(ctx, made.Dir, made.Env, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.looseTree(sha) == "" {
		t.Fatal("the commit's own loose object was not read")
	}
	obj := filepath.Join(r.common, "objects", sha[:2], sha[2:])
	moved := filepath.Join(t.TempDir(), "object")
	if err := os.Rename(obj, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, obj); err != nil {
		t.Fatal(err)
	}
	if tree := r.looseTree(sha); tree != "" {
		t.Fatalf("a link in place of the object was followed: %s", tree)
	}
	if err := os.Remove(obj); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(obj, 0o644); err != nil {
		t.Fatal(err)
	}
	if tree := r.looseTree(sha); tree != "" { // a wait here is the failure
		t.Fatalf("a pipe in place of the object was read: %s", tree)
	}
}

func TestHeadFromFilesReadsOnlyRegularFiles(t *testing.T) {
	r, _ := commitRepo(t)
	sha := commitFile(t, r, "f.txt", "f\n", "f")
	gitDir := filepath.Join(r.Dir, ".git")
	if got := headFromFiles(gitDir); got != sha {
		t.Fatalf("headFromFiles = %q, want %s", got, sha)
	}
	ref := filepath.Join(gitDir, "refs", "heads", "work")
	moved := filepath.Join(t.TempDir(), "ref")
	if err := os.Rename(ref, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, ref); err != nil {
		t.Fatal(err)
	}
	if got := headFromFiles(gitDir); got != "" {
		t.Fatalf("a link in place of the ref was followed: %q", got)
	}
	if err := os.Remove(ref); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(ref, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := headFromFiles(gitDir); got != "" { // a wait here is the failure
		t.Fatalf("a pipe in place of the ref was read: %q", got)
	}
}
