package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// packOf is a pack of the objects of n new files committed in a new
// repository (which the caller's repository lacks), with the commit.
func packOf(t *testing.T, n int) (pack []byte, commit string) {
	t.Helper()
	src, _ := commitRepo(t)
	for i := range n {
		if err := os.WriteFile(filepath.Join(src.Dir, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprintf("file %d of %d\n", i, n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commit, err := src.CommitAll(context.Background(), "files")
	if err != nil {
		t.Fatal(err)
	}
	c := src.cmd("pack-objects", "--revs", "--stdout", "-q")
	c.Stdin = strings.NewReader(commit + "\n")
	out, err := proc.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return out, commit
}

func TestImportPackImportsOnlyAWholeGoodPack(t *testing.T) {
	ctx := context.Background()
	small, smallTip := packOf(t, 3)
	large, largeTip := packOf(t, 120)
	for _, tc := range []struct {
		name string
		pack []byte
		tip  string // the commit the import must hold; "" when it must fail
	}{
		{"small, as loose objects", small, smallTip},
		{"large, as a pack", large, largeTip},
		{"cut short", small[:len(small)-30], ""},
		{"a byte changed", append(append(append([]byte(nil), small[:40]...), small[40]^0xff), small[41:]...), ""},
		{"not a pack", []byte("not a pack, but long enough"), ""},
		{"shorter than a header", []byte("PACK"), ""},
		{"empty", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := commitRepo(t)
			err := r.ImportPack(ctx, bytes.NewReader(tc.pack))
			has := func(sha string) bool {
				_, err := r.Run(ctx, "cat-file", "-e", sha+"^{commit}")
				return err == nil
			}
			if tc.tip == "" {
				if err == nil {
					t.Fatal("ImportPack = nil, want an error")
				}
				for _, tip := range []string{smallTip, largeTip} {
					if has(tip) {
						t.Fatalf("the commit %s was imported from a bad pack", tip)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ImportPack = %v", err)
			}
			if !has(tc.tip) {
				t.Fatalf("the commit %s is not in the repository", tc.tip)
			}
			if _, err := r.Run(ctx, "fsck", "--strict", "--no-dangling", "--connectivity-only", tc.tip); err != nil {
				t.Fatalf("the imported commit is not whole: %v", err)
			}
			packs, _ := filepath.Glob(filepath.Join(r.Dir, ".git", "objects", "pack", "*.pack"))
			if large := len(tc.pack) == len(large) && bytes.Equal(tc.pack, large); large != (len(packs) == 1) {
				t.Fatalf("packs in the repository: %q", packs)
			}
		})
	}
}

// An update is a compare-and-swap, a transaction of one process kept
// running, which a refused update ends and the next update starts anew.
func TestRefUpdatesMoveTheRefOnlyFromWhereItWas(t *testing.T) {
	ctx := context.Background()
	r, _ := commitRepo(t)
	first := commitFile(t, r, "a.txt", "a\n", "first")
	second := commitFile(t, r, "a.txt", "b\n", "second")
	const ref = "refs/heads/run"
	zero := ZeroOID("sha1")
	refs := &RefUpdates{Repo: r, Msg: "test"}
	defer func() {
		if err := refs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	update := func(newOID, oldOID string) error {
		t.Helper()
		return refs.Update(ctx, ref, newOID, oldOID)
	}
	if err := update(first, zero); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := update(second, zero); !errors.Is(err, ErrStale) {
		t.Fatalf("create over a ref that exists: %v, want ErrStale", err)
	}
	if err := update(second, second); !errors.Is(err, ErrStale) {
		t.Fatalf("move from where it is not: %v, want ErrStale", err)
	}
	if err := update(strings.Repeat("1", 40), first); err == nil || errors.Is(err, ErrStale) {
		t.Fatalf("move to an object the repository lacks: %v, want an error that is not ErrStale", err)
	}
	if at, _ := r.Resolve(ctx, ref); at != first {
		t.Fatalf("the ref is at %s, want %s where it was", at, first)
	}
	if err := update(second, first); err != nil {
		t.Fatalf("move: %v", err)
	}
	if at, _ := r.Resolve(ctx, ref); at != second {
		t.Fatalf("the ref is at %s, want %s", at, second)
	}
	if msg, _ := r.Run(ctx, "reflog", "-1", "--format=%gs", ref); msg != "test" {
		t.Fatalf("the reflog says %q", msg)
	}
	// Updates that git takes are transactions of one process.
	pid := refs.p.Pid()
	for range 3 {
		if err := update(first, second); err != nil {
			t.Fatal(err)
		}
		if err := update(second, first); err != nil {
			t.Fatal(err)
		}
	}
	if refs.p.Pid() != pid {
		t.Fatalf("the updates ran in process %d, then %d", pid, refs.p.Pid())
	}
	// One killed between two updates is replaced for the next.
	refs.p.Kill()
	<-refs.p.Done()
	if err := update(first, second); err != nil {
		t.Fatalf("move after the process was killed: %v", err)
	}
}

// A ref name that could end a line of update-ref's input, or is no full
// name, never reaches git.
func TestRefUpdatesRefusesARefThatIsNoFullName(t *testing.T) {
	r, _ := commitRepo(t)
	first := commitFile(t, r, "a.txt", "a\n", "first")
	refs := &RefUpdates{Repo: r, Msg: "test"}
	for _, ref := range []string{"run", "refs/heads/a b", "refs/heads/a\nupdate refs/heads/main " + first} {
		if err := refs.Update(context.Background(), ref, first, ZeroOID("sha1")); err == nil {
			t.Errorf("Update(%q) took it", ref)
		}
	}
	if refs.p != nil {
		t.Error("a git process started")
	}
}
