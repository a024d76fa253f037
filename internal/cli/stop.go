package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// stopOptions is `spawn stop` after flag parsing.
type stopOptions struct {
	Repo  string
	Refs  []string
	All   bool
	Wait  time.Duration
	Force bool
	JSON  bool
}

// stopPoll is how often spawn stop looks whether a stopped run has ended.
const stopPoll = 100 * time.Millisecond

func newStopCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:      "stop",
		Usage:     "stop a live run as Ctrl-C does: its work committed, the run interrupted (spawn resume continues it)",
		ArgsUsage: "ID... | last | --all",
		Description: "Signals the spawn process that runs the run (detached or in another terminal), which\n" +
			"stops the agents, commits their work on the run's branch and ends the run interrupted\n" +
			"(exit code 130 in its record). spawn stop waits for that, up to --wait, and says how each\n" +
			"run ended. --force stops the agents at once, as a second Ctrl-C does; the work is still\n" +
			"committed. spawn ps lists the live runs and their processes.\n" +
			"Exit code 0 when every run ended; 2 for a run that is not live; 5 when one is still\n" +
			"running after --wait.\n\n" +
			"Example:\n   spawn stop last\n   spawn stop 20261123-0931 --wait 2m\n   spawn stop --all --force",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			repoFlag(),
			&cli.BoolFlag{Name: "all", Usage: "stop every live run of the repository"},
			&cli.DurationFlag{Name: "wait", Value: 30 * time.Second, DefaultText: "30s", Usage: "how long to wait for the runs to end (0: signal and return)"},
			&cli.BoolFlag{Name: "force", Usage: "stop the agents at once, as a second Ctrl-C does (the work is still committed)"},
			&cli.BoolFlag{Name: "json", Usage: "print how each run ended as one JSON array"},
		},
		Action: func(c *cli.Context) error {
			opts := &stopOptions{Repo: c.String("repo"), Refs: c.Args().Slice(), All: c.Bool("all"),
				Wait: c.Duration("wait"), Force: c.Bool("force"), JSON: c.Bool("json")}
			switch {
			case opts.All && len(opts.Refs) > 0:
				return usageError{errors.New("give run ids or --all, not both")}
			case !opts.All && len(opts.Refs) == 0:
				return usageError{errors.New("say which run to stop: its id, a unique prefix of one, last, or --all; spawn ps lists the live runs")}
			case opts.Wait < 0:
				return usageError{fmt.Errorf("--wait %s: give a duration of 0 or more, such as 30s", opts.Wait)}
			}
			return runStop(c.Context, d, opts)
		},
	}
}

// stopped is one run in `spawn stop --json`: whether it ended within the
// wait, and how.
type stopped struct {
	ID       string               `json:"id"`
	Ended    bool                 `json:"ended"`
	Status   observability.Status `json:"status,omitempty"`
	ExitCode int                  `json:"exit_code"`
	Branch   string               `json:"branch,omitempty"`
	Commits  int                  `json:"commits"`
}

// runStop is `spawn stop`: it signals each run's process, then waits for
// the runs to end and says how each did.
func runStop(ctx context.Context, d *deps, opts *stopOptions) error {
	repo, err := d.openRepo(ctx, opts.Repo)
	if err != nil {
		return err
	}
	var targets []runs.Entry
	if opts.All {
		entries, err := repo.List()
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.State == runs.StateRunning {
				targets = append(targets, e)
			}
		}
		if len(targets) == 0 {
			if opts.JSON {
				return printJSON(d.io.Out, []stopped{})
			}
			fmt.Fprintln(d.io.Err, "no run is live; nothing to stop")
			return nil
		}
	}
	for _, ref := range opts.Refs {
		e, err := repo.Find(ref)
		if err != nil {
			return err
		}
		targets = append(targets, e)
	}
	for _, e := range targets {
		if err := repo.Stop(e, opts.Force); err != nil {
			return err
		}
	}
	if opts.Wait == 0 {
		for _, e := range targets {
			fmt.Fprintf(d.io.Err, "spawn: run %s was asked to stop; spawn ps shows whether it still runs\n", e.ID)
		}
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, opts.Wait)
	defer cancel()
	out := make([]stopped, 0, len(targets))
	var still []string
	for _, e := range targets {
		e, err := repo.Await(wctx, e, stopPoll, nil)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		s := stopped{ID: e.ID, Ended: e.State != runs.StateRunning}
		if !s.Ended {
			still = append(still, e.ID)
		} else if rec, err := e.ReadRecord(); err == nil {
			s.Status, s.ExitCode, s.Branch, s.Commits = rec.Status, rec.ExitCode, rec.Branch, len(rec.Commits)
		} else if e.Summary != nil {
			s.Status, s.ExitCode, s.Branch = e.Summary.Status, e.Summary.ExitCode, e.Summary.Branch
		}
		out = append(out, s)
	}
	if opts.JSON {
		if err := printJSON(d.io.Out, out); err != nil {
			return err
		}
	} else {
		for _, s := range out {
			if s.Ended {
				fmt.Fprintln(d.io.Out, stoppedLine(s))
			}
		}
	}
	if len(still) > 0 {
		id := still[0]
		more := ""
		if opts.Force {
			more = "; its agents may be stuck in a system call: spawn ps shows its process"
		} else {
			more = fmt.Sprintf("; spawn stop --force %s stops its agents at once", id)
		}
		return &fault.Error{Kind: fault.KindTimeout, Msg: fmt.Sprintf("run %s has not ended %s after it was asked to stop%s", id, config.FormatDuration(opts.Wait), more)}
	}
	return nil
}

// stoppedLine says how a stopped run ended and what to do next.
func stoppedLine(s stopped) string {
	where := "it left no commit"
	switch {
	case s.Branch == "":
		where = "it had changed nothing"
	case s.Commits > 0:
		where = fmt.Sprintf("its work is on %s (%s)", s.Branch, text.Plural(s.Commits, "commit"))
	}
	next := fmt.Sprintf("spawn resume %s continues it", s.ID)
	if s.Status != observability.StatusInterrupted {
		next = fmt.Sprintf("spawn show %s has its outcome", s.ID)
	}
	return fmt.Sprintf("%s: %s (exit %d); %s; %s", s.ID, s.Status, s.ExitCode, where, next)
}
