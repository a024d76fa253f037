package git

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestStatusListsEveryPathToStageAndTheHead(t *testing.T) {
	head := "0123456789abcdef0123456789abcdef01234567"
	out := "# branch.oid " + head + "\x00# branch.head main\x00" +
		"1 .M N... 100644 100644 100644 aaa aaa a file.go\x00" +
		"1 D. N... 100644 000000 000000 aaa 000 gone.go\x00" +
		"2 R. N... 100644 100644 100644 aaa aaa R100 new name.go\x00old name.go\x00" +
		"1 .M S.M. 160000 160000 160000 aaa aaa sub\x00" +
		"1 .M SC.. 160000 160000 160000 aaa aaa moved-sub\x00" +
		"u UU N... 100644 100644 100644 100644 aaa bbb ccc both.go\x00" +
		"? dir/untracked file\x00"
	got := parseStatusV2(out)
	want := Status{Head: head, Branch: "main", Paths: []string{"a file.go", "gone.go", "old name.go", "new name.go", "moved-sub", "both.go", "dir/untracked file"}, unsure: map[string]bool{"both.go": true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseStatusV2:\n got %#v\nwant %#v", got, want)
	}
	if st := parseStatusV2("# branch.oid (initial)\x00# branch.head main\x00"); st.Head != "" || len(st.Paths) != 0 {
		t.Fatalf("empty repository: %#v", st)
	}
}

func TestAStagedChangeTheWorkTreeUndidCommitsNothing(t *testing.T) {
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "XDG_CONFIG_HOME=" + t.TempDir(),
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x"}
	r := Repo{Dir: dir, Env: env}
	ctx := context.Background()
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Run(ctx, "init", "--quiet", "--initial-branch=work"); err != nil {
		t.Fatal(err)
	}
	write("one\n")
	first, err := r.CommitAll(ctx, "first")
	if err != nil || len(first) != 40 {
		t.Fatalf("CommitAll = %q, %v", first, err)
	}
	// Staged, then changed back in the work tree: status lists it, and
	// staging it leaves the index as HEAD has it.
	write("two\n")
	if _, err := r.Run(ctx, "add", "f.txt"); err != nil {
		t.Fatal(err)
	}
	write("one\n")
	if sha, err := r.CommitAll(ctx, "nothing"); sha != "" || err != nil {
		t.Fatalf("a change undone: CommitAll = %q, %v", sha, err)
	}
	write("three\n")
	sha, err := r.CommitAll(ctx, "  second line  \n\n\n\nbody \n\n")
	if err != nil || len(sha) != 40 {
		t.Fatalf("CommitAll = %q, %v", sha, err)
	}
	if tip, _ := r.Resolve(ctx, "refs/heads/work"); tip != sha {
		t.Fatalf("the branch HEAD names is at %s, want the new commit %s", tip, sha)
	}
	if parent, _ := r.Resolve(ctx, sha+"^"); parent != first {
		t.Fatalf("parent %s, want %s", parent, first)
	}
	if body, _ := r.Run(ctx, "cat-file", "-p", sha); !strings.HasSuffix(body, "\n\n  second line\n\nbody") {
		t.Fatalf("the message is not cleaned as git commit cleans it: %q", body)
	}
}

func TestACommitDoesNotMoveAHeadThatMovedSinceTheStatus(t *testing.T) {
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "XDG_CONFIG_HOME=" + t.TempDir(),
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x"}
	r := Repo{Dir: dir, Env: env}
	ctx := context.Background()
	if _, err := r.Run(ctx, "init", "--quiet"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CommitAll(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := r.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, "commit", "--quiet", "--allow-empty", "-m", "meanwhile"); err != nil {
		t.Fatal(err)
	}
	moved, _ := r.Resolve(ctx, "HEAD")
	if sha, err := r.CommitPaths(ctx, "late", st, st.Paths); err == nil {
		t.Fatalf("CommitPaths = %q on a HEAD that moved since the status", sha)
	}
	if head, _ := r.Resolve(ctx, "HEAD"); head != moved {
		t.Fatalf("HEAD is %s, want it left at %s", head, moved)
	}
}

func TestWorkIsCommittedAsSpawnWhenGitKnowsNoIdentity(t *testing.T) {
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "XDG_CONFIG_HOME=" + t.TempDir()}
	r := Repo{Dir: dir, Env: env}
	ctx := context.Background()
	if _, err := r.Run(ctx, "init", "--quiet"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a b.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sha, err := r.CommitAll(ctx, "first")
	if err != nil || len(sha) != 40 {
		t.Fatalf("CommitAll = %q, %v", sha, err)
	}
	if head, _ := r.Resolve(ctx, "HEAD"); head != sha {
		t.Fatalf("HEAD is %s, CommitAll said %s", head, sha)
	}
	if author, _ := r.Run(ctx, "log", "-1", "--format=%an <%ae>"); author != "spawn <spawn@localhost>" {
		t.Fatalf("author %q", author)
	}
	if sha, err := r.CommitAll(ctx, "again"); sha != "" || err != nil {
		t.Fatalf("nothing changed: CommitAll = %q, %v", sha, err)
	}
	if err := os.Remove(filepath.Join(dir, "a b.txt")); err != nil {
		t.Fatal(err)
	}
	if sha, err := r.CommitAll(ctx, "delete"); len(sha) != 40 || err != nil {
		t.Fatalf("a deletion: CommitAll = %q, %v", sha, err)
	}
	if files, _ := r.Run(ctx, "ls-files"); files != "" {
		t.Fatalf("the deletion was not committed: %q", files)
	}
}
