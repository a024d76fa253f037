package spawn

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/demo"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// BenchmarkPingpongOverhead is what spawn adds to a two-round pingpong run
// (coder, review, fix, review: the demo's task) beyond the agents' own
// time, for every coder with every reviewer of another family: the run's
// wall time minus the wall time of every agent process in its
// command_lines. Metrics: overhead-ms per agent process, overhead-% of
// the wall time, the wall and agent times, and where the overhead goes:
// setup-ms before the first agent, between-ms from one agent's end to the
// next one's start (mean), finish-ms after the last; and of the overhead,
// waited-ms/proc spawn spent waiting for the processes it needs (git,
// bubblewrap, its git helper: proc.Trace) and code-ms/proc the rest, its
// own code; waits/proc how many processes (and answers of the helper)
// it waited for per agent process, and git-exec-ms what a bare
// `git --version` takes beside them.
func BenchmarkPingpongOverhead(b *testing.B) {
	reg := runners.NewRegistry()
	bins := map[string]string{"claude": testenv.Claude(b), "codex": testenv.Codex(b), "gemini": testenv.Gemini(b)}
	for _, coder := range reg.Adapters() {
		for _, reviewer := range reg.Adapters() {
			if coder.Family() == reviewer.Family() {
				continue
			}
			// One repository for the pair's runs, as a user's: its toolchain
			// cache (the coder runs go test) is warm after the first.
			base := testenv.Env(b)
			repo, err := demo.Repo(context.Background(), filepath.Join(b.TempDir(), "calc"), base)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(coder.Name()+"-"+reviewer.Name(), func(b *testing.B) {
				cfg := testConfig()
				cfg.Team.Mode, cfg.Team.Coder, cfg.Team.Reviewers = observability.ModePingpong, coder.Name(), []string{reviewer.Name()}
				for name, bin := range bins {
					cfg.Runners.Edit(name, func(s *runners.Settings) { s.Command, s.MaxRetries = bin, 0 })
				}
				var o overhead
				for range b.N {
					b.StopTimer()
					sc, err := demo.Scenario(coder.Provider().Route, reviewer.Provider().Route)
					if err != nil {
						b.Fatal(err)
					}
					srv := testenv.ModelServer(b, sc)
					senv, err := srv.Env(b.TempDir())
					if err != nil {
						b.Fatal(err)
					}
					env := testenv.Env(b, senv...)
					var w waits
					ctx := proc.WithTrace(context.Background(), &proc.Trace{Waited: w.add})
					b.StartTimer()
					start := time.Now()
					rec, err := Run(ctx, Options{Task: demo.Task, RepoDir: repo.Dir, Config: cfg, Env: env}, nil)
					end := time.Now()
					if err != nil {
						b.Fatal(err)
					}
					if rec.Verdict != observability.VerdictApproved {
						b.Fatalf("verdict %s, want approved", rec.Verdict)
					}
					o.add(start, end, rec.CommandLines, &w)
				}
				o.report(b)
				b.ReportMetric(gitExecMS(b, base), "git-exec-ms")
			})
		}
	}
}

// overhead adds up where a run's wall time went: the agents' processes,
// and spawn's own time before the first, between two, and after the last;
// and of that own time, how much spawn spent waiting for processes.
type overhead struct {
	runs                                 int
	procs                                int
	wall, agents, setup, between, finish time.Duration
	waited                               time.Duration
	waits                                int // processes waited for (and the helper's answers)
}

func (o *overhead) add(start, end time.Time, cls []observability.CommandLine, w *waits) {
	o.runs++
	o.wall += end.Sub(start)
	last := start
	for i, cl := range cls {
		d := time.Duration(cl.DurationMS) * time.Millisecond
		o.agents += d
		o.procs++
		if i == 0 {
			o.setup += cl.StartedAt.Sub(start)
		} else {
			o.between += cl.StartedAt.Sub(last)
		}
		o.waited += w.within(last, cl.StartedAt)
		last = cl.StartedAt.Add(d)
	}
	o.finish += end.Sub(last)
	o.waited += w.within(last, end)
	o.waits += w.count()
}

// waits are the spans a run spent waiting for processes (proc.Trace).
type waits struct {
	mu    sync.Mutex
	spans [][2]time.Time
}

func (w *waits) add(_ string, start, end time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.spans = append(w.spans, [2]time.Time{start, end})
}

// count is how many waits there were.
func (w *waits) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.spans)
}

// within is how long, from..to, at least one wait ran: waits that ran at
// the same time count once.
func (w *waits) within(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var spans [][2]time.Time
	for _, s := range w.spans {
		a, b := s[0], s[1]
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if a.Before(b) {
			spans = append(spans, [2]time.Time{a, b})
		}
	}
	slices.SortFunc(spans, func(x, y [2]time.Time) int { return x[0].Compare(y[0]) })
	var total time.Duration
	var end time.Time
	for _, s := range spans {
		switch {
		case !s[0].Before(end): // after every span before it
			total += s[1].Sub(s[0])
			end = s[1]
		case s[1].After(end): // overlaps the last, and goes on
			total += s[1].Sub(end)
			end = s[1]
		}
	}
	return total
}

func (o *overhead) report(b *testing.B) {
	over := o.wall - o.agents
	n := float64(o.runs)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	b.ReportMetric(ms(o.setup)/n, "setup-ms")
	if o.procs > o.runs {
		b.ReportMetric(ms(o.between)/float64(o.procs-o.runs), "between-ms")
	}
	b.ReportMetric(ms(o.finish)/n, "finish-ms")
	b.ReportMetric(ms(over)/float64(o.procs), "overhead-ms/proc")
	b.ReportMetric(ms(o.waited)/float64(o.procs), "waited-ms/proc")
	b.ReportMetric(ms(over-o.waited)/float64(o.procs), "code-ms/proc")
	b.ReportMetric(float64(o.waits)/float64(o.procs), "waits/proc")
	b.ReportMetric(100*over.Seconds()/o.wall.Seconds(), "overhead-%")
	b.ReportMetric(ms(o.wall)/n, "wall-ms")
	b.ReportMetric(ms(o.agents)/n, "agents-ms")
	b.ReportMetric(float64(o.procs)/n, "procs")
}

// gitExecMS is the mean wall time of a bare `git --version` in env, ten
// of them: what any git process costs on this machine, beside which the
// pingpong's waits are read.
func gitExecMS(b *testing.B, env []string) float64 {
	const n = 10
	start := time.Now()
	for range n {
		cmd := exec.Command("git", "--version")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git --version: %v: %s", err, out)
		}
	}
	return float64(time.Since(start).Microseconds()) / 1e3 / n
}

// BenchmarkConcurrent8 is eight one-turn solo runs at once, each a
// `spawn run --mode solo` of the built binary in a repository of its own,
// as a user starts them (the reaper, the model bridge and the hooks are
// that binary too), against eight bare claude processes doing the same
// scripted turn at once, each the command line spawn's adapter makes
// (bareCommand). Each iteration runs the eight spawns, then the eight
// claudes, so the two see the same load; ns/op is both. Metrics: spawn-ms
// and claude-ms (the wall time of each side's eight), x-vs-claude (their
// ratio), spawn-cpu-ms/run and claude-cpu-ms/run (the CPU time of one run
// and of one bare claude, every process of each) and load (the 1-minute
// load average before the runs).
func BenchmarkConcurrent8(b *testing.B) {
	const n = 8
	claude, env, _ := helloTurn(b)
	bin := testenv.Spawn(b)
	userClaude(b, env, claude)
	repos, dirs := make([]string, n), make([]string, n)
	for i := range n {
		repos[i], dirs[i] = testenv.Repo(b), testenv.Repo(b)
	}
	// all runs one(i) for the eight at once and returns their wall time.
	all := func(one func(i int) error) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = one(i) })
		}
		wg.Wait()
		d := time.Since(start)
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		return d
	}
	// The CPU time of each side's processes, every descendant included
	// (each waited for its own): on two cores, eight runs at once are
	// bound by it.
	var spawnCPU, claudeCPU atomic.Int64
	cpu := func(cmd *exec.Cmd) int64 {
		return int64(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime())
	}
	spawnRun := func(i int) error {
		cmd := exec.Command(bin, "run", "--mode", "solo", "create hello.txt")
		cmd.Dir, cmd.Env = repos[i], env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("spawn run: %w: %s", err, out)
		}
		spawnCPU.Add(cpu(cmd))
		return nil
	}
	adapter, err := runners.NewRegistry().Lookup("claude")
	if err != nil {
		b.Fatal(err)
	}
	base, _ := strings.CutPrefix(env[slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "ANTHROPIC_BASE_URL=") })], "ANTHROPIC_BASE_URL=")
	cfg := testConfig()
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 0 })
	// The bare commands are made before each iteration's eight start:
	// making one may fail the benchmark, which only its goroutine may do.
	bares := make([]*exec.Cmd, n)
	bare := func(i int) error {
		if out, err := bares[i].CombinedOutput(); err != nil {
			return fmt.Errorf("claude: %w: %s", err, out)
		}
		claudeCPU.Add(cpu(bares[i]))
		return nil
	}
	load, loadKnown := testenv.LoadAverage()
	var spawnTime, claudeTime time.Duration
	b.ResetTimer()
	for range b.N {
		spawnTime += all(spawnRun)
		b.StopTimer()
		for i := range bares {
			bares[i] = bareCommand(b, adapter, claude, cfg, base, env, dirs[i], "create hello.txt")
		}
		b.StartTimer()
		claudeTime += all(bare)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(ms(spawnTime), "spawn-ms")
	b.ReportMetric(ms(claudeTime), "claude-ms")
	b.ReportMetric(spawnTime.Seconds()/claudeTime.Seconds(), "x-vs-claude")
	perRun := func(ns int64) float64 { return float64(ns) / 1e6 / float64(b.N*n) }
	b.ReportMetric(perRun(spawnCPU.Load()), "spawn-cpu-ms/run")
	b.ReportMetric(perRun(claudeCPU.Load()), "claude-cpu-ms/run")
	if loadKnown {
		b.ReportMetric(load, "load")
	}
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
// against exec of `true`: the start-up cost of the CLI; and the built
// spawn-shim as the git helper with nothing to answer: the start-up cost
// of each of spawn's own processes around an agent (its reaper, a
// reviewer's model bridge, the git helper).
func BenchmarkVersionStartup(b *testing.B) {
	bin := testenv.Spawn(b)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	shim := filepath.Join(filepath.Dir(bin), "spawn-shim")
	for _, c := range []struct{ name, bin, arg string }{{"spawn", bin, "version"}, {"shim", shim, sandbox.HelperArg}, {"true", truePath, ""}} {
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

// TestWaitsWithin holds the profile's arithmetic: waits that overlap count
// once, and only their part within the window counts.
func TestWaitsWithin(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var w waits
	for _, s := range [][2]int{{10, 30}, {20, 40}, {25, 35}, {50, 60}, {90, 120}, {200, 210}} {
		w.add("git", at(s[0]), at(s[1]))
	}
	for _, c := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 100, 50 * time.Millisecond},  // 10-40 once, 50-60, 90-100
		{35, 55, 10 * time.Millisecond},  // 35-40, 50-55
		{60, 90, 0},                      // between waits
		{0, 300, 80 * time.Millisecond},  // all of them
		{100, 105, 5 * time.Millisecond}, // inside one
	} {
		if got := w.within(at(c.from), at(c.to)); got != c.want {
			t.Errorf("within(%d, %d) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
