package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// maxStepSummary bounds what the action appends to $GITHUB_STEP_SUMMARY:
// GitHub refuses a step summary over 1 MiB.
const maxStepSummary = 1000 * 1024

// actionOptions is `spawn action`: the GitHub Action's inputs (action.yml
// passes each as INPUT_<NAME>) and the runner's files.
type actionOptions struct {
	Task          string // the task; empty takes the issue's title and body from the event
	Mode          string
	MaxIterations string
	Coder         string // the coder's CLI
	Reviewers     string // the reviewers' CLIs, comma-separated
	Config        string
	PR            string // a pull request number: run spawn pr on it instead of spawn run
	Repo          string // the repository's directory (the step's working directory)

	OutputFile  string // $GITHUB_OUTPUT
	SummaryFile string // $GITHUB_STEP_SUMMARY
	EventFile   string // $GITHUB_EVENT_PATH
	TempDir     string // $RUNNER_TEMP
}

func newActionCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:   "action",
		Hidden: true,
		Usage:  "run spawn as a GitHub Actions step (what action.yml calls)",
		Description: "Reads the action's inputs from INPUT_TASK, INPUT_MODE, INPUT_MAX_ITERATIONS, INPUT_CONFIG\n" +
			"and INPUT_PR, masks every secret of the environment, runs the task (spawn run) or the pull\n" +
			"request (spawn pr) with each phase in a log group, then writes the outputs to $GITHUB_OUTPUT\n" +
			"and the rendered record to $GITHUB_STEP_SUMMARY, whatever the outcome. The exit code is the run's.",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{errors.New("spawn action takes no arguments; it reads the inputs from INPUT_* variables")}
			}
			get := func(name string) string { return strings.TrimSpace(proc.Getenv(d.env, name)) }
			return runAction(c.Context, d, c.App, &actionOptions{
				Task: proc.Getenv(d.env, "INPUT_TASK"), Mode: get("INPUT_MODE"), MaxIterations: get("INPUT_MAX_ITERATIONS"),
				Coder: get("INPUT_CODER"), Reviewers: get("INPUT_REVIEWERS"), Config: get("INPUT_CONFIG"), PR: strings.TrimPrefix(get("INPUT_PR"), "#"), Repo: ".",
				OutputFile: get("GITHUB_OUTPUT"), SummaryFile: get("GITHUB_STEP_SUMMARY"),
				EventFile: get("GITHUB_EVENT_PATH"), TempDir: get("RUNNER_TEMP"),
			})
		},
	}
}

// runAction masks the secrets, runs, and reports the run to the runner. A
// run that fails, times out or hits a budget still gets its outputs and
// summary; only a step without $GITHUB_OUTPUT or $GITHUB_STEP_SUMMARY
// (not under Actions) is refused before anything runs.
func runAction(ctx context.Context, d *deps, app *cli.App, opts *actionOptions) error {
	// First of all, before any line that could hold one: the runner masks
	// these values in the log from now on. The lines go around the
	// redactor, which would hide the very value the runner must learn.
	if err := addMasks(unredacted(d.io.Out), d.env); err != nil {
		return fmt.Errorf("mask the secrets: %w", err)
	}
	if opts.OutputFile == "" || opts.SummaryFile == "" {
		return &fault.Error{Kind: fault.KindUsage, Msg: "spawn action runs as a GitHub Actions step (GITHUB_OUTPUT and GITHUB_STEP_SUMMARY are not set); outside Actions use spawn run"}
	}
	d.agents.Store(true)
	rec, err := actionRun(ctx, d, app, opts)
	if err != nil {
		fmt.Fprintf(d.io.Out, "::error title=spawn::%s\n", escapeCommand(err.Error()))
	}
	red := observability.NewRedactor(d.env)
	fmt.Fprintln(d.io.Out, "::group::spawn: summary")
	if rec.ID != "" {
		fmt.Fprint(d.io.Out, summary(rec))
	}
	fmt.Fprintln(d.io.Out, "::endgroup::")
	werr := errors.Join(
		appendFile(opts.OutputFile, red.Bytes(actionOutputs(rec))),
		appendFile(opts.SummaryFile, red.Bytes([]byte(markdownSummary(rec)))),
	)
	if werr != nil {
		return fmt.Errorf("report the run to the runner: %w", werr)
	}
	return exitIf(rec.ExitCode)
}

// actionRun runs the task, or spawn pr on the pull request, through the
// same code as the commands. The record is never nil.
func actionRun(ctx context.Context, d *deps, app *cli.App, opts *actionOptions) (*observability.Record, error) {
	env := slices.Clone(d.env)
	if opts.MaxIterations != "" {
		if n, err := strconv.Atoi(opts.MaxIterations); err != nil || n < 1 {
			err := &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("the max-iterations input %q is not a number of rounds; give 1 or more", opts.MaxIterations)}
			return rejected(opts.Task, err), err
		}
		env = append(env, "SPAWN_MAX_ITERATIONS="+opts.MaxIterations)
	}
	if opts.Coder != "" {
		env = append(env, "SPAWN_CODER="+opts.Coder)
	}
	if opts.Reviewers != "" {
		env = append(env, "SPAWN_REVIEWERS="+opts.Reviewers)
	}
	// The narration goes to stdout with the group markers, so that the two
	// are in order in the log.
	ad := &deps{io: IO{In: d.io.In, Out: d.io.Out, Err: d.io.Out}, env: env, hurry: d.hurry}
	if opts.PR != "" {
		return actionPR(ctx, ad, app, opts)
	}
	task, err := actionTask(opts)
	if err != nil {
		return rejected("", err), err
	}
	dir := opts.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "spawn-task-*.md")
	if err != nil {
		return rejected(task, err), fmt.Errorf("write the task to a file: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(task); err != nil {
		return rejected(task, err), errors.Join(fmt.Errorf("write the task to %s: %w", f.Name(), err), f.Close())
	}
	if err := f.Close(); err != nil {
		return rejected(task, err), fmt.Errorf("write the task to %s: %w", f.Name(), err)
	}
	return execute(ctx, ad, &runOptions{TaskFile: f.Name(), Mode: opts.Mode, Repo: opts.Repo, Base: "HEAD", Config: opts.Config, Progress: progressActions})
}

// actionPR runs `spawn pr N --json` through the app, and reads the record
// it prints.
func actionPR(ctx context.Context, d *deps, app *cli.App, opts *actionOptions) (*observability.Record, error) {
	cmd := app.Command("pr")
	if cmd == nil {
		err := &fault.Error{Kind: fault.KindNotImplemented, Msg: "this spawn has no spawn pr; leave the pr input empty, or use a spawn version that has it"}
		return rejected("", err), err
	}
	if n, err := strconv.Atoi(opts.PR); err != nil || n < 1 {
		err := &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("the pr input %q is not a pull request number; give one like 42", opts.PR)}
		return rejected("", err), err
	}
	args := []string{"spawn", "pr", opts.PR, "--json"}
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), "progress") {
			// --json alone would silence the narration the log shows.
			args = append(args, "--progress=human")
		}
	}
	if opts.Config != "" {
		args = append(args, "--config", opts.Config)
	}
	var out bytes.Buffer
	pd := &deps{io: IO{In: d.io.In, Out: &out, Err: d.io.Err}, env: d.env, hurry: d.hurry}
	fmt.Fprintf(d.io.Err, "::group::spawn pr %s\n", opts.PR)
	sub := newApp(pd, runRun, runDemo)
	err := sub.RunContext(ctx, reorderArgs(sub, args))
	fmt.Fprintln(d.io.Err, "::endgroup::")
	var usage usageError
	if errors.As(err, &usage) {
		err = &fault.Error{Kind: fault.KindUsage, Msg: err.Error()}
	}
	var rec observability.Record
	if jerr := json.Unmarshal(out.Bytes(), &rec); jerr != nil {
		if err == nil {
			err = fmt.Errorf("read the record spawn pr printed: %w", jerr)
		}
		return rejected("", err), err
	}
	var code exitCode
	if errors.As(err, &code) {
		err = nil // the outcome is in the record
	}
	return &rec, err
}

// actionTask is the task input, or else the issue's title and body from
// the event that triggered the workflow.
func actionTask(opts *actionOptions) (string, error) {
	if strings.TrimSpace(opts.Task) != "" {
		return opts.Task, nil
	}
	if opts.EventFile != "" {
		b, err := os.ReadFile(opts.EventFile)
		if err != nil {
			return "", &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("cannot read the workflow's event: %v", err), Err: err}
		}
		var ev struct {
			Issue *struct {
				Title string `json:"title"`
				Body  string `json:"body"`
			} `json:"issue"`
		}
		if err := json.Unmarshal(b, &ev); err != nil {
			return "", &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("cannot read the workflow's event %s: %v", opts.EventFile, err), Err: err}
		}
		if ev.Issue != nil && strings.TrimSpace(ev.Issue.Title) != "" {
			return strings.TrimSpace(ev.Issue.Title + "\n\n" + ev.Issue.Body), nil
		}
	}
	return "", &fault.Error{Kind: fault.KindUsage, Msg: "no task: give the action a task input, or trigger it from an issue (its title and body are the task), or give it a pr"}
}

// addMasks writes ::add-mask:: for every secret value of env (by the
// redactor's rule, any length, each line of a multi-line value apart).
func addMasks(w io.Writer, env []string) error {
	var b strings.Builder
	seen := map[string]bool{}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !observability.IsSecretName(name) {
			continue
		}
		for _, line := range strings.Split(value, "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.TrimSpace(line) == "" || seen[line] {
				continue
			}
			seen[line] = true
			fmt.Fprintf(&b, "::add-mask::%s\n", line)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// unredacted is the writer under spawn's redactor: only the secret masks
// are written there.
func unredacted(w io.Writer) io.Writer {
	if r, ok := w.(redacting); ok {
		return r.w
	}
	return w
}

// escapeCommand escapes a workflow command's message.
func escapeCommand(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// actionOutputs are the step's outputs in $GITHUB_OUTPUT's format, each
// value between delimiters of its own so that no value can end it early.
func actionOutputs(rec *observability.Record) []byte {
	open, resolved := 0, 0
	for _, f := range findingsByID(rec) {
		if f.Status == observability.FindingOpen {
			open++
		} else {
			resolved++
		}
	}
	rounds := map[int]bool{}
	for _, f := range rec.ReviewFeedback {
		rounds[f.Iteration] = true
	}
	pr, record := "", ""
	if rec.PRURL != nil {
		pr = *rec.PRURL
	}
	if rec.ID != "" {
		record = filepath.Join(rec.Repo, sandbox.Dir, "runs", rec.ID, "record.json")
	}
	var b bytes.Buffer
	for _, kv := range [][2]string{
		{"run-id", rec.ID},
		{"status", string(rec.Status)},
		{"verdict", string(rec.Verdict)},
		{"exit-code", strconv.Itoa(rec.ExitCode)},
		{"pr-url", pr},
		{"branch", rec.Branch},
		{"rounds", strconv.Itoa(len(rounds))},
		{"findings-open", strconv.Itoa(open)},
		{"findings-resolved", strconv.Itoa(resolved)},
		{"cost-usd", strconv.FormatFloat(rec.Usage.CostUSD, 'f', 4, 64)},
		{"record", record},
	} {
		delim := "SPAWN_EOF_" + randomHex()
		fmt.Fprintf(&b, "%s<<%s\n%s\n%s\n", kv[0], delim, kv[1], delim)
	}
	return b.Bytes()
}

func randomHex() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; a fixed delimiter is still
		// safe for the values spawn writes, which hold no such line.
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b[:])
}

// appendFile appends b to the runner's file at path.
func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

// markdownSummary renders the record for the job summary: the outcome, the
// facts, the review rounds, the findings still open and declined, the
// commits and the cost. It stays under maxStepSummary.
func markdownSummary(rec *observability.Record) string {
	var b strings.Builder
	if rec.ID == "" {
		fmt.Fprintf(&b, "## spawn: %s (exit %d)\n\n", outcome(rec), rec.ExitCode)
	} else {
		fmt.Fprintf(&b, "## spawn %s: %s (exit %d)\n\n", rec.ID, outcome(rec), rec.ExitCode)
	}
	if rec.Error != nil {
		fmt.Fprintf(&b, "> **%s**: %s\n\n", rec.Error.Kind, cell(rec.Error.Message))
	}
	b.WriteString("| | |\n|---|---|\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "| %s | %s |\n", k, v)
		}
	}
	row("task", cell(firstLine(rec.Task)))
	row("mode", string(rec.Mode))
	row("status", string(rec.Status))
	row("verdict", string(rec.Verdict))
	if rec.Branch != "" {
		row("branch", "`"+cell(rec.Branch)+"`")
	}
	if rec.PRURL != nil {
		row("pull request", cell(*rec.PRURL))
	}
	u := rec.Usage
	row("cost", fmt.Sprintf("$%.4f, %s, %d input / %d output tokens", u.CostUSD, text.Plural(u.Turns, "turn"), u.InputTokens, u.OutputTokens))
	row("duration", (time.Duration(rec.DurationMS) * time.Millisecond).String())

	if len(rec.ReviewFeedback) > 0 {
		b.WriteString("\n### Review rounds\n\n| round | reviewer | verdict | findings | resolved |\n|---|---|---|---|---|\n")
		for _, f := range rec.ReviewFeedback {
			var fs []string
			for _, x := range f.Findings {
				fs = append(fs, fmt.Sprintf("%s `%s` %s (%s)", x.Severity, cell(location(x)), cell(x.Title), x.Status))
			}
			if f.ParseError != "" {
				fs = append(fs, "the answer could not be used: "+cell(firstLine(f.ParseError)))
			}
			fmt.Fprintf(&b, "| %d | %s (%s) | %s | %s | %d |\n", f.Iteration, f.Reviewer, cell(f.Domain), f.Verdict, strings.Join(fs, "<br>"), len(f.Resolved)+len(f.ResolvedByApproval))
		}
	}
	if open := openFindings(rec); len(open) > 0 {
		fmt.Fprintf(&b, "\n### Open findings (%d)\n\n| severity | where | finding |\n|---|---|---|\n", len(open))
		for _, f := range open {
			fmt.Fprintf(&b, "| %s | `%s` | **%s** %s |\n", f.Severity, cell(location(f)), cell(f.Title), cell(firstLine(f.Detail)))
		}
	}
	if ds := declined(rec); len(ds) > 0 {
		byID := findingsByID(rec)
		b.WriteString("\n### Declined by the coder\n\n| finding | reason |\n|---|---|\n")
		for _, r := range ds {
			title := r.FindingID
			if f, ok := byID[r.FindingID]; ok {
				title = f.Title
			}
			fmt.Fprintf(&b, "| %s | %s |\n", cell(title), cell(firstLine(r.Reason)))
		}
	}
	if len(rec.Commits) > 0 {
		b.WriteString("\n### Commits\n\n| commit | round | by | message |\n|---|---|---|---|\n")
		for _, c := range rec.Commits {
			fmt.Fprintf(&b, "| `%.12s` | %d | %s | %s |\n", c.SHA, c.Iteration, c.LLM, cell(firstLine(c.Message)))
		}
	}
	if len(rec.Usage.ByAgent) > 0 {
		b.WriteString("\n### Cost per agent session\n\n| agent | role | round | cost | turns | tokens in / out |\n|---|---|---|---|---|---|\n")
		for _, a := range rec.Usage.ByAgent {
			fmt.Fprintf(&b, "| %s | %s | %d | $%.4f | %d | %d / %d |\n", a.LLM, a.Role, a.Iteration, a.CostUSD, a.Turns, a.InputTokens, a.OutputTokens)
		}
	}
	if len(rec.Notes) > 0 {
		b.WriteString("\n### Notes\n\n")
		for _, n := range rec.Notes {
			fmt.Fprintf(&b, "- %s\n", cell(n))
		}
	}
	s := b.String()
	if len(s) > maxStepSummary {
		const cut = "\n\n_(cut: the summary is longer than GitHub allows; the whole record is the `record` output)_\n"
		s = strings.ToValidUTF8(s[:maxStepSummary-len(cut)], "") + cut
	}
	return s
}

// cell makes text safe inside a markdown table cell: one line, no column
// separator, no HTML.
func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\r", " ", "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}
