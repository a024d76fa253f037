package git

import (
	"context"
	"fmt"
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
	want := Status{Head: head, Branch: "main", Paths: []string{"a file.go", "gone.go", "old name.go", "new name.go", "moved-sub", "both.go", "dir/untracked file"}, unsure: map[string]bool{"both.go": true},
		staged:    map[string]bool{"gone.go": true, "old name.go": true, "new name.go": true},
		untracked: map[string]bool{"dir/untracked file": true}}
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

// commitRepo is a new repository in a temporary directory whose git
// commands write what they are (GIT_TRACE2) to the file ran names.
func commitRepo(t *testing.T) (r Repo, ran func() []string) {
	t.Helper()
	dir, trace := t.TempDir(), filepath.Join(t.TempDir(), "trace")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "XDG_CONFIG_HOME=" + t.TempDir(),
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x", "GIT_TRACE2=" + trace}
	r = Repo{Dir: dir, Env: env}
	if _, err := r.Run(context.Background(), "init", "--quiet", "--initial-branch=work"); err != nil {
		t.Fatal(err)
	}
	return r, func() []string {
		b, _ := os.ReadFile(trace)
		os.Remove(trace)
		var names []string
		for _, line := range strings.Split(string(b), "\n") {
			if _, rest, ok := strings.Cut(line, " cmd_name "); ok {
				name, _, _ := strings.Cut(rest, " ")
				names = append(names, name)
			}
		}
		return names
	}
}

// commitFile writes body to the file name in r's work tree and commits
// everything with msg; it returns the commit.
func commitFile(t *testing.T, r Repo, name, body, msg string) string {
	t.Helper()
	writeFile(t, r.Dir, name, body)
	return commitAll(t, r, msg)
}

// commitAll commits everything r's work tree holds with the message msg
// (Repo.CommitAll), failing t unless that makes a commit, and returns it.
func commitAll(t *testing.T, r Repo, msg string) string {
	t.Helper()
	sha, err := r.CommitAll(context.Background(), msg)
	if err != nil || !IsOID(sha) {
		t.Fatalf("CommitAll = %q, %v", sha, err)
	}
	return sha
}

// runGit runs each of cmds in r, in order, failing t at the first error.
func runGit(t *testing.T, r Repo, cmds ...[]string) {
	t.Helper()
	for _, args := range cmds {
		if _, err := r.Run(context.Background(), args...); err != nil {
			t.Fatal(err)
		}
	}
}

// committedAll fails t unless r's work tree holds nothing uncommitted.
func committedAll(t *testing.T, r Repo) {
	t.Helper()
	if left, _ := r.Status(context.Background()); left != "" {
		t.Fatalf("left uncommitted: %q", left)
	}
}

// writeFile writes body to the file name in dir.
func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestASmallIndexIsCommittedByOneGitCommitAndALargeOneIsNot(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		files   int
		want    []string // the commands that make the commit, after status and add
		tracked []string // those that commit changes to tracked files, after status
	}{
		{"small", 10, []string{"commit"}, []string{"commit"}},
		{"large", 4000, []string{"write-tree", "commit-tree", "update-ref"}, []string{"add", "write-tree", "commit-tree", "update-ref"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ran := commitRepo(t)
			for i := range tc.files {
				if err := os.WriteFile(filepath.Join(r.Dir, fmt.Sprintf("file-%04d.txt", i)), []byte("a\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			first := commitAll(t, r, "first")
			writeFile(t, r.Dir, "file-0001.txt", "b\n")
			writeFile(t, r.Dir, "new.txt", "new\n")
			ran()
			sha := commitAll(t, r, "second\n\n  body  \n")
			if got := ran(); !reflect.DeepEqual(got, append([]string{"status", "add"}, tc.want...)) {
				t.Fatalf("the commit ran %q, want status, add, then %q", got, tc.want)
			}
			if tip, _ := r.Resolve(ctx, "refs/heads/work"); tip != sha {
				t.Fatalf("the branch is at %s, want the new commit %s", tip, sha)
			}
			if parents, _ := r.Run(ctx, "rev-list", "--parents", "-n1", sha); parents != sha+" "+first {
				t.Fatalf("the commit and its parents are %q, want %s on %s", parents, sha, first)
			}
			if body, _ := r.Run(ctx, "cat-file", "-p", sha); !strings.HasSuffix(body, "\n\nsecond\n\n  body") {
				t.Fatalf("the message is not cleaned as git commit cleans it: %q", body)
			}
			if changed, _ := r.Run(ctx, "diff", "--name-only", first, sha); changed != "file-0001.txt\nnew.txt" {
				t.Fatalf("the commit changed %q, want file-0001.txt and new.txt", changed)
			}
			if reflog, _ := r.Run(ctx, "reflog", "-1", "--format=%gs", "refs/heads/work"); reflog != "commit: second" {
				t.Fatalf("the branch's reflog says %q", reflog)
			}
			// Tracked files only, one deleted: on a small index, git commit
			// stages them itself.
			writeFile(t, r.Dir, "file-0002.txt", "c\n")
			if err := os.Remove(filepath.Join(r.Dir, "new.txt")); err != nil {
				t.Fatal(err)
			}
			ran()
			third := commitAll(t, r, "third")
			if got := ran(); !reflect.DeepEqual(got, append([]string{"status"}, tc.tracked...)) {
				t.Fatalf("the commit of tracked files ran %q, want status, then %q", got, tc.tracked)
			}
			if changed, _ := r.Run(ctx, "diff", "--name-status", sha, third); changed != "M\tfile-0002.txt\nD\tnew.txt" {
				t.Fatalf("the commit changed %q, want file-0002.txt changed and new.txt deleted", changed)
			}
			committedAll(t, r)
		})
	}
}

func TestACommitDoesNotConcludeAMergeInProgress(t *testing.T) {
	ctx := context.Background()
	r, _ := commitRepo(t)
	first := commitFile(t, r, "a.txt", "a\n", "first")
	runGit(t, r, []string{"checkout", "--quiet", "-b", "other"}, []string{"rm", "--quiet", "a.txt"}, []string{"commit", "--quiet", "-m", "other"},
		[]string{"checkout", "--quiet", "work"}, []string{"merge", "--quiet", "--no-commit", "--no-ff", "other"})
	sha := commitFile(t, r, "b.txt", "b\n", "mine")
	if parents, _ := r.Run(ctx, "rev-list", "--parents", "-n1", sha); parents != sha+" "+first {
		t.Fatalf("the commit and its parents are %q, want %s on %s alone", parents, sha, first)
	}
	if _, err := os.Lstat(filepath.Join(r.Dir, ".git", "MERGE_HEAD")); err != nil {
		t.Fatalf("the merge in progress was ended: %v", err)
	}
}

func TestWhatTheCoderStagedItselfIsCommitted(t *testing.T) {
	ctx := context.Background()
	r, _ := commitRepo(t)
	for _, name := range []string{"gone.txt", "old.txt", "kept.txt"} {
		writeFile(t, r.Dir, name, name+"\n")
	}
	commitAll(t, r, "first")
	// git rm and git mv leave paths that are in neither the index nor the
	// work tree, which git add refuses.
	runGit(t, r, []string{"rm", "--quiet", "gone.txt"}, []string{"mv", "old.txt", "new.txt"})
	sha := commitFile(t, r, "kept.txt", "changed\n", "second")
	if files, _ := r.Run(ctx, "ls-tree", "--name-only", sha); files != "kept.txt\nnew.txt" {
		t.Fatalf("the commit holds %q, want kept.txt and new.txt", files)
	}
	committedAll(t, r)
}

func TestCommitPathsCommitsOnlyThePathsItIsGiven(t *testing.T) {
	ctx := context.Background()
	r, _ := commitRepo(t)
	writeFile(t, r.Dir, "b.txt", "b\n")
	commitFile(t, r, "a.txt", "a\n", "first")
	writeFile(t, r.Dir, "a.txt", "a2\n")
	writeFile(t, r.Dir, "b.txt", "b2\n")
	st, err := r.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sha, err := r.CommitPaths(ctx, "a only", st, []string{"a.txt"})
	if err != nil || !IsOID(sha) {
		t.Fatalf("CommitPaths = %q, %v", sha, err)
	}
	if changed, _ := r.Run(ctx, "diff", "--name-only", sha+"^", sha); changed != "a.txt" {
		t.Fatalf("the commit changed %q, want a.txt alone", changed)
	}
	if left, _ := r.Status(ctx); left != " M b.txt" {
		t.Fatalf("left uncommitted: %q, want b.txt", left)
	}
}
