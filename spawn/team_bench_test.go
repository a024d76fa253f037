package spawn

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// BenchmarkPingpongOverhead is what spawn adds to a two-round pingpong run
// (coder, review, fix, review) beyond the agents' own time: the run's wall
// time minus the wall time of every agent process in its command_lines.
// Metrics: overhead-ms per agent process, overhead-% of the wall time, the
// wall and agent times, and where the overhead goes: setup-ms before the
// first agent, between-ms from one agent's end to the next one's start
// (mean), finish-ms after the last.
func BenchmarkPingpongOverhead(b *testing.B) {
	claude, gemini := testenv.Claude(b), testenv.Gemini(b)
	bug := finding("high", "technical_feasibility", "calc.go", 19, "Total starts from one")
	srv := testenv.ModelServer(b, modelserver.Scenario{
		Anthropic: []modelserver.Script{coderTurns(5)},
		Gemini:    reviewRounds(answer("request_changes", nil, bug), answer("approve", []string{bug.ID})),
	}, modelserver.WithMaxRequests(1<<20))
	genv, err := srv.GeminiEnv(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.Team.Mode = observability.ModePingpong
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = claude })
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 0 })
	cfg.Runners.Edit("gemini", func(s *runners.Settings) { s.Command = gemini })
	cfg.Runners.Edit("gemini", func(s *runners.Settings) { s.MaxRetries = 0 })
	env := append(testenv.Env(b, srv.ClaudeEnv()...), genv...)
	var wall, agents, setup, between, finish time.Duration
	procs := 0
	for range b.N {
		repo := testenv.Repo(b) // the fixture's git work is not spawn's
		start := time.Now()
		rec, err := Run(context.Background(), Options{Task: "add the total function", RepoDir: repo, Config: cfg, Env: env}, nil)
		if err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		wall += end.Sub(start)
		if rec.Verdict != observability.VerdictApproved {
			b.Fatalf("verdict %s, want approved", rec.Verdict)
		}
		// Where the overhead is: before the first agent (preflight and
		// provisioning), between agents (a turn's git work, snapshots,
		// prompts), after the last.
		last := start
		for i, cl := range rec.CommandLines {
			d := time.Duration(cl.DurationMS) * time.Millisecond
			agents += d
			procs++
			if i == 0 {
				setup += cl.StartedAt.Sub(start)
			} else {
				between += cl.StartedAt.Sub(last)
			}
			last = cl.StartedAt.Add(d)
		}
		finish += end.Sub(last)
	}
	over := wall - agents
	n := float64(b.N)
	b.ReportMetric(float64(setup.Milliseconds())/n, "setup-ms")
	if procs > b.N {
		b.ReportMetric(float64(between.Milliseconds())/float64(procs-b.N), "between-ms")
	}
	b.ReportMetric(float64(finish.Milliseconds())/n, "finish-ms")
	b.ReportMetric(float64(over.Milliseconds())/float64(procs), "overhead-ms/proc")
	b.ReportMetric(100*over.Seconds()/wall.Seconds(), "overhead-%")
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms")
	b.ReportMetric(float64(agents.Milliseconds())/float64(b.N), "agents-ms")
	b.ReportMetric(float64(procs)/float64(b.N), "procs")
}

// BenchmarkConcurrent8 is eight one-turn solo runs at once, each in a
// repository of its own, against eight bare claude processes doing the
// same scripted turn at once. ns/op is the time for all eight.
func BenchmarkConcurrent8(b *testing.B) {
	const n = 8
	claude, env, cfg := helloTurn(b)
	repos := make([]string, n)
	for i := range repos {
		repos[i] = testenv.Repo(b)
	}
	all := func(b *testing.B, one func(i int) error) {
		for range b.N {
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() { errs[i] = one(i) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("spawn", func(b *testing.B) {
		all(b, func(i int) error {
			_, err := Run(context.Background(), Options{Task: "create hello.txt", RepoDir: repos[i], Config: cfg, Env: env}, nil)
			return err
		})
	})
	b.Run("claude", func(b *testing.B) {
		dirs := make([]string, n)
		for i := range dirs {
			dirs[i] = testenv.Repo(b)
		}
		all(b, func(i int) error {
			cmd := exec.Command(claude, "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits")
			cmd.Dir = dirs[i]
			cmd.Env = append(env, "CLAUDE_CODE_MAX_RETRIES=0")
			cmd.Stdin = strings.NewReader("create hello.txt")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("claude: %w: %s", err, out)
			}
			return nil
		})
	})
}

// BenchmarkReviewerBytes runs the five-round pingpong of
// TestReReviewsSendLessThanAFreshFullReview and reports, for rounds 2 to 5,
// the new prompt over a full re-review's prompt (rN-prompt-x) and the whole
// request over a fresh full review's (rN-request-x).
func BenchmarkReviewerBytes(b *testing.B) {
	var rounds []reviewRound
	for range b.N {
		rounds = fiveRoundPingpong(b)
	}
	for i, r := range rounds[1:] {
		b.ReportMetric(r.promptRatio(), fmt.Sprintf("r%d-prompt-x", i+2))
		b.ReportMetric(r.bodyRatio(), fmt.Sprintf("r%d-request-x", i+2))
	}
}

// BenchmarkVersionStartup execs the built spawn binary's `spawn version`
// against exec of `true`: the start-up cost of the CLI.
func BenchmarkVersionStartup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "spawn")
	build := exec.Command("go", "build", "-o", bin, "github.com/infinite-improbability-drive/spawn/cmd/spawn")
	build.Env = os.Environ()
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v: %s", err, out)
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, bin, arg string }{{"spawn", bin, "version"}, {"true", truePath, ""}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				cmd := exec.Command(c.bin)
				if c.arg != "" {
					cmd.Args = append(cmd.Args, c.arg)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%s: %v: %s", c.name, err, out)
				}
			}
		})
	}
}
