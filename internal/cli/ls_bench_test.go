package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/runstest"
)

// BenchmarkLs1000Runs is `spawn ls` in a repository whose registry holds
// 1,000 runs, the whole command as a person runs it: finding the
// repository (git), repairing abandoned runs (there are none), listing,
// and printing the table.
func BenchmarkLs1000Runs(b *testing.B) {
	repo := testenv.Repo(b)
	runstest.Fill(b, filepath.Join(repo, ".spawn"), 1000, 0)
	env := os.Environ()
	args := []string{"spawn", "ls", "--repo", repo}
	var out, errw bytes.Buffer
	if code := Main(args, env, strings.NewReader(""), &out, &errw); code != 0 {
		b.Fatalf("spawn ls: exit %d: %s", code, errw.String())
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1001 {
		b.Fatalf("spawn ls printed %d lines, want a header and 1,000 runs:\n%s", lines, out.String())
	}
	for b.Loop() {
		if code := Main(args, env, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("spawn ls: exit %d", code)
		}
	}
}
