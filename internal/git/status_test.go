package git

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
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
	want := Status{Head: head, Paths: []string{"a file.go", "gone.go", "old name.go", "new name.go", "moved-sub", "both.go", "dir/untracked file"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseStatusV2:\n got %#v\nwant %#v", got, want)
	}
	if st := parseStatusV2("# branch.oid (initial)\x00# branch.head main\x00"); st.Head != "" || len(st.Paths) != 0 {
		t.Fatalf("empty repository: %#v", st)
	}
}

func TestCommitSummaryGivesTheFullSHA(t *testing.T) {
	sha := "d707a15ecc7ed3a7e8def992f423a2fc05d004aa"
	for out, want := range map[string]string{
		"[main " + sha + "] x y\n 1 file changed\n":               sha,
		"[main (root-commit) " + sha + "] first\n":                sha,
		"[detached HEAD " + sha + "] x\n":                         sha,
		"[spawn/a]b " + sha + "] subject with ] brackets [x y]\n": sha,
		"[main d707a15] short\n":                                  "",
		"nothing to commit, working tree clean\n":                 "",
		"": "",
	} {
		if got := summarySHA(out); got != want {
			t.Errorf("summarySHA(%q) = %q, want %q", out, got, want)
		}
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
