package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// detachedIDFlag is the hidden flag of the process a detached run runs in:
// the run's id, which the starting process picked.
const detachedIDFlag = "detached-id"

// detachLog is the file, in the run directory, that holds what a detached
// run's own spawn process printed (its narration and summary).
const detachLog = "detach.log"

// detachPoll is how often a detaching spawn looks whether its run exists.
const detachPoll = 20 * time.Millisecond

// detachFlags are the flags of `spawn run` that a detached run's process
// does not get: the detaching process handles them.
var detachFlags = map[string]bool{"detach": true, "json": true, "repo": true, detachedIDFlag: true}

// detachedIDPattern is a run id as runs.NewID makes it.
var detachedIDPattern = lazy.MustCompile(`^\d{8}-\d{6}-[0-9a-f]{4}$`)

// checkDetachedID refuses a --detached-id that is not a run id: it names
// the run's worktree and branch.
func checkDetachedID(id string) error {
	if id != "" && !detachedIDPattern.MatchString(id) {
		return &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("--%s %q is not a run id; it is for the process spawn run --detach starts, leave it out", detachedIDFlag, id)}
	}
	return nil
}

// childRunArgs turns the flags the user set on `spawn run` into the flags
// of the detached run's process (every one but detachFlags).
func childRunArgs(c *cli.Context) []string {
	var args []string
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if detachFlags[name] || !c.IsSet(name) {
			continue
		}
		if _, many := f.(*cli.StringSliceFlag); many {
			for _, v := range c.StringSlice(name) {
				args = append(args, fmt.Sprintf("--%s=%s", name, v))
			}
			continue
		}
		args = append(args, fmt.Sprintf("--%s=%v", name, c.Value(name)))
	}
	return args
}

// detachRequest is a run to start in a process of its own.
type detachRequest struct {
	Repo string // a directory in the repository
	// Flags are `spawn run`'s flags for the run's process (childRunArgs).
	Flags []string
	// Task is the task as words; empty when Flags name a task file.
	Task []string
}

// detached is the answer of `spawn run --detach --json`: the run's id, or
// why no run started.
type detached struct {
	ID       string               `json:"id,omitempty"`
	Error    *observability.Error `json:"error,omitempty"`
	ExitCode int                  `json:"exit_code"`
}

// runDetach is `spawn run --detach`: it starts the run as a process of its
// own and prints the run's id once the run exists (with --json,
// {"id": ...}). A run that fails before it exists (bad input) leaves
// nothing behind: its error is printed and its exit code returned.
func runDetach(ctx context.Context, d *deps, opts *runOptions) error {
	id, err := startRun(ctx, d, opts)
	code := detachExitCode(err)
	if opts.JSON {
		res := detached{ID: id, ExitCode: code}
		if err != nil {
			res.Error = &observability.Error{Kind: string(spawn.KindOf(err)), Message: err.Error()}
		}
		if perr := printJSON(d.io.Out, res); perr != nil {
			return errors.Join(err, perr)
		}
	}
	if err != nil {
		fmt.Fprintf(d.io.Err, "spawn: %v\n", err)
		return exitIf(code)
	}
	if !opts.JSON {
		fmt.Fprintln(d.io.Out, id)
		fmt.Fprintf(d.io.Err, "spawn: run %s goes on in the background; spawn ps shows it, spawn logs -f %s follows it, spawn show %s has its outcome\n", id, id, id)
	}
	return nil
}

// detachExitCode is the exit code of a detach that failed with err: the
// run's process's own when it ended early, else the code of err's kind.
func detachExitCode(err error) int {
	var early *exitError
	if errors.As(err, &early) {
		return early.code
	}
	if err == nil {
		return 0
	}
	return spawn.ExitCode(err, observability.VerdictNone)
}

// startRun checks the task and starts the run opts describe detached.
func startRun(ctx context.Context, d *deps, opts *runOptions) (string, error) {
	task, err := readTask(opts, d.io.In)
	if err != nil {
		return "", err
	}
	req := detachRequest{Repo: opts.Repo, Flags: opts.childArgs}
	if opts.TaskFile == "" {
		req.Task = []string{task}
	}
	return d.startDetached(ctx, req)
}

// startDetached starts req as `spawn run` in a process of its own (see
// proc.StartDetached): it survives this process, its terminal and its
// signals, holds the run's live lock, and writes what it prints to
// detach.log in the run directory. startDetached returns the run's id once
// the run exists. When the process ends before its run exists (bad input,
// a missing agent CLI), nothing is left behind and the error says what
// the process printed, with its exit code. Cancelling ctx stops the
// waiting, not the process.
func (d *deps) startDetached(ctx context.Context, req detachRequest) (string, error) {
	repo, err := d.openRepo(ctx, req.Repo)
	if err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the spawn binary to start the run: %w", err)
	}
	// The log starts in the repository's git directory: the run
	// directory does not exist yet (the run's process creates it), and a
	// file in the working tree would be an uncommitted change to the run.
	// It moves into the run directory (the same file system) once the run
	// exists.
	gitDir, err := repo.Git.CommonDir(ctx)
	if err != nil {
		return "", &fault.Error{Kind: fault.KindRepo, Msg: fmt.Sprintf("cannot read the git repository at %s: %v", repo.Dir, err), Err: err}
	}
	id := runs.NewID(time.Now())
	logPath := filepath.Join(gitDir, "spawn-"+id+"."+detachLog)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", fmt.Errorf("create the detached run's log: %w", err)
	}
	args := append([]string{"run", "--repo=" + repo.Dir}, req.Flags...)
	args = append(args, "--"+detachedIDFlag+"="+id)
	if len(req.Task) > 0 {
		args = append(append(args, "--"), req.Task...)
	}
	// The run's process is this binary; os.Args[0] keeps the name it was
	// started by (a test binary that stands in for spawn tells by it).
	p, err := proc.StartDetached(proc.Cmd{Path: exe, Args: args, Env: d.env, Stdout: logFile, Stderr: logFile}, os.Args[0])
	if cerr := logFile.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close the detached run's log: %w", cerr)
	}
	if err != nil {
		return "", errors.Join(err, os.Remove(logPath))
	}
	tick := time.NewTicker(detachPoll)
	defer tick.Stop()
	for {
		e, found, err := findRun(repo, id)
		if err != nil {
			return "", err
		}
		if found {
			if err := os.Rename(logPath, filepath.Join(e.Dir, detachLog)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(d.io.Err, "spawn: warning: the run's output stays in %s: %v\n", logPath, err)
			}
			return id, nil
		}
		select {
		case <-p.Done():
			if _, found, err := findRun(repo, id); err != nil || found {
				continue // it started and ended at once: the loop sees it
			}
			code, werr := p.Wait()
			out, rerr := os.ReadFile(logPath)
			return "", errors.Join(earlyExit(out, code), werr, rerr, os.Remove(logPath))
		case <-ctx.Done():
			return "", fmt.Errorf("stopped waiting for run %s to start (it may still start: spawn ps shows it): %w", id, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// findRun looks run id up in the registry; found is false while its
// directory or record does not exist yet.
func findRun(repo *runs.Repo, id string) (runs.Entry, bool, error) {
	e, err := repo.Registry.Find(id)
	var refErr *runs.RefError
	if errors.As(err, &refErr) {
		return runs.Entry{}, false, nil
	}
	if err != nil {
		return runs.Entry{}, false, fmt.Errorf("cannot read the run registry: %w", err)
	}
	return e, e.Summary != nil, nil
}

// earlyExit is the error of a detached run's process that ended before its
// run existed: its last words, with its exit code.
func earlyExit(out []byte, code int) error {
	msg := strings.TrimSpace(string(bytes.TrimPrefix(lastLine(out), []byte("spawn: "))))
	if msg == "" {
		msg = fmt.Sprintf("the run's process exited with status %d before the run started", code)
	}
	if code == 0 {
		code = 1
	}
	return &exitError{msg: msg, code: code}
}

// lastLine is the last non-empty line of out.
func lastLine(out []byte) []byte {
	out = bytes.TrimRight(out, "\n ")
	return out[bytes.LastIndexByte(out, '\n')+1:]
}

// exitError is an error that carries the exit code of the process it
// comes from.
type exitError struct {
	msg  string
	code int
}

func (e *exitError) Error() string { return e.msg }
