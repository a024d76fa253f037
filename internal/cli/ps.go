package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// psOptions is `spawn ps` after flag parsing.
type psOptions struct {
	Repo string
	JSON bool
}

func newPsCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:  "ps",
		Usage: "show what the live runs are doing",
		Description: "One line per run whose spawn is still working: id, the pid of its spawn process,\n" +
			"phase (coder, reviewer, fixing...), review round, the coder's turn, the run's cost so\n" +
			"far, the time since it started, and the last thing an agent did (Edit main.go).\n" +
			"spawn stop ID stops a run as Ctrl-C does.\n\n" +
			"--json prints one array of objects with the fields: id, phase, round, seat (a\n" +
			"reviewer seat), turn, cost_usd, started_at, elapsed_ms, last_action, last_role\n" +
			"(the agent that did it), updated_at (the time of the run's last event), task,\n" +
			"branch and pid (the run's spawn process).\n\n" +
			"Example:\n   spawn ps\n   spawn ps --json",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			repoFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the live runs as one JSON array"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("spawn ps takes no argument (got %q); spawn show ID shows one run", c.Args().First())}
			}
			return runPs(c.Context, d, &psOptions{Repo: c.String("repo"), JSON: c.Bool("json")})
		},
	}
}

// psRun is one live run in `spawn ps --json`. The fields are documented
// in the command's help.
type psRun struct {
	ID         string    `json:"id"`
	Phase      string    `json:"phase"`
	Round      int       `json:"round"`
	Seat       string    `json:"seat,omitempty"`
	Turn       int       `json:"turn"`
	CostUSD    float64   `json:"cost_usd"`
	StartedAt  time.Time `json:"started_at"`
	ElapsedMS  int64     `json:"elapsed_ms"`
	LastAction string    `json:"last_action"`
	LastRole   string    `json:"last_role,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
	Task       string    `json:"task"`
	Branch     string    `json:"branch"`
	PID        int       `json:"pid"`
}

// runPs is `spawn ps`: the live runs, exit 0 even when there is none.
func runPs(ctx context.Context, d *deps, opts *psOptions) error {
	repo, err := d.openRepo(ctx, opts.Repo)
	if err != nil {
		return err
	}
	entries, err := repo.List()
	if err != nil {
		return err
	}
	now := time.Now()
	live := []psRun{}
	for _, e := range entries {
		if e.State != runs.StateRunning {
			continue
		}
		r, err := psEntry(e, now)
		if err != nil {
			// One unreadable run does not hide the others.
			fmt.Fprintf(d.io.Err, "spawn: warning: %v\n", err)
		}
		live = append(live, r)
	}
	if opts.JSON {
		return printJSON(d.io.Out, live)
	}
	if len(live) == 0 {
		fmt.Fprintln(d.io.Err, "no run is live; spawn ls lists the runs that ended")
		return nil
	}
	return psTable(d.io.Out, live)
}

// psEntry is what a live run is doing, from its event stream, its record's
// summary and its lock; the error says what could not be read, and the
// run is still described as far as it could be.
func psEntry(e runs.Entry, now time.Time) (psRun, error) {
	r := psRun{ID: e.ID, Phase: "starting"}
	if e.Holder != nil {
		r.PID, r.StartedAt = e.Holder.PID, e.Holder.Since
	}
	if s := e.Summary; s != nil {
		r.StartedAt, r.Task, r.Branch = s.StartedAt, s.Task, s.Branch
	}
	if !r.StartedAt.IsZero() {
		r.ElapsedMS = now.Sub(r.StartedAt).Milliseconds()
	}
	l, err := runs.ReadLive(e.Paths)
	if err != nil {
		return r, err
	}
	if l.Phase != "" {
		r.Phase = string(l.Phase)
	}
	r.Round, r.Seat, r.Turn, r.CostUSD, r.UpdatedAt = l.Round, l.Seat, l.Turns, l.CostUSD, l.Updated
	r.LastRole = string(l.Role)
	var recErr error
	if l.Tool != "" && l.Sandbox == "" {
		// The sandbox phase is far back in a long run's stream: the record
		// names the worktree, whose paths read as the repository's own.
		var rec *observability.Record
		if rec, recErr = e.ReadRecord(); recErr == nil {
			l.Sandbox = rec.SandboxPath
		} else {
			recErr = fmt.Errorf("run %s: %w", e.ID, recErr)
		}
	}
	r.LastAction = lastAction(l)
	return r, recErr
}

// lastAction is the last tool call of a live run as a person reads it:
// the tool and its telling argument, paths relative to the worktree
// ("Edit main.go"); "" when no agent called a tool yet.
func lastAction(l runs.Live) string {
	if l.Tool == "" {
		return ""
	}
	input := l.Input
	if l.Sandbox != "" {
		input = bytes.ReplaceAll(input, []byte(l.Sandbox+"/"), nil)
	}
	if arg := toolSummary(input); arg != "" {
		return l.Tool + " " + arg
	}
	return l.Tool
}

// psTable writes the live runs as a table.
func psTable(w io.Writer, live []psRun) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPID\tPHASE\tROUND\tTURN\tCOST\tELAPSED\tLAST ACTION")
	for _, r := range live {
		phase := r.Phase
		if r.Seat != "" && r.Seat != "all" {
			phase += " (" + r.Seat + ")"
		}
		elapsed := "-"
		if !r.StartedAt.IsZero() {
			elapsed = (time.Duration(r.ElapsedMS) * time.Millisecond).Round(time.Second).String()
		}
		pid := "-"
		if r.PID > 0 {
			pid = fmt.Sprint(r.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t$%.4f\t%s\t%s\n", r.ID, pid, phase, r.Round, r.Turn, r.CostUSD, elapsed, orDash(cut(r.LastAction, 60)))
	}
	return tw.Flush()
}
