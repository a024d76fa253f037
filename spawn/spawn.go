// Package spawn runs a run, whatever its mode: Run takes a task and a
// configuration, checks everything before anything is created, provisions a
// git-worktree sandbox on a branch of its own, has the mode's strategy
// (package team) drive the coder and the reviewers in it, and finishes by
// committing whatever the agents left, on every path. Everything that
// happens is an Event on one stream: the record (.spawn/runs/<id>/record.json,
// rewritten after every step), the event log beside it and the caller's
// sink all read it.
package spawn

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
	"github.com/infinite-improbability-drive/spawn/team"
	"github.com/infinite-improbability-drive/spawn/team/forge"
)

// Options is one run: the task and the configuration (whose mode is the
// run's), where to work, and the run's environment.
type Options struct {
	Task    string
	Config  config.Config
	RepoDir string // a directory in the repository; "" is the current one
	Base    string // the ref the sandbox branch starts from; "" means HEAD
	Branch  string // the sandbox branch; "" means spawn/<id>/<slug>
	// Found is the repository and base as the caller's git process found
	// them from RepoDir (runs.OpenRepoAt); nil means the run finds them.
	Found *sandbox.Found
	// Env is the environment spawn runs in: agents inherit it, and the
	// values of its secret variables are redacted from everything written.
	Env []string
	// Hurry, when closed, kills a running agent at once instead of giving
	// it a grace period (a second Ctrl-C). May be nil.
	Hurry <-chan struct{}
	// Grace is how long a stopping agent gets between SIGTERM and SIGKILL;
	// 0 means proc.DefaultGrace.
	Grace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ID is the run's id; "" means a new one (runs.NewID). A caller that
	// must know the id before the run exists (spawn run --detach) picks it.
	ID string
	// Notes are said at the start of the run and kept in its record: what
	// the repository's configuration asked for that spawn did not do
	// (config.Loaded.Notes).
	Notes []string

	// replay, when not nil, makes the run a replay of another: the relay
	// answers from that run's cassette, and no credential is needed.
	replay *replaying
	// environ is what Env says to spawn itself, as the preflight read it
	// once (checked.environ); begin sets it.
	environ config.Environment
}

// Run runs opts.Task in the mode opts.Config names and returns its record,
// which is never nil. err says why the run did not succeed and, with the
// record's verdict, decides the exit code (ExitCode; the record's exit_code
// holds it too). When the input is bad (a *fault.Error of a usage, config or repo
// kind), nothing is created and the record, never written, only carries
// the error. Otherwise the sandbox and the run directory exist, and the
// agents' work is committed on the sandbox branch whatever happened:
// cancelling ctx stops the agents gracefully and the run ends interrupted.
// sink sees every event of the run (nil discards them).
func Run(ctx context.Context, opts Options, sink Sink) (*observability.Record, error) {
	if opts.Config.Team.Mode == observability.ModePR {
		if opts.Now == nil {
			opts.Now = time.Now
		}
		err := fault.Errorf(fault.KindUsage, nil, "mode %q is spawn pr's own; set [spawn-team] mode to one of %s, or address a pull request's review with spawn pr <number>",
			observability.ModePR, strings.Join(modeNames(), ", "))
		return rejected(opts, opts.Now(), err), err
	}
	return run1(ctx, opts, sink, nil, func(ctx context.Context, r *run) (observability.Verdict, error) {
		if r.gh == nil {
			return team.Drive(ctx, r.pre.policy, r.opts.Task, r.pre.plan.Base, r)
		}
		// github mode: the run's forge is told of each step.
		verdict, err := team.Drive(ctx, r.pre.policy, r.opts.Task, r.pre.plan.Base, struct {
			team.Run
			team.Forge
		}{r, r.gh})
		return verdict, forgeError(err)
	})
}

// run1 runs one run: preflight, begin, drive (the mode's strategy, or
// spawn pr's fix of a person's review), finish. gh, when not nil, is the
// forge the caller already opened.
func run1(ctx context.Context, opts Options, sink Sink, gh *forge.Hub, drive func(context.Context, *run) (observability.Verdict, error)) (*observability.Record, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Grace == 0 {
		opts.Grace = proc.DefaultGrace
	}
	if sink == nil {
		sink = Discard
	}
	opts.Task = strings.TrimSpace(opts.Task)
	started := opts.Now()
	id := opts.ID
	if id == "" {
		id = runs.NewID(started)
	}
	pre, err := preflight(ctx, opts, id)
	if err != nil {
		return rejected(opts, started, err), err
	}
	if gh != nil {
		pre.gh = gh
	}
	r, err := begin(ctx, opts, pre, id, started, sink)
	if err != nil {
		return rejected(opts, started, err), err
	}
	verdict, err := drive(ctx, r)
	return r.finish(ctx, verdict, err)
}

// modeNames are the modes a configuration may choose.
func modeNames() []string {
	var out []string
	for _, m := range observability.Modes() {
		out = append(out, string(m))
	}
	return out
}

// rejected is the record of a run that was never created: no id, no
// sandbox, the error and its exit code.
func rejected(opts Options, started time.Time, err error) *observability.Record {
	rec := observability.New("", opts.Task, opts.Config.Team.Mode, started)
	rec.Error = &observability.Error{Kind: string(KindOf(err)), Message: err.Error()}
	rec.Finish(observability.StatusFailed, ExitCode(err, observability.VerdictNone), opts.Now())
	return rec
}

// checked is what the preflight found: everything a run needs, before
// anything exists.
type checked struct {
	plan     sandbox.Plan
	registry *runs.Registry
	policy   team.Policy
	seats    seats
	// isolation is the sandbox the agents get: bubblewrap, Seatbelt or none.
	isolation isolation.Report
	// gh is github mode's forge (spawn pr's too); nil in the other modes.
	gh *forge.Hub
	// offline is a replay's: the relay answers from a cassette, so the
	// seats need no credential.
	offline bool
	// environ is what the run's environment says to spawn
	// (config.ReadEnvironment), read once here.
	environ config.Environment
}

// preflight checks the task, the mode, the repository, base and branch, the
// agent CLIs and the run registry. Bad input is an error and nothing is
// created.
func preflight(ctx context.Context, opts Options, id string) (checked, error) {
	cfg := opts.Config
	if opts.Task == "" {
		return checked{}, fault.Errorf(fault.KindUsage, nil, "no task given; pass it as arguments, with --task-file, or on stdin with -")
	}
	if err := cfg.Validate(); err != nil {
		return checked{}, err
	}
	environ := config.ReadEnvironment(opts.Env)
	// Which sandbox the agents get (a bubblewrap process, when it is
	// there to try) is learnt while git reads the repository.
	type resolved struct {
		report isolation.Report
		err    error
	}
	probe := make(chan resolved, 1)
	go func() {
		r, err := isolation.Resolve(ctx, cfg.Sandbox.Isolation, opts.Env, environ.TmpDir)
		probe <- resolved{r, err}
	}()
	// The branch is named after the task, with no secret in it.
	named := observability.RedactorOf(environ.Secrets...).String(opts.Task)
	plan, err := sandbox.Prepare(ctx, sandbox.Request{RepoDir: opts.RepoDir, Base: opts.Base, Branch: opts.Branch, ID: id, Task: named, Env: opts.Env, Found: opts.Found})
	iso := <-probe
	if err != nil {
		return checked{}, err
	}
	c := checked{plan: plan, registry: runs.Open(plan.SpawnDir()), offline: opts.replay != nil, environ: environ}
	if err := c.checkAgents(cfg, opts.Env, iso.report, iso.err); err != nil {
		return checked{}, err
	}
	if cfg.Team.Mode == observability.ModeGitHub {
		if c.gh, err = openForge(ctx, cfg, plan.Repo.Dir, opts.Base, opts.Env, environ.GitHub); err != nil {
			return checked{}, err
		}
	}
	// Last: Check creates the registry's directory.
	if err := c.registry.Check(); err != nil {
		return checked{}, fault.Errorf(fault.KindRepo, err, "cannot keep run records in %s (%v); make it writable, then run again", filepath.Join(plan.SpawnDir(), "runs"), err)
	}
	return c, nil
}

// checkAgents finds the agent CLIs of the seats the mode needs and their
// credentials (findSeats: the CLIs in env's PATH, the credentials in
// c.environ), takes the isolation the agents get (iso, as
// isolation.Resolve found it, with its error), and sets the policy.
func (c *checked) checkAgents(cfg config.Config, env []string, iso isolation.Report, isoErr error) (err error) {
	reviewed := cfg.Team.Mode.Reviewed() && (cfg.Team.Mode != observability.ModePR || cfg.GitHub.VerifyFixes)
	if c.seats, err = findSeats(runners.NewRegistry(), cfg, env, c.environ.Providers, reviewed, !c.offline); err != nil {
		return err
	}
	if c.isolation = iso; isoErr != nil {
		return fault.Errorf(fault.KindNoSandbox, isoErr, "%v", isoErr)
	}
	if cfg.Sandbox.Network == isolation.NetworkModelOnly && !c.isolation.Mode.Confines() {
		return fault.Errorf(fault.KindNoSandbox, nil, "network = \"model-only\" needs a sandbox, but %s; %s, or set [sandbox] network = \"open\"", c.isolation.Reason, isolation.InstallHint)
	}
	c.policy = team.Policy{Mode: cfg.Team.Mode, MaxIterations: cfg.Team.MaxIterations, Parallel: cfg.Team.ParallelReviewers, MaxConcurrent: cfg.Team.MaxConcurrentReviewers,
		Board: c.seats.board(), Rule: team.Rule{Majority: cfg.Team.Board == config.BoardMajority, BlockAt: observability.Severity(cfg.Team.BlockAt)}}
	for _, d := range cfg.Team.ReviewDomains {
		c.policy.Domains = append(c.policy.Domains, prompts.Domain(d))
	}
	return nil
}

// run is one run in progress: its sandbox, its directory in the registry,
// its record and its event stream. It is the team.Run the strategies drive.
type run struct {
	opts   Options
	pre    checked
	sb     *sandbox.Sandbox
	dir    *runs.Run
	rec    *observability.Record
	record *recorder
	log    *runs.EventLog
	events *stream
	red    *observability.Redactor
	conf   *confinement // the agents' isolation, relay and guard
	gh     *forge.Hub   // github mode's (and spawn pr's) forge; nil otherwise

	spend spend // the run's cost so far, coder and reviewers

	msgs      sync.Mutex // serialises recordMessages and guards inboxRead
	inboxRead inboxRead

	mu       sync.Mutex
	procs    int                           // agent processes started so far, numbering the transcripts
	tamperN  int                           // security findings spawn made so far, numbering them
	refused  int                           // tool calls the sandbox refused so far
	cleanups []func(context.Context) error // run by finish, in order
	warned   map[string]bool               // submodule leftovers already reported
	noted    map[string]bool               // seats whose agent's note (runners.Noter) was made
	// saved says the coder's work is all on the run's branch: a save
	// succeeded after its last turn. Under bubblewrap or Seatbelt nothing
	// else can write the worktree (a reviewer reads it), so finish has
	// nothing to save; without them, a reviewer could have.
	saved bool
}

// begin creates the sandbox, the run directory with its live lock, and
// the first record. Sandbox creation is serialised per repository. When
// it fails, what it created is removed.
func begin(ctx context.Context, opts Options, pre checked, id string, started time.Time, sink Sink) (r *run, err error) {
	opts.environ = pre.environ
	unlock, err := pre.registry.LockRepo(ctx)
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot lock %s for a new run: %v", pre.plan.SpawnDir(), err)
	}
	defer func() { err = errors.Join(err, unlock()) }()
	exe, err := proc.Own()
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot find spawn's own binary: %v", err)
	}
	sb, err := pre.plan.Create(ctx, exe)
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot create the sandbox worktree: %v", err)
	}
	undo := func(cause error) error {
		return errors.Join(cause, sb.Remove(context.WithoutCancel(ctx)))
	}
	dir, err := pre.registry.Create(id)
	if err != nil {
		return nil, undo(fault.Errorf(fault.KindInternal, err, "cannot create the run directory: %v", err))
	}
	r = &run{opts: opts, pre: pre, sb: sb, dir: dir}
	conf, err := confine(ctx, opts, pre.isolation, pre.seats, sb, dir.Paths, r.spend.relay, r.spend.allow(opts.Config.Spawn.MaxCostUSD))
	if err != nil {
		return nil, undo(errors.Join(fault.Errorf(fault.KindInternal, err, "cannot confine the agents: %v", err), dir.Remove()))
	}
	prevUndo := undo
	undo = func(cause error) error { return prevUndo(errors.Join(cause, conf.close())) }
	red := observability.RedactorOf(slices.Concat(opts.environ.Secrets, pre.secrets())...)
	rec := observability.New(id, opts.Task, opts.Config.Team.Mode, started)
	rec.Repo, rec.Base, rec.Branch, rec.SandboxPath = pre.plan.Repo.Dir, sb.Base, sb.Branch, sb.Path
	rec.Isolation = conf.record()
	rec.Seats = pre.seats.record()
	r.rec, r.red, r.conf, r.cleanups = rec, red, conf, []func(context.Context) error{conf.cleanup}
	// The record is first written, and waited for, once the cassette is
	// named in it (startCassette): before any agent starts.
	r.record = newRecorder(rec, dir.RecordPath(), red)
	if r.log, err = runs.OpenEventLog(dir.EventsPath(), red); err != nil {
		return nil, undo(errors.Join(fault.Errorf(fault.KindInternal, err, "cannot write the event log: %v", err), dir.Remove()))
	}
	if sink == nil {
		sink = Discard
	}
	r.events = newStream(id, opts.Now, r.record, r.log, sink)
	if err := r.startCassette(); err != nil {
		r.events.close()
		return nil, undo(errors.Join(err, r.log.Close(), dir.Remove()))
	}
	r.gh = pre.gh
	r.attachForge()
	snapshot := *rec
	r.emit(observability.Event{Kind: observability.EventStarted, Record: &snapshot})
	for _, n := range opts.Notes {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: n})
	}
	r.emit(observability.Event{Kind: observability.EventPhase, Phase: observability.PhaseSandbox, Text: sb.Path})
	if dirty, err := pre.plan.Dirty(); err != nil {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: fmt.Sprintf("cannot tell whether %s has uncommitted changes: %v", pre.plan.Repo.Dir, err)})
	} else if dirty {
		r.emit(observability.Event{Kind: observability.EventNote, Text: dirtyNote(ctx, pre.plan.Repo, text.ShortSHA(sb.Base))})
	}
	r.initSubmodules(ctx)
	// The git helper starts in its sandbox while the coder's first turn
	// runs, ready for the save after it.
	sb.Start(conf.helperJail())
	if !conf.report.Mode.Confines() {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: noSandboxWarning(conf.report)})
	}
	return r, nil
}

func (r *run) emit(e observability.Event) { r.events.emit(e) }

// noSandboxWarning is the loud warning of a run whose agents run without
// a sandbox.
func noSandboxWarning(report isolation.Report) string {
	return fmt.Sprintf("NO SANDBOX: the agents run without a sandbox (%s); they can write anywhere you can. spawn still keeps credentials from them and undoes changes to your refs, HEAD, .git/config and hooks. To confine them, %s", report.Reason, isolation.InstallHint)
}

// finish commits whatever the sandbox still holds, removes the run's
// private files, stamps the record with the outcome and writes it, and
// releases the run's lock. It returns the record and runErr joined with any
// error finishing met (runErr's kind decides the exit code). It works on a
// cancelled ctx: the work is saved even after Ctrl-C.
func (r *run) finish(ctx context.Context, verdict observability.Verdict, runErr error) (*observability.Record, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	r.emit(observability.Event{Kind: observability.EventPhase, Phase: observability.PhaseFinish})
	r.recordMessages(r.pre.seats.coder)
	if pending, err := r.dir.Inbox().Pending(); err == nil && len(pending) > 0 {
		r.emit(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("%s sent with spawn send reached no coder turn: the run ended first; `spawn resume %s` hands them to the coder",
			text.Plural(len(pending), "message"), r.rec.ID)})
	}
	errs := []error{runErr}
	if r.mayHoldWork() {
		errs = append(errs, r.commitLeftovers(ctx, r.lastRound()))
	}
	// The git helper, told to stop, exits (with its sandbox) while the
	// run's other files are cleaned up: nothing else uses it.
	helperClosed := make(chan error, 1)
	go func() { helperClosed <- r.sb.Close() }()
	var helperErr error
	helperGone := sync.OnceFunc(func() { helperErr = <-helperClosed })
	if r.gh != nil {
		r.gh.PushLeftovers(ctx)
	}
	if err := errors.Join(errs...); neverStarted(err, r.rec) {
		helperGone() // it runs in the worktree removed next
		errs = append(errs, r.removeEmptySandbox(ctx, err))
	}
	for _, c := range r.cleanups {
		if err := c(ctx); err != nil {
			errs = append(errs, fault.Errorf(fault.KindInternal, err, "cannot clean up: %v", err))
		}
	}
	r.cleanups = nil
	if helperGone(); helperErr != nil {
		errs = append(errs, fault.Errorf(fault.KindInternal, helperErr, "cannot clean up: %v", helperErr))
	}
	r.record.mu.Lock()
	r.rec.Usage.RelayedCostUSD = r.spend.relayedCost()
	r.record.mu.Unlock()
	recErr := r.record.Err()
	if recErr != nil && !errors.Is(runErr, recErr) {
		errs = append(errs, r.recordError())
	}
	err := errors.Join(errs...)
	status := observability.StatusSucceeded
	switch KindOf(err) {
	case "":
	case fault.KindTimeout:
		status = observability.StatusTimedOut
	case fault.KindInterrupted:
		status = observability.StatusInterrupted
	default:
		status = observability.StatusFailed
	}
	outcome := &observability.Outcome{Status: status, Verdict: verdict, ExitCode: ExitCode(err, verdict)}
	if err != nil {
		outcome.Error = errorRecord(err, r.red)
	}
	r.emit(observability.Event{Kind: observability.EventFinished, Outcome: outcome})
	// The event log and the caller's sink have seen every event before the
	// log is closed and the run returns.
	r.events.close()
	if recErr == nil {
		recErr = r.recordError() // the final write
	} else {
		recErr = nil // already in err
	}
	return r.rec, errors.Join(err, recErr,
		r.wrap(r.log.Close(), "cannot write the event log"),
		r.wrap(r.dir.Close(), "cannot release the run's lock"))
}

// mayHoldWork says the worktree may hold work the run's branch does not:
// no save succeeded since the coder's last turn, or the agents' isolation
// lets a reviewer write it.
func (r *run) mayHoldWork() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.saved || r.conf == nil || !r.conf.report.Mode.Confines()
}

// wrap makes err an internal *fault.Error with the message msg; nil stays nil.
func (r *run) wrap(err error, msg string) error {
	if err == nil {
		return nil
	}
	return fault.Errorf(fault.KindInternal, err, "%s: %v", msg, err)
}

// lastRound is the highest round an agent ran in.
func (r *run) lastRound() int {
	r.record.mu.Lock()
	defer r.record.mu.Unlock()
	round := 1
	for _, c := range r.rec.CommandLines {
		round = max(round, c.Iteration)
	}
	return round
}

// shortList is commits, short and comma-separated.
func shortList(commits []string) string {
	short := make([]string, len(commits))
	for i, c := range commits {
		short[i] = text.ShortSHA(c)
	}
	return strings.Join(short, ", ")
}
