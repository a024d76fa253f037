package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// showOptions is `spawn show` after flag parsing.
type showOptions struct {
	Repo string
	Ref  string // an id, a unique prefix of one, or last
	JSON bool
}

// runRefUsage is the ArgsUsage of the commands that take one run.
const runRefUsage = "ID | PREFIX | last"

func newShowCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show a run's summary: rounds, findings, commits, cost, how to take the work",
		ArgsUsage: runRefUsage,
		Description: "The summary spawn run prints at its end, for any run, finished or still\n" +
			"running (then it says what the run is doing now). The run is given by its id,\n" +
			"a unique prefix of one, or last for the newest run.\n\n" +
			"--json prints the run's record as it is on disk (.spawn/runs/<id>/record.json).\n\n" +
			"Example:\n   spawn show last\n   spawn show 20261123-0941\n   spawn show --json last | jq .verdict",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			repoFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the run's record, one JSON document"},
		},
		Action: func(c *cli.Context) error {
			ref, err := oneRunRef(c)
			if err != nil {
				return err
			}
			return runShow(c.Context, d, &showOptions{Repo: c.String("repo"), Ref: ref, JSON: c.Bool("json")})
		},
	}
}

// oneRunRef is the one run a command is given as its argument.
func oneRunRef(c *cli.Context) (string, error) {
	name := "spawn " + c.Command.Name
	switch c.NArg() {
	case 1:
		return c.Args().First(), nil
	case 0:
		return "", usageError{fmt.Errorf("%s needs a run: its id, a unique prefix of one, or last; spawn ls lists them", name)}
	}
	return "", usageError{fmt.Errorf("%s takes one run, not %d (%s); see %s --help", name, c.NArg(), strings.Join(c.Args().Slice(), " "), name)}
}

// lookupRun opens the repository and finds the run ref names. A reference
// that names no run or several is a usage error (exit 2).
func (d *deps) lookupRun(ctx context.Context, repoDir, ref string) (*runs.Repo, runs.Entry, error) {
	repo, err := d.openRepo(ctx, repoDir)
	if err != nil {
		return nil, runs.Entry{}, err
	}
	e, err := repo.Find(ref)
	if err != nil {
		return nil, runs.Entry{}, err
	}
	return repo, e, nil
}

// readRecord reads a run's whole record; an unreadable one is an error
// that says where the run is.
func readRecord(e runs.Entry) (*observability.Record, error) {
	rec, err := e.ReadRecord()
	if err != nil {
		return nil, unreadableRecord(e, err)
	}
	return rec, nil
}

// unreadableRecord is the error for a run whose record cannot be read.
func unreadableRecord(e runs.Entry, err error) error {
	if e.State == runs.StateRunning && errors.Is(err, fs.ErrNotExist) {
		return &fault.Error{Kind: fault.KindInternal, Err: err,
			Msg: fmt.Sprintf("run %s is starting and has no record yet; spawn logs -f %s follows it", e.ID, e.ID)}
	}
	return &fault.Error{Kind: fault.KindInternal, Err: err,
		Msg: fmt.Sprintf("run %s has no readable record (%v); its files are in %s", e.ID, err, e.Dir)}
}

// runShow is `spawn show`: the run's summary, or its record with --json.
func runShow(ctx context.Context, d *deps, opts *showOptions) error {
	repo, e, err := d.lookupRun(ctx, opts.Repo, opts.Ref)
	if err != nil {
		return err
	}
	if opts.JSON {
		// The record as it is on disk: already redacted, one document.
		b, err := os.ReadFile(e.RecordPath())
		if err != nil {
			return unreadableRecord(e, err)
		}
		if !bytes.HasSuffix(b, []byte("\n")) {
			b = append(b, '\n')
		}
		_, err = d.io.Out.Write(b)
		return err
	}
	rec, err := readRecord(e)
	if err != nil {
		return err
	}
	if e.State != runs.StateRunning || rec.Status != observability.StatusRunning {
		if e.State == runs.StateAbandoned {
			fmt.Fprintf(d.io.Err, "spawn: run %s was abandoned (its spawn process died) and could not be repaired yet; its record is as the process left it\n", e.ID)
		}
		fmt.Fprint(d.io.Out, render(rec, view{removed: cleaned(ctx, repo, rec)}))
		return nil
	}
	l, err := runs.ReadLive(e.Paths)
	if err != nil {
		fmt.Fprintf(d.io.Err, "spawn: warning: %v\n", err)
	}
	if l.Sandbox == "" {
		l.Sandbox = rec.SandboxPath
	}
	fmt.Fprint(d.io.Out, liveSummary(rec, l, time.Now()))
	return nil
}

// ranFor is how long the live run rec has run by now: since it started,
// or, resumed, its earlier parts and the time since the resume.
func ranFor(rec *observability.Record, now time.Time) time.Duration {
	if n := len(rec.Resumes); n > 0 {
		last := rec.Resumes[n-1]
		return time.Duration(last.FromDurationMS)*time.Millisecond + now.Sub(last.At)
	}
	return now.Sub(rec.StartedAt)
}

// cleaned reports whether the worktree and the branch of the finished run
// rec are both gone (spawn clean removed them).
func cleaned(ctx context.Context, repo *runs.Repo, rec *observability.Record) bool {
	if rec.Branch == "" || rec.SandboxPath == "" {
		return false
	}
	if _, err := os.Stat(rec.SandboxPath); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return !repo.Git.BranchExists(ctx, rec.Branch)
}

// liveSummary is the summary of a run still running: its first line, then
// what it is doing now, then the rest, with the run's cost so far.
func liveSummary(rec *observability.Record, l runs.Live, now time.Time) string {
	head, rest, _ := strings.Cut(render(rec, view{liveCost: l.CostUSD}), "\n")
	phase := string(l.Phase)
	if phase == "" {
		phase = "starting"
	}
	if l.Round > 0 {
		phase += fmt.Sprintf(", round %d", l.Round)
	}
	doing := fmt.Sprintf("%s, coder turn %d, %s elapsed", phase, l.Turns, ranFor(rec, now).Round(time.Second))
	if a := lastAction(l); a != "" {
		doing += fmt.Sprintf("; last: %s (%s)", a, l.Role)
	}
	return fmt.Sprintf("%s\n  now:       %s\n%s", head, doing, rest)
}
