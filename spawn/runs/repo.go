package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// Repo is one repository's runs, as the lifecycle commands (ls, show,
// logs, diff, clean, resume, ps, send) see them.
type Repo struct {
	// Dir is the top of the repository's main work tree, wherever in the
	// repository (a subdirectory, a sandbox worktree) it was opened from.
	Dir      string
	Git      git.Repo
	Registry *Registry
	// Found is the work tree it was opened in, as git found it (Dir, or a
	// linked worktree's own), and the commit the base OpenRepoAt was given
	// names.
	Found   sandbox.Found
	env     []string
	tmpDir  string   // env's TMPDIR (config.ReadEnvironment)
	secrets []string // env's secrets (config.ReadEnvironment)
	// listed is the registry as Repair last listed it, when it repaired
	// nothing: List's next answer, once.
	listed []Entry
}

// List returns every run, newest first (Registry.List). Right after
// a Repair that repaired nothing it returns what Repair read, instead of
// reading the registry a second time.
func (r *Repo) List() ([]Entry, error) {
	if entries := r.listed; entries != nil {
		r.listed = nil
		return entries, nil
	}
	entries, err := r.Registry.List()
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot read the run registry: %v", err)
	}
	return entries, nil
}

// OpenRepo opens the repository that holds dir ("" is the current
// directory) and its run registry. It creates nothing. Outside a git
// repository it fails with a repo *fault.Error.
func OpenRepo(ctx context.Context, dir string, env []string) (*Repo, error) {
	return OpenRepoAt(ctx, dir, "", env)
}

// OpenRepoAt is OpenRepo that, with the same git process, resolves base
// (a ref; "" resolves none) into the commit it names: the Repo's Found,
// which a run's sandbox.Prepare takes as it is.
func OpenRepoAt(ctx context.Context, dir, base string, env []string) (*Repo, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fault.Errorf(fault.KindRepo, err, "cannot resolve the repository path %q: %v", dir, err)
	}
	found, err := sandbox.Find(ctx, abs, base, env)
	tree := found.Repo
	if errors.Is(err, git.ErrNotRepo) {
		return nil, fault.Errorf(fault.KindRepo, err, "%s is not in a git repository; run spawn inside one or pass --repo", abs)
	}
	if err != nil {
		return nil, fault.Errorf(fault.KindRepo, err, "cannot read the git repository at %s: %v", abs, err)
	}
	// A linked worktree (a sandbox among them) shares the main work
	// tree's .git: its parent is where .spawn is.
	common, err := tree.CommonDir(ctx)
	if err != nil {
		return nil, fault.Errorf(fault.KindRepo, err, "cannot read the git repository at %s: %v", abs, err)
	}
	top := tree.Dir
	if filepath.Base(common) == ".git" {
		top = filepath.Dir(common)
	}
	environ := config.ReadEnvironment(env)
	return &Repo{
		Dir:      top,
		Git:      git.Repo{Dir: top, Env: env},
		Registry: Open(filepath.Join(top, sandbox.Dir)),
		Found:    found,
		env:      env,
		tmpDir:   environ.TmpDir,
		secrets:  environ.Secrets,
	}, nil
}

// WorkTree is the top of the work tree the repository was opened in: Dir,
// or a linked worktree's own.
func (r *Repo) WorkTree() string { return r.Found.Repo.Dir }

// Find returns the run ref names: an id, a unique prefix of one, or
// "last". A reference that names no run, or more than one, is a usage
// *fault.Error that says which.
func (r *Repo) Find(ref string) (Entry, error) {
	e, err := r.Registry.Find(ref)
	var refErr *RefError
	if errors.As(err, &refErr) {
		return Entry{}, fault.Errorf(fault.KindUsage, err, "%v", err)
	}
	if err != nil {
		return Entry{}, fault.Errorf(fault.KindInternal, err, "cannot read the run registry: %v", err)
	}
	return e, nil
}

// Repaired is an abandoned run that Repair finished.
type Repaired struct {
	ID     string
	Branch string
	// Saved is the commit that saved what the worktree held uncommitted,
	// "" when it held nothing.
	Saved string
	// Holder is the process that died, nil when unknown.
	Holder *Holder
}

// Repair finishes every abandoned run: a run whose record says running
// while no process holds its lock (its spawn was killed, the machine went
// down). The worktree's uncommitted work is committed on the run's branch,
// and the record is finished as interrupted with an error saying the
// process died. A run that another process repairs or resumes meanwhile is
// left to it. Repair returns what it repaired; a run it could not repair
// is an error, and the others are still repaired.
func (r *Repo) Repair(ctx context.Context, now func() time.Time) ([]Repaired, error) {
	entries, err := r.Registry.List()
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot read the run registry: %v", err)
	}
	var done []Repaired
	var errs []error
	defer func() {
		if len(done) == 0 && len(errs) == 0 {
			r.listed = entries
		}
	}()
	for _, e := range entries {
		if e.State != StateAbandoned {
			continue
		}
		rp, err := r.repair(ctx, e.ID, now)
		switch {
		case errors.Is(err, ErrLive):
			// Another process took it: it repairs or resumes it.
		case err != nil:
			errs = append(errs, err)
		case rp != nil:
			done = append(done, *rp)
		}
	}
	return done, errors.Join(errs...)
}

// repair finishes one abandoned run under its lock; nil when the run
// turned out not to be abandoned any more.
func (r *Repo) repair(ctx context.Context, id string, now func() time.Time) (_ *Repaired, err error) {
	holder := r.lastHolder(id)
	run, err := r.Registry.Acquire(id)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, run.Close()) }()
	rec, err := run.ReadRecord()
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot repair run %s: %v", id, err)
	}
	if rec.Status != observability.StatusRunning {
		return nil, nil
	}
	return r.FinishAbandoned(ctx, run, rec, holder, now)
}

// FinishAbandoned commits what an abandoned run's worktree holds on its
// branch and finishes its record (rec, changed in place) as interrupted,
// under the run's lock, which the caller holds (Registry.Acquire). holder
// is the process that died, nil when unknown. The record and a finished
// event are written to the run's directory; an error writing them is an
// internal *fault.Error, while work that could not be saved is said in the
// record's error.
func (r *Repo) FinishAbandoned(ctx context.Context, run *Run, rec *observability.Record, holder *Holder, now func() time.Time) (*Repaired, error) {
	id := run.ID
	rp := &Repaired{ID: id, Branch: rec.Branch, Holder: holder}
	red := observability.RedactorOf(r.secrets...)
	what := "the spawn process running it died"
	if holder != nil {
		what = fmt.Sprintf("the spawn process running it (pid %d) died", holder.PID)
	}
	saveErr := r.recoverSessions(run, rec)
	// Messages the dead run's coder got but spawn never recorded.
	delivered, err := run.Inbox().Delivered()
	saveErr = errors.Join(saveErr, err)
	for _, m := range delivered {
		if !slices.ContainsFunc(rec.Messages, func(k observability.Message) bool { return k.ID == m.ID }) {
			rec.Messages = append(rec.Messages, m)
		}
	}
	sb, err := r.Sandbox(ctx, id, rec)
	switch {
	case err != nil:
		saveErr = errors.Join(saveErr, fmt.Errorf("cannot open the run's worktree: %w", err))
	case sb.Legacy:
		saveErr = errors.Join(saveErr, fmt.Errorf("its worktree %s was made by an older spawn, in which spawn no longer runs git; look at it yourself", sb.Path))
	default:
		if _, statErr := os.Lstat(sb.Path); statErr == nil {
			saved, err := sb.Save(ctx, isolation.GitJail(isolation.Probe(ctx, r.env, r.tmpDir), r.env, sb), "spawn: work saved from an abandoned run\n\nSpawn-Run: "+id+"\n")
			err = errors.Join(err, sb.Close())
			if err != nil {
				saveErr = errors.Join(saveErr, fmt.Errorf("cannot commit the work left in %s: %w", sb.Path, err))
			}
			if saved.Committed != "" && saved.Published == saved.Committed {
				rp.Saved = saved.Committed
				rec.Commits = append(rec.Commits, observability.Commit{SHA: saved.Committed, Message: "spawn: work saved from an abandoned run", Iteration: lastIteration(rec), LLM: observability.LLMSpawn})
			}
		}
	}
	msg := what + " before the run finished"
	switch {
	case saveErr != nil:
		msg += fmt.Sprintf("; %v", saveErr)
	case rp.Saved != "":
		msg += fmt.Sprintf("; the work it left is committed on %s; `spawn resume %s` continues it", rec.Branch, id)
	default:
		msg += fmt.Sprintf("; `spawn resume %s` continues it", id)
	}
	rec.Error = &observability.Error{Kind: string(fault.KindInterrupted), Message: msg}
	rec.Finish(observability.StatusInterrupted, fault.KindInterrupted.ExitCode(rec.Verdict), now())
	if err := observability.WriteFile(run.RecordPath(), rec, red); err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot repair run %s: %v", id, err)
	}
	if err := appendEvent(run.EventsPath(), red, observability.Event{Kind: observability.EventFinished, Run: id, Time: now().UTC(),
		Outcome: &observability.Outcome{Status: rec.Status, Verdict: rec.Verdict, ExitCode: rec.ExitCode, Error: rec.Error}}); err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot repair run %s: %v", id, err)
	}
	return rp, nil
}

// recoverSessions finds what a killed spawn left of its coder: the agent
// processes it never recorded (their transcripts are in the run
// directory; the coder's session id is in its transcript's first event)
// are added to the record's command lines, and the agents' private
// directory it never removed ($TMPDIR/spawn-agents-<id>-*) gives up the
// coder's sessions, kept in the run directory for spawn resume, and is
// removed.
func (r *Repo) recoverSessions(run *Run, rec *observability.Record) error {
	known := map[string]bool{}
	coded, reviewed := 0, 0
	for _, c := range rec.CommandLines {
		known[c.Stdout] = true
		if c.Role == observability.RoleCoder {
			coded = max(coded, c.Iteration)
		}
	}
	for _, fb := range rec.ReviewFeedback {
		reviewed = max(reviewed, fb.Iteration)
	}
	coder := coderOf(rec)
	for n := 1; ; n++ {
		stdout, _ := run.Transcript(n, observability.RoleCoder)
		reviewer, _ := run.Transcript(n, observability.RoleReviewer)
		if !exists(stdout) && !exists(reviewer) {
			break
		}
		if !exists(stdout) || known[filepath.Base(stdout)] {
			continue
		}
		_, stderr := run.Transcript(n, observability.RoleCoder)
		rec.CommandLines = append(rec.CommandLines, observability.CommandLine{LLM: observability.LLM(coder.Record()), Role: observability.RoleCoder,
			Iteration: max(coded, reviewed+1), ExitCode: -1, Session: transcriptSession(coder, stdout),
			Stdout: filepath.Base(stdout), Stderr: filepath.Base(stderr)})
	}
	tmp := r.tmpDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	leaked, err := filepath.Glob(filepath.Join(tmp, "spawn-agents-"+run.ID+"-*"))
	if err != nil {
		return fmt.Errorf("find the agents' private directory: %w", err)
	}
	var errs []error
	for _, dir := range leaked {
		errs = append(errs, KeepSessions(filepath.Join(dir, "coder"), coder.Sessions(), run.SessionsDir(), observability.RedactorOf(r.secrets...)), os.RemoveAll(dir))
	}
	return errors.Join(errs...)
}

// transcriptSession is the session id in the first event of a transcript
// of the CLI a's stream that names one, "" when none does.
func transcriptSession(a runners.Adapter, path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var id string
	// The transcript is what the CLI printed: a parse error leaves the
	// events read so far, which is all this needs.
	if err := a.Parse(f, func(e runners.Event) {
		if e.Init != nil && id == "" {
			id = e.Init.SessionID
		}
	}); err != nil {
		return id
	}
	return id
}

// coderOf is the adapter of a run's coder: the CLI its record's seats, or
// else its first coder command line, name; claude for a record with
// neither (runners.LegacyCoder: spawn's only coder before seats).
func coderOf(rec *observability.Record) runners.Adapter {
	reg := runners.NewRegistry()
	for _, s := range rec.Seats {
		if a, ok := reg.ByRecord(string(s.LLM)); ok && s.Role == observability.RoleCoder {
			return a
		}
	}
	for _, c := range rec.CommandLines {
		if a, ok := reg.ByRecord(string(c.LLM)); ok && c.Role == observability.RoleCoder {
			return a
		}
	}
	a, _ := reg.Lookup(runners.LegacyCoder)
	return a
}

// lastHolder is the process an abandoned run's lock names, nil when it
// cannot be read.
func (r *Repo) lastHolder(id string) *Holder {
	e, err := r.Registry.Find(id)
	if err != nil {
		return nil
	}
	return e.Holder
}

// Sandbox is the sandbox of run id, on the branch its record rec names:
// its worktree is where spawn puts every run's (never a path read from the
// record or the worktree).
func (r *Repo) Sandbox(ctx context.Context, id string, rec *observability.Record) (*sandbox.Sandbox, error) {
	exe, err := proc.Own()
	if err != nil {
		return nil, fmt.Errorf("find spawn's own binary: %w", err)
	}
	return sandbox.Open(ctx, r.Git, id, rec.Branch, rec.Base, exe)
}

// exists reports whether path names a file (or a link to one).
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// lastIteration is the highest round an agent ran in, 1 when none did.
func lastIteration(rec *observability.Record) int {
	n := 1
	for _, c := range rec.CommandLines {
		n = max(n, c.Iteration)
	}
	return n
}

// Stop stops the live run e the way Ctrl-C does (Entry.Stop: the
// agents stopped, their work committed, the record interrupted); force
// kills the agents at once. It only signals. A run that is not live is a
// usage *fault.Error saying so; a signal that cannot be sent is an internal one.
func (r *Repo) Stop(e Entry, force bool) error {
	err := e.Stop(force)
	var notLive *NotLiveError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &notLive):
		return fault.Errorf(fault.KindUsage, err, "%v", err)
	}
	return fault.Errorf(fault.KindInternal, err, "%v", err)
}

// Await waits until run e is no longer running or ctx ends, reading the
// registry every poll. Before each wait it calls each, when not nil, with
// the run as last seen; an error from each ends the wait. Await returns
// the run as last seen, with ctx's error when ctx ended first.
func (r *Repo) Await(ctx context.Context, e Entry, poll time.Duration, each func(Entry) error) (Entry, error) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for e.State == StateRunning {
		if each != nil {
			if err := each(e); err != nil {
				return e, err
			}
		}
		select {
		case <-ctx.Done():
			return e, ctx.Err()
		case <-tick.C:
		}
		next, err := r.Find(e.ID)
		if err != nil {
			return e, err
		}
		e = next
	}
	return e, nil
}
