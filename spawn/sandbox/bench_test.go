package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// benchRepo is a repository of 2,000 small files in 40 folders, so that a
// worktree checkout costs something.
func benchRepo(b *testing.B) string {
	b.Helper()
	dir := testenv.Repo(b)
	for d := range 40 {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 50 {
			body := fmt.Sprintf("package pkg%02d\n\n// F%d is file %d.\nfunc F%d() int { return %d }\n", d, f, f, f, f)
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%02d.go", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	testenv.Git(b, dir, "add", "--all")
	testenv.Git(b, dir, "commit", "--quiet", "-m", "files")
	return dir
}

// BenchmarkWorktree compares spawn's sandbox provisioning (checks, exclude,
// a worktree with a store of its own, the run's branch) with a bare `git
// worktree add -b`, the two in turn in each iteration (the one that goes
// first alternates): making two thousand files is what both cost, and how
// long that takes drifts with the filesystem's state, by several times on
// a machine that was measured. Metrics: spawn-ms, git-ms and x-vs-git.
func BenchmarkWorktree(b *testing.B) {
	repo := benchRepo(b)
	env := testenv.Env(b)
	ctx := context.Background()
	provision := func(i int) {
		plan, err := Prepare(ctx, Request{RepoDir: repo, ID: fmt.Sprintf("s%d-%d", i, time.Now().UnixNano()), Task: "bench task", Env: env})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := plan.Create(ctx, testExe(b)); err != nil {
			b.Fatal(err)
		}
	}
	worktreeAdd := func(i int) {
		id := fmt.Sprintf("g%d-%d", i, time.Now().UnixNano())
		cmd := exec.Command("git", "worktree", "add", "--quiet", "-b", "raw/"+id, filepath.Join(repo, ".raw", id), "HEAD")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	var spawnTime, gitTime time.Duration
	timed := func(d *time.Duration, f func(int), i int) {
		start := time.Now()
		f(i)
		*d += time.Since(start)
	}
	for i := range b.N {
		if i%2 == 0 {
			timed(&spawnTime, provision, i)
			timed(&gitTime, worktreeAdd, i)
		} else {
			timed(&gitTime, worktreeAdd, i)
			timed(&spawnTime, provision, i)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(ms(spawnTime), "spawn-ms")
	b.ReportMetric(ms(gitTime), "git-ms")
	b.ReportMetric(spawnTime.Seconds()/gitTime.Seconds(), "x-vs-git")
}
