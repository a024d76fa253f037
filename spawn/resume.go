package spawn

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
	"github.com/infinite-improbability-drive/spawn/team"
)

// ResumeOptions is a run to continue.
type ResumeOptions struct {
	// Ref names the run: its id, a unique prefix of it, or "last".
	Ref string
	// MoreRounds is how many review rounds the continuation may run
	// beyond the last finished one; 0 means what max_iterations leaves,
	// and at least one.
	MoreRounds int
	// Config is the configuration now: the agents, their permissions,
	// budgets and timeouts. The mode and the task are the run's.
	Config  config.Config
	RepoDir string // a directory in the repository; "" is the current one
	Env     []string
	Hurry   <-chan struct{}
	Grace   time.Duration
	Now     func() time.Time
	// Notes are what the repository's configuration asked for that spawn
	// did not do (config.Loaded.Notes).
	Notes []string
}

// Resume continues a run that ended without an approval (interrupted,
// timed out, stopped by a budget, abandoned, or out of rounds) in its own
// worktree and branch: the coder's session is resumed and the loop goes on
// from the round it stopped at, with its findings (team.Continue). The
// run's record gains the new entries (nothing in it is rewritten but its
// outcome, and a resumes entry keeps the outcome it had); its events go on
// in the same event log. It returns the record, which is never nil, and
// an error deciding the exit code as Run's does.
//
// A run that is live (another process holds it), approved, a finished
// solo run, or whose worktree is gone is not resumed: a usage or
// sandbox_gone *fault.Error says why, and nothing changes. An abandoned run is
// repaired first.
func Resume(ctx context.Context, opts ResumeOptions, sink Sink) (*observability.Record, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Grace == 0 {
		opts.Grace = proc.DefaultGrace
	}
	if sink == nil {
		sink = Discard
	}
	started := opts.Now()
	fail := func(err error) (*observability.Record, error) {
		return rejected(Options{Config: opts.Config, Now: opts.Now}, started, err), err
	}
	repo, err := runs.OpenRepo(ctx, opts.RepoDir, opts.Env)
	if err != nil {
		return fail(err)
	}
	e, err := repo.Find(opts.Ref)
	if err != nil {
		return fail(err)
	}
	dir, err := repo.Registry.Acquire(e.ID)
	var live *runs.LiveError
	if errors.As(err, &live) {
		return fail(fault.Errorf(fault.KindUsage, err, "%v; wait for it to end, or stop it with spawn stop %s, before resuming it", err, e.ID))
	}
	if err != nil {
		return fail(fault.Errorf(fault.KindInternal, err, "cannot open run %s: %v", e.ID, err))
	}
	r, from, err := reopen(ctx, repo, dir, opts, sink)
	if err != nil {
		return fail(errors.Join(err, dir.Close()))
	}
	verdict, err := team.Continue(ctx, r.pre.policy, r.rec.Task, r.rec.Base, r, from, r.lastReviewRound(from, opts.MoreRounds))
	return r.finish(ctx, verdict, err)
}

// reopen checks that the run can go on, repairs it if it was abandoned,
// and sets it up again as a run in progress: its sandbox, its confinement,
// its record and event log, marked resumed. On error nothing changed but
// the repair.
func reopen(ctx context.Context, repo *runs.Repo, dir *runs.Run, opts ResumeOptions, sink Sink) (*run, team.Progress, error) {
	rec, err := dir.ReadRecord()
	if err != nil {
		return nil, team.Progress{}, fault.Errorf(fault.KindInternal, err, "cannot read run %s: %v", dir.ID, err)
	}
	if rec.Status == observability.StatusRunning {
		// Abandoned: this process holds its lock now.
		if _, err := repo.FinishAbandoned(ctx, dir, rec, nil, opts.Now); err != nil {
			return nil, team.Progress{}, err
		}
	}
	if rec.Mode == observability.ModePR {
		return nil, team.Progress{}, fault.Errorf(fault.KindNotImplemented, nil, "run %s is a spawn pr run, which spawn resume cannot continue; its replies are on the pull request and its commits on its branch: spawn pr %d takes up the threads still open", dir.ID, prNumberOf(rec))
	}
	from := team.ProgressOf(rec)
	if err := team.Continuable(rec.Mode, from); err != nil {
		return nil, team.Progress{}, fault.Errorf(fault.KindUsage, err, "run %s has %v; start a new run with spawn run", dir.ID, err)
	}
	if rec.Mode == observability.ModeGitHub {
		return nil, team.Progress{}, fault.Errorf(fault.KindNotImplemented, nil, "run %s is in github mode, which spawn resume cannot continue yet; its branch and pull request keep the work: spawn pr <number> fixes the open review threads", dir.ID)
	}
	sb, err := repo.Sandbox(ctx, dir.ID, rec)
	if err != nil {
		return nil, team.Progress{}, fault.Errorf(fault.KindSandboxGone, err, "run %s cannot be resumed: %v (the branch %s keeps its commits)", dir.ID, err, rec.Branch)
	}
	if _, err := os.Lstat(sb.Path); err != nil {
		return nil, team.Progress{}, fault.Errorf(fault.KindSandboxGone, err, "run %s cannot be resumed: its worktree %s is gone (the branch %s keeps its commits)", dir.ID, sb.Path, rec.Branch)
	}
	if sb.Legacy {
		return nil, team.Progress{}, fault.Errorf(fault.KindUsage, sandbox.ErrLegacy, "run %s cannot be resumed: its worktree was made by an older spawn, which let the coder write the repository's git state; its branch %s keeps its commits: start a new run from it with spawn run --base %s", dir.ID, rec.Branch, rec.Branch)
	}
	cfg := opts.Config
	cfg.Team.Mode = rec.Mode
	if err := cfg.Validate(); err != nil {
		return nil, team.Progress{}, err
	}
	environ := config.ReadEnvironment(opts.Env)
	pre := checked{registry: repo.Registry, plan: sandbox.Plan{Repo: repo.Git, ID: dir.ID, Branch: rec.Branch, Base: rec.Base, Path: sb.Path}, environ: environ}
	iso, isoErr := isolation.Resolve(ctx, cfg.Sandbox.Isolation, opts.Env, environ.TmpDir)
	if err := pre.checkAgents(cfg, opts.Env, iso, isoErr); err != nil {
		return nil, team.Progress{}, err
	}
	runOpts := Options{Task: rec.Task, Config: cfg, RepoDir: repo.Dir, Base: rec.Base, Branch: rec.Branch,
		Env: opts.Env, Hurry: opts.Hurry, Grace: opts.Grace, Now: opts.Now, environ: environ}
	r := &run{opts: runOpts, pre: pre, sb: sb, dir: dir, rec: rec, procs: transcripts(dir)}
	conf, err := confine(ctx, runOpts, pre.isolation, pre.seats, sb, dir.Paths, r.spend.relay, r.spend.allow(cfg.Spawn.MaxCostUSD))
	if err != nil {
		return nil, team.Progress{}, fault.Errorf(fault.KindInternal, err, "cannot confine the agents: %v", err)
	}
	red := observability.RedactorOf(environ.Secrets...)
	r.red, r.conf, r.cleanups = red, conf, []func(context.Context) error{conf.cleanup, r.fillTrees}
	r.record = newRecorder(rec, dir.RecordPath(), red)
	if r.log, err = runs.OpenEventLog(dir.EventsPath(), red); err != nil {
		return nil, team.Progress{}, errors.Join(fault.Errorf(fault.KindInternal, err, "cannot write the event log: %v", err), conf.close())
	}
	r.events = newStream(dir.ID, opts.Now, r.record, r.log, sink)
	r.emit(observability.Event{Kind: observability.EventResumed, Resume: &observability.Resume{At: opts.Now().UTC(), FromStatus: rec.Status, FromVerdict: rec.Verdict,
		FromExitCode: rec.ExitCode, FromError: rec.Error, FromDurationMS: rec.DurationMS, Round: max(from.Reviewed+1, from.Coded)}})
	for _, n := range opts.Notes {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: n})
	}
	r.emit(observability.Event{Kind: observability.EventPhase, Phase: observability.PhaseSandbox, Text: sb.Path})
	if !conf.report.Mode.Confines() {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: noSandboxWarning(conf.report)})
	}
	return r, from, nil
}

// transcripts is how many agent processes a run has kept transcripts of:
// the highest n of its <n>-<role>.* files.
func transcripts(p *runs.Run) int {
	entries, err := os.ReadDir(p.Dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "-")
		if i, err := strconv.Atoi(num); ok && err == nil {
			n = max(n, i)
		}
	}
	return n
}

// lastReviewRound is the last review round the continuation may run:
// MoreRounds (or what max_iterations leaves, at least one) after the last
// finished round, and never before the round a pending coder turn needs
// reviewed.
func (r *run) lastReviewRound(from team.Progress, more int) int {
	if more <= 0 {
		limit := r.opts.Config.Team.MaxIterations
		if r.rec.Mode == observability.ModeSequential {
			limit = 2
		}
		more = max(limit-from.Reviewed, 1)
	}
	return max(from.Reviewed+more, from.Coded)
}

// prNumberOf is the number of the pull request a run worked on; 0 when
// its record does not say.
func prNumberOf(rec *observability.Record) int {
	if rec.PullRequest == nil {
		return 0
	}
	return rec.PullRequest.Number
}
