package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// lsOptions is `spawn ls` after flag parsing.
type lsOptions struct {
	Repo string
	JSON bool
	Wide bool
}

// lsWidth is the widest line `spawn ls` prints without --wide.
const lsWidth = 100

func newLsCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:  "ls",
		Usage: "list the repository's runs, newest first",
		Description: "One line per run, at most 100 columns: id, age, mode, outcome (approved, changes\n" +
			"requested, interrupted, failed: <kind>...), review rounds, cost and task. A run whose spawn\n" +
			"is still working is running (its cost so far); a run whose record cannot be read is broken.\n" +
			"--wide shows status and verdict apart, the branch (- once spawn clean removed it) and the\n" +
			"whole first line of the task.\n\n" +
			"--json prints one array, newest first, of objects with the fields: id, state\n" +
			"(running | abandoned | finished | broken), status, mode, verdict, exit_code,\n" +
			"rounds, cost_usd, branch, task, started_at, finished_at (null while running),\n" +
			"pr_url, error (the record's {kind, message}, or null), problem (why a broken\n" +
			"run's record cannot be read), dir (the run directory) and pid (the live run's\n" +
			"spawn process, 0 when it is not live).\n\n" +
			"Example:\n   spawn ls\n   spawn ls --json | jq -r '.[0].id'",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			repoFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the runs as one JSON array"},
			&cli.BoolFlag{Name: "wide", Aliases: []string{"w"}, Usage: "show every column: status, verdict, branch, the whole task"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("spawn ls takes no argument (got %q); spawn show ID shows one run", c.Args().First())}
			}
			return runLs(c.Context, d, &lsOptions{Repo: c.String("repo"), JSON: c.Bool("json"), Wide: c.Bool("wide")})
		},
	}
}

// lsRun is one run in `spawn ls --json`. The fields are documented in the
// command's help.
type lsRun struct {
	ID         string                `json:"id"`
	State      runs.State            `json:"state"`
	Status     observability.Status  `json:"status"`
	Mode       observability.Mode    `json:"mode"`
	Verdict    observability.Verdict `json:"verdict"`
	ExitCode   int                   `json:"exit_code"`
	Rounds     int                   `json:"rounds"`
	CostUSD    float64               `json:"cost_usd"`
	Branch     string                `json:"branch"`
	Task       string                `json:"task"`
	StartedAt  *time.Time            `json:"started_at"`
	FinishedAt *time.Time            `json:"finished_at"`
	PRURL      *string               `json:"pr_url"`
	Error      *observability.Error  `json:"error"`
	Problem    string                `json:"problem,omitempty"`
	Dir        string                `json:"dir"`
	PID        int                   `json:"pid"`
}

// runLs is `spawn ls`: the table (or the JSON array) of the runs, exit 0
// even when there is none.
func runLs(ctx context.Context, d *deps, opts *lsOptions) error {
	repo, err := d.openRepo(ctx, opts.Repo)
	if err != nil {
		return err
	}
	entries, err := repo.List()
	if err != nil {
		return err
	}
	for _, e := range entries {
		// A live run's record counts the cost of the sessions that
		// ended; its event stream has the running total.
		if e.State == runs.StateRunning && e.Summary != nil {
			l, err := runs.ReadLive(e.Paths)
			if err != nil {
				fmt.Fprintf(d.io.Err, "spawn: warning: %v\n", err)
			}
			e.Summary.CostUSD = max(e.Summary.CostUSD, l.CostUSD)
		}
	}
	if opts.JSON {
		out := make([]lsRun, 0, len(entries))
		for _, e := range entries {
			out = append(out, lsEntry(e))
		}
		return printJSON(d.io.Out, out)
	}
	if len(entries) == 0 {
		fmt.Fprintf(d.io.Err, "no run yet in %s; start one with: spawn run \"describe the task\"\n", repo.Dir)
		return nil
	}
	if !opts.Wide {
		return lsTable(d.io.Out, entries, time.Now())
	}
	branches, err := localBranches(ctx, repo)
	if err != nil {
		fmt.Fprintf(d.io.Err, "spawn: warning: cannot list the branches, so removed ones are shown too: %v\n", err)
	}
	return lsWide(d.io.Out, entries, time.Now(), branches)
}

// localBranches is the set of the repository's local branches; nil when
// they cannot be listed.
func localBranches(ctx context.Context, repo *runs.Repo) (map[string]bool, error) {
	out, err := repo.Git.Run(ctx, "for-each-ref", "--format=%(refname:short)", "refs/heads/")
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, b := range strings.Fields(out) {
		set[b] = true
	}
	return set, nil
}

// lsEntry is a registry entry as `spawn ls --json` prints it.
func lsEntry(e runs.Entry) lsRun {
	r := lsRun{ID: e.ID, State: e.State, Dir: e.Dir}
	if e.State == runs.StateRunning && e.Holder != nil {
		r.PID = e.Holder.PID
	}
	if e.Err != nil && e.Summary == nil {
		r.Problem = e.Err.Error()
	}
	if s := e.Summary; s != nil {
		started := s.StartedAt
		r.Status, r.Mode, r.Verdict, r.ExitCode = s.Status, s.Mode, s.Verdict, s.ExitCode
		r.Rounds, r.CostUSD, r.Branch, r.Task = s.Rounds, s.CostUSD, s.Branch, s.Task
		r.StartedAt, r.FinishedAt, r.PRURL, r.Error = &started, s.FinishedAt, s.PRURL, s.Error
	}
	return r
}

// lsTable writes the runs as a table of at most lsWidth columns, one line
// each, ages counted to now: the task is cut (at a word) to fit.
func lsTable(w io.Writer, entries []runs.Entry, now time.Time) error {
	rows := [][]string{{"ID", "AGE", "MODE", "OUTCOME", "ROUNDS", "COST", "TASK"}}
	for _, e := range entries {
		s := e.Summary
		if s == nil {
			rows = append(rows, []string{e.ID, "-", "-", lsStatus(e), "-", "-", lsProblem(e)})
			continue
		}
		out := lsStatus(e)
		if e.State == runs.StateFinished {
			errKind := ""
			if s.Error != nil {
				errKind = s.Error.Kind
			}
			out = outcomeOf(s.Status, s.Verdict, errKind)
		}
		rows = append(rows, []string{e.ID, age(now.Sub(s.StartedAt)), string(s.Mode), out, fmt.Sprint(s.Rounds),
			fmt.Sprintf("$%.4f", s.CostUSD), firstLine(s.Task)})
	}
	return writeColumns(w, rows, lsWidth)
}

// lsWide writes the runs with every column: status and verdict apart, the
// branch ("-" when branches, when known, does not hold it: spawn clean
// removed it) and the task's whole first line.
func lsWide(w io.Writer, entries []runs.Entry, now time.Time, branches map[string]bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGE\tMODE\tSTATUS\tVERDICT\tROUNDS\tCOST\tBRANCH\tTASK")
	for _, e := range entries {
		s := e.Summary
		if s == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t%s\t-\t-\t-\t-\t%s\n", e.ID, lsStatus(e), lsProblem(e))
			continue
		}
		branch := s.Branch
		if branches != nil && !branches[branch] {
			branch = ""
		}
		task, _, _ := strings.Cut(strings.TrimSpace(s.Task), "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t$%.4f\t%s\t%s\n", e.ID, age(now.Sub(s.StartedAt)), s.Mode, lsStatus(e),
			s.Verdict, s.Rounds, s.CostUSD, orDash(branch), task)
	}
	return tw.Flush()
}

// lsProblem says why a run has no summary.
func lsProblem(e runs.Entry) string {
	switch {
	case e.State == runs.StateRunning:
		return "starting: no record yet"
	case e.Err != nil:
		return firstLine(e.Err.Error())
	}
	return "its record cannot be read"
}

// writeColumns writes rows as columns two spaces apart, the last column
// cut (at a word) so that no line is wider than width, unless the other
// columns alone are; then it keeps 20 runes of it.
func writeColumns(w io.Writer, rows [][]string, width int) error {
	if len(rows) == 0 {
		return nil
	}
	last := len(rows[0]) - 1
	widths := make([]int, last)
	for _, r := range rows {
		for i := 0; i < last; i++ {
			widths[i] = max(widths[i], len([]rune(r[i])))
		}
	}
	room := width
	for _, n := range widths {
		room -= n + 2
	}
	room = max(room, 20)
	var b strings.Builder
	for _, r := range rows {
		for i := 0; i < last; i++ {
			b.WriteString(r[i])
			b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(r[i]))+2))
		}
		b.WriteString(cut(r[last], room))
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lsStatus is the status column: what the registry knows of a run's life
// first (running, abandoned, broken), then how its record says it ended.
func lsStatus(e runs.Entry) string {
	switch {
	case e.State == runs.StateFinished && e.Summary != nil:
		return string(e.Summary.Status)
	case e.State == "":
		return "unknown"
	}
	return string(e.State)
}

// age is a duration as a person reads a run's age: 45s, 12m, 5h, 3d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// cut shortens s to at most n runes for the screen: at the last word
// boundary that fits, ending with "..." when it was longer (mid-word only
// for a single word longer than n). Records keep the whole text.
func cut(s string, n int) string {
	// The narration cuts every line an agent makes: one that fits is
	// let through without being made into runes.
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	if isASCII(s[:n]) {
		// Most lines: their first n bytes are their first n runes, and
		// stand for themselves (no invalid byte becomes U+FFFD).
		keep := s[:n-3]
		if s[n-3] != ' ' {
			if i := strings.LastIndexFunc(keep, unicode.IsSpace); i > 0 {
				keep = keep[:i]
			}
		}
		return strings.TrimRight(keep, " \t,;:.") + "..."
	}
	// Its first n runes, of a line that may be long.
	end := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	r := []rune(s[:end])
	keep := r[:n-3]
	if r[n-3] != ' ' {
		if i := strings.LastIndexFunc(string(keep), unicode.IsSpace); i > 0 {
			keep = []rune(string(keep)[:i])
		}
	}
	return strings.TrimRight(string(keep), " \t,;:.") + "..."
}

// isASCII reports whether s holds only ASCII bytes.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
