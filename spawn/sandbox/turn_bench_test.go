package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// turnRepo is a committed repository of n small files, 100 to a folder.
func turnRepo(b *testing.B, n int) string {
	b.Helper()
	dir := testenv.Repo(b)
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("d%04d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		body := fmt.Sprintf("package d%04d\n\n// F%d is file %d.\nfunc F%d() int { return %d }\n", i/100, i, i, i, i)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.go", i%100)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	testenv.Git(b, dir, "add", "--all")
	testenv.Git(b, dir, "commit", "--quiet", "-m", "files")
	return dir
}

// coderTurn changes what a coder turn typically changes: two files edited,
// one added.
func coderTurn(b *testing.B, tree string, i int) {
	b.Helper()
	for _, f := range []string{"d0000/f001.go", "d0001/f002.go"} {
		if err := os.WriteFile(filepath.Join(tree, f), []byte(fmt.Sprintf("package p\n// turn %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "d0002", fmt.Sprintf("new%d.go", i)), []byte("package p\n"), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTurnCommit measures the git work spawn does after each coder
// turn (Save: spawn's git helper's status of the worktree, staging what it
// reports, commit, pack; the import into the user's repository and the
// branch's move; here without bubblewrap) against the unavoidable git
// work for the same change, run by hand in a worktree of the same
// repository: `git status --porcelain -z --untracked-files=all`, `git add
// -A` of what it reports, `git commit`. On a small repository and on one of
// 50,000 files. Metrics: spawn-ms and git-ms per turn, x-vs-git (spawn's
// time over git's), and, for the finish of a run where nothing changed
// since the last commit, idle-ms; old-x-vs-git is the sequence spawn ran
// before (log, add --all, diff --cached, config, commit, rev-parse) over
// git's, for comparison in the same run.
func BenchmarkTurnCommit(b *testing.B) {
	for _, size := range []struct {
		name  string
		files int
	}{{"small", 300}, {"50k", 50000}} {
		// Made once for the sub-benchmark's runs (testing calls its function
		// for b.N = 1 first).
		ctx := context.Background()
		repo := turnRepo(b, size.files)
		env := testenv.Env(b)
		var turn int
		b.Run(size.name, func(b *testing.B) {
			plan, err := Prepare(ctx, Request{RepoDir: repo, ID: fmt.Sprintf("t%d", time.Now().UnixNano()), Task: "bench", Env: env})
			if err != nil {
				b.Fatal(err)
			}
			sb, err := plan.Create(ctx, testExe(b))
			jail := openJail{env}
			if err != nil {
				b.Fatal(err)
			}
			raw := filepath.Join(repo, ".raw"+plan.ID)
			testenv.Git(b, repo, "worktree", "add", "--quiet", "-b", "raw"+plan.ID, raw, "HEAD")
			// old is spawn's sequence before one status per turn, by hand:
			// log, add --all, diff --cached, config, commit, rev-parse.
			old := filepath.Join(repo, ".old"+plan.ID)
			testenv.Git(b, repo, "worktree", "add", "--quiet", "-b", "old"+plan.ID, old, "HEAD")
			gitIn := func(dir, stdin string, args ...string) (string, error) {
				cmd := exec.Command("git", args...)
				cmd.Dir, cmd.Stdin, cmd.Env = dir, strings.NewReader(stdin), env
				out, err := cmd.Output()
				return string(out), err
			}
			git := func(stdin string, args ...string) string {
				out, err := gitIn(raw, stdin, args...)
				if err != nil {
					b.Fatalf("git %v: %v", args, err)
				}
				return out
			}
			var spawnTime, gitTime, idleTime, oldTime time.Duration
			b.ResetTimer()
			for range b.N {
				turn++
				i := turn
				b.StopTimer()
				coderTurn(b, sb.Path, i)
				coderTurn(b, raw, i)
				coderTurn(b, old, i)
				b.StartTimer()

				start := time.Now()
				saved, err := sb.Save(ctx, jail, fmt.Sprintf("turn %d", i))
				if err != nil || saved.Committed == "" {
					b.Fatalf("commit: %q, %v", saved.Committed, err)
				}
				spawnTime += time.Since(start)

				start = time.Now()
				status := git("", "status", "--porcelain", "-z", "--untracked-files=all")
				var paths []string
				for _, f := range strings.Split(status, "\x00") {
					if len(f) > 3 {
						paths = append(paths, f[3:])
					}
				}
				git(strings.Join(paths, "\x00"), "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
				git("", "commit", "--quiet", "--no-verify", "-m", fmt.Sprintf("turn %d", i))
				gitTime += time.Since(start)

				// The finish of the run: nothing changed since.
				start = time.Now()
				if saved, err := sb.Save(ctx, jail, "finish"); err != nil || saved.Committed != "" {
					b.Fatalf("idle commit: %q, %v", saved.Committed, err)
				}
				idleTime += time.Since(start)

				start = time.Now()
				for _, args := range [][]string{{"log", "--reverse", "--format=%H%x00%s", "HEAD~1..HEAD"}, {"add", "--all"}, {"diff", "--cached", "--quiet"}, {"config", "user.email"}, {"commit", "--quiet", "--no-verify", "-m", "old"}, {"rev-parse", "HEAD"}} {
					if _, err := gitIn(old, "", args...); err != nil && args[0] != "diff" {
						b.Fatalf("git %v: %v", args, err)
					}
				}
				oldTime += time.Since(start)
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(spawnTime.Microseconds())/1e3/n, "spawn-ms")
			b.ReportMetric(float64(gitTime.Microseconds())/1e3/n, "git-ms")
			b.ReportMetric(float64(idleTime.Microseconds())/1e3/n, "idle-ms")
			b.ReportMetric(spawnTime.Seconds()/gitTime.Seconds(), "x-vs-git")
			b.ReportMetric(oldTime.Seconds()/gitTime.Seconds(), "old-x-vs-git")
		})
	}
}
