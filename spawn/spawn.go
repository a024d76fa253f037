// Package spawn is spawn's entry point: a task and a manifest go in, a git
// worktree sandbox is provisioned, the coder works in it under the watcher,
// whatever it leaves is committed on the sandbox branch, and one record of
// everything is written to .spawn/runs/<id>/record.json after every step.
package spawn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// LLM names used in the record.
const (
	LLMClaude = "claude-code"
	LLMGemini = "gemini-cli"
	LLMSpawn  = "spawn"
)

// Options is one `spawn run`.
type Options struct {
	Task    string
	Mode    string // "" means the configuration's mode
	RepoDir string // "" means the current directory
	Base    string // "" means HEAD
	Branch  string // "" means spawn/<slug>-<id>
	Config  Config
	// Env is the environment spawn runs in: agents inherit it, and the
	// values of its secret variables are redacted from everything written.
	Env []string
	// Notes receives short remarks for the user (e.g. uncommitted changes
	// left out of the sandbox). May be nil.
	Notes io.Writer
	// OnProgress, if set, sees what each agent does as it happens; role is
	// "coder" or "reviewer".
	OnProgress func(role string, p watcher.Progress)
	// Hurry, when closed, kills a running agent at once instead of giving
	// it a grace period (a second Ctrl-C). May be nil.
	Hurry <-chan struct{}
	// Grace is how long a stopping agent gets between SIGTERM and SIGKILL;
	// 0 means 2 s.
	Grace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Run is one run in progress: its sandbox, run directory and record.
type Run struct {
	ID      string
	Dir     string // .spawn/runs/<id>
	Sandbox *Sandbox
	Record  *observability.Record

	opts     Options
	redactor *observability.Redactor

	// mu guards Record and procs: parallel reviewers update them at once.
	mu    sync.Mutex
	procs int // agent processes started so far, numbering the transcripts

	geminiHomes map[string]string // reviewer seat -> private GEMINI_CLI_HOME
	cleanups    []func() error    // run by Finish
}

// Execute runs the task in solo mode: one coder turn in a new sandbox, its
// work committed on the sandbox branch. (The review modes are package
// team's.) The record is returned whenever a sandbox was created, whatever
// the outcome; err says why the run failed and decides the exit code (see
// ExitCode). When err is set and the record is nil, nothing was created.
func Execute(ctx context.Context, opts Options) (*observability.Record, error) {
	if opts.Mode != "" && opts.Mode != "solo" {
		return nil, errorf(KindInternal, nil, "spawn.Execute runs solo mode only, not %s", opts.Mode)
	}
	opts.Mode = "solo"
	run, err := Begin(ctx, opts)
	if err != nil {
		return nil, err
	}
	_, turnErr := run.CoderTurn(ctx, 1, opts.Task, "")
	return run.Record, run.Finish(ctx, turnErr, observability.VerdictNone)
}

// Begin checks the options, provisions the sandbox and writes the first
// record. Bad input is an *Error and nothing is created.
func Begin(ctx context.Context, opts Options) (*Run, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Grace == 0 {
		opts.Grace = 2 * time.Second
	}
	if opts.RepoDir == "" {
		opts.RepoDir = "."
	}
	if opts.Mode == "" {
		opts.Mode = opts.Config.Team.Mode
	}
	opts.Task = strings.TrimSpace(opts.Task)
	if opts.Task == "" {
		return nil, errorf(KindUsage, nil, "no task given; pass it as arguments, with --task-file, or on stdin with -")
	}
	switch {
	case !slices.Contains(modes, opts.Mode):
		return nil, errorf(KindUsage, nil, "%q is not a mode; use one of %s", opts.Mode, strings.Join(modes, ", "))
	case opts.Mode == "github":
		return nil, errorf(KindNotImplemented, nil, "mode github is not implemented yet; use --mode pingpong, sequential or solo")
	}
	started := opts.Now()
	id := newID(started)
	plan, err := planSandbox(ctx, opts.RepoDir, opts.Base, opts.Branch, id, opts.Task, opts.Env)
	if err != nil {
		return nil, err
	}
	if _, err := claudeBinary(opts.Config, opts.Env); err != nil {
		return nil, err
	}
	if opts.Mode != "solo" {
		if _, err := geminiBinary(opts.Config, opts.Env); err != nil {
			return nil, err
		}
	}
	if plan.dirty && opts.Notes != nil {
		fmt.Fprintf(opts.Notes, "note: %s has uncommitted changes; the sandbox starts from %s without them\n", plan.repo.Dir, shortSHA(plan.base))
	}
	sb, err := plan.create(ctx)
	if err != nil {
		return nil, errorf(KindInternal, err, "cannot create the sandbox worktree: %v", err)
	}
	run := &Run{
		ID:       id,
		Dir:      filepath.Join(sb.Repo.Dir, Dir, "runs", id),
		Sandbox:  sb,
		opts:     opts,
		redactor: observability.NewRedactor(opts.Env),
	}
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return nil, errorf(KindInternal, err, "cannot create the run directory %s: %v", run.Dir, err)
	}
	rec := observability.New(id, opts.Task, opts.Mode, started)
	rec.Repo, rec.Base, rec.Branch, rec.SandboxPath = sb.Repo.Dir, sb.Base, sb.Branch, sb.Path
	run.Record = rec
	return run, run.Save()
}

// RecordPath is where the run's record is written.
func (r *Run) RecordPath() string { return filepath.Join(r.Dir, "record.json") }

// Save writes the record atomically, secrets redacted.
func (r *Run) Save() error {
	return r.Update(func(*observability.Record) {})
}

// Update changes the record under the run's lock and writes it: the one way
// to change a record that concurrent agents (parallel reviewers) report to.
func (r *Run) Update(change func(*observability.Record)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(r.Record)
	if err := observability.WriteFile(r.RecordPath(), r.Record, r.redactor); err != nil {
		return errorf(KindInternal, err, "cannot write the record: %v", err)
	}
	return nil
}

// Redactor is the run's secret redactor.
func (r *Run) Redactor() *observability.Redactor { return r.redactor }

// Finish commits whatever the sandbox still holds, stamps the record with
// the outcome and writes it. It returns runErr (or the error finishing
// caused), so callers can `return run.Finish(ctx, err, verdict)`. It works on
// a cancelled ctx: the work is saved even after Ctrl-C.
func (r *Run) Finish(ctx context.Context, runErr error, verdict string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for _, c := range r.cleanups {
		if err := c(); err != nil && runErr == nil {
			runErr = errorf(KindInternal, err, "cannot clean up: %v", err)
		}
	}
	r.cleanups = nil
	if _, err := r.CommitLeftovers(ctx, r.lastIteration()); err != nil && runErr == nil {
		runErr = err
	}
	status := observability.StatusSucceeded
	switch KindOf(runErr) {
	case "":
	case KindTimeout:
		status = observability.StatusTimedOut
	case KindInterrupted:
		status = observability.StatusInterrupted
	default:
		status = observability.StatusFailed
	}
	saveErr := r.Update(func(rec *observability.Record) {
		rec.Verdict = verdict
		if runErr != nil {
			rec.Error = &observability.Error{Kind: string(KindOf(runErr)), Message: r.redactor.String(runErr.Error())}
		}
		rec.Finish(status, ExitCode(runErr, verdict), r.opts.Now())
	})
	return errors.Join(runErr, saveErr)
}

func (r *Run) lastIteration() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	it := 1
	for _, c := range r.Record.CommandLines {
		it = max(it, c.Iteration)
	}
	return it
}

// CommitLeftovers records the commits the agent made itself since the last
// known commit, then commits whatever it left uncommitted as spawn. It
// returns the sha of spawn's commit, "" when the tree was clean.
func (r *Run) CommitLeftovers(ctx context.Context, iteration int) (string, error) {
	if err := r.recordAgentCommits(ctx, iteration); err != nil {
		return "", err
	}
	task := r.redactor.String(firstLine(r.Record.Task))
	msg := "spawn: " + task
	if iteration > 1 {
		msg = fmt.Sprintf("spawn: address review round %d: %s", iteration-1, task)
	}
	sha, err := r.Sandbox.Tree.CommitAll(ctx, msg)
	if err != nil {
		return "", errorf(KindInternal, err, "cannot commit the coder's work in %s: %v", r.Sandbox.Path, err)
	}
	return sha, r.Update(func(rec *observability.Record) {
		if sha != "" {
			rec.Commits = append(rec.Commits, observability.Commit{SHA: sha, Message: msg, Iteration: iteration, LLM: LLMSpawn})
		}
	})
}

// recordAgentCommits adds the branch's commits the record does not know yet:
// they were made by the coder.
func (r *Run) recordAgentCommits(ctx context.Context, iteration int) error {
	commits, err := r.Sandbox.Tree.Log(ctx, r.Sandbox.Base, "HEAD")
	if err != nil {
		return errorf(KindInternal, err, "cannot list the sandbox branch's commits: %v", err)
	}
	return r.Update(func(rec *observability.Record) {
		known := map[string]bool{}
		for _, c := range rec.Commits {
			known[c.SHA] = true
		}
		for _, c := range commits {
			if !known[c.SHA] {
				rec.Commits = append(rec.Commits, observability.Commit{SHA: c.SHA, Message: c.Subject, Iteration: iteration, LLM: LLMClaude})
			}
		}
	})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > 72 {
		line = string(r[:69]) + "..."
	}
	return line
}

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
