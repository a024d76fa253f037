package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/team"
)

// runOptions is `spawn run` after flag parsing.
type runOptions struct {
	Task         string
	TaskFile     string
	TaskArgs     []string
	Mode         string
	Repo         string
	Base         string
	Branch       string
	Config       string
	JSON         bool
	IdleTimeout  time.Duration
	TotalTimeout time.Duration
	Model        string
}

func newRunCmd(d *deps, runF func(context.Context, *deps, *runOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a task: a coder in a sandbox branch, reviewed until approved",
		ArgsUsage: "[--] TASK... | -",
		Description: "The task comes from the arguments, from --task-file, or from stdin with -.\n" +
			"The coder works in a git worktree at .spawn/worktrees/<id> on its own branch;\n" +
			"your working tree is never touched. The record is .spawn/runs/<id>/record.json.",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mode", Usage: "solo | sequential | pingpong | github (default: the config's mode, pingpong out of the box)"},
			&cli.StringFlag{Name: "repo", Usage: "the git repository to work on", Value: "."},
			&cli.StringFlag{Name: "base", Usage: "the commit the sandbox branch starts from", Value: "HEAD"},
			&cli.StringFlag{Name: "branch", Usage: "the sandbox branch's name (default: spawn/<slug>-<id>)"},
			&cli.StringFlag{Name: "config", Usage: "the configuration file (default: <repo>/spawn-team.toml, then $XDG_CONFIG_HOME/spawn/spawn-team.toml)"},
			&cli.StringFlag{Name: "task-file", Usage: "read the task from this file"},
			&cli.BoolFlag{Name: "json", Usage: "print the record as the only output, one JSON document on stdout"},
			&cli.DurationFlag{Name: "idle-timeout", Usage: "stop an agent that prints nothing for this long (e.g. 5m)"},
			&cli.DurationFlag{Name: "total-timeout", Usage: "stop an agent that runs this long (e.g. 30m)"},
			&cli.StringFlag{Name: "model", Usage: "the coder's model (claude --model)"},
		},
		Action: func(c *cli.Context) error {
			opts := &runOptions{
				TaskFile:     c.String("task-file"),
				TaskArgs:     c.Args().Slice(),
				Mode:         c.String("mode"),
				Repo:         c.String("repo"),
				Base:         c.String("base"),
				Branch:       c.String("branch"),
				Config:       c.String("config"),
				JSON:         c.Bool("json"),
				IdleTimeout:  c.Duration("idle-timeout"),
				TotalTimeout: c.Duration("total-timeout"),
				Model:        c.String("model"),
			}
			return runF(c.Context, d, opts)
		},
	}
}

// readTask takes the task from the arguments, --task-file or stdin ("-").
func readTask(opts *runOptions, stdin io.Reader) (string, error) {
	args := strings.TrimSpace(strings.Join(opts.TaskArgs, " "))
	switch {
	case opts.TaskFile != "" && args != "":
		return "", &spawn.Error{Kind: spawn.KindUsage, Msg: "give the task either as arguments or with --task-file, not both"}
	case opts.TaskFile != "":
		b, err := os.ReadFile(opts.TaskFile)
		if err != nil {
			return "", &spawn.Error{Kind: spawn.KindUsage, Msg: fmt.Sprintf("cannot read the task file: %v", err), Err: err}
		}
		return string(b), nil
	case args == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", &spawn.Error{Kind: spawn.KindUsage, Msg: fmt.Sprintf("cannot read the task from stdin: %v", err), Err: err}
		}
		return string(b), nil
	case args == "":
		return "", &spawn.Error{Kind: spawn.KindUsage, Msg: `no task given; try: spawn run "add a /healthz endpoint"`}
	}
	return args, nil
}

// runRun is `spawn run`.
func runRun(ctx context.Context, d *deps, opts *runOptions) error {
	rec, err := execute(ctx, d, opts)
	code := spawn.ExitCode(err, verdictOf(rec))
	switch {
	case opts.JSON && rec != nil:
		if perr := printJSON(d.io.Out, rec); perr != nil {
			return perr
		}
	case opts.JSON:
		_ = printJSON(d.io.Out, map[string]any{
			"schema":    observability.Schema,
			"status":    observability.StatusFailed,
			"exit_code": code,
			"error":     observability.Error{Kind: string(spawn.KindOf(err)), Message: err.Error()},
		})
	case rec != nil:
		fmt.Fprint(d.io.Out, summary(rec))
	}
	if err != nil {
		fmt.Fprintf(d.io.Err, "spawn: %v\n", err)
	}
	return exitIf(code)
}

func verdictOf(rec *observability.Record) string {
	if rec == nil {
		return observability.VerdictNone
	}
	return rec.Verdict
}

// execute assembles the configuration and runs the task.
func execute(ctx context.Context, d *deps, opts *runOptions) (*observability.Record, error) {
	task, err := readTask(opts, d.io.In)
	if err != nil {
		return nil, err
	}
	cfg, _, err := spawn.LoadConfig(ctx, opts.Config, opts.Repo, d.env)
	if err != nil {
		return nil, err
	}
	if opts.Mode != "" {
		cfg.Team.Mode = opts.Mode
	}
	if opts.IdleTimeout != 0 {
		cfg.Spawn.IdleTimeout = opts.IdleTimeout
	}
	if opts.TotalTimeout != 0 {
		cfg.Spawn.TotalTimeout = opts.TotalTimeout
	}
	if opts.Model != "" {
		cfg.Runners.Claude.Model = opts.Model
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}
	run := spawn.Options{
		Task:    task,
		Mode:    cfg.Team.Mode,
		RepoDir: opts.Repo,
		Base:    opts.Base,
		Branch:  opts.Branch,
		Config:  cfg,
		Env:     d.env,
		Notes:   d.io.Err,
		Hurry:   d.hurry,
	}
	if d.io.ErrTTY && !opts.JSON {
		pl := newProgressLine(d.io.Err, true)
		defer pl.Close()
		run.OnProgress = pl.Progress
	}
	return team.Execute(ctx, run)
}

// summary is what a person reads at the end of a run.
func summary(rec *observability.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "spawn %s: %s (exit %d) in %s\n", rec.ID, rec.Status, rec.ExitCode, time.Duration(rec.DurationMS)*time.Millisecond)
	fmt.Fprintf(&b, "  task:      %s\n", firstLine(rec.Task))
	fmt.Fprintf(&b, "  branch:    %s\n", rec.Branch)
	fmt.Fprintf(&b, "  worktree:  %s\n", rec.SandboxPath)
	for _, c := range rec.Commits {
		fmt.Fprintf(&b, "  commit:    %.12s %s (%s)\n", c.SHA, c.Message, c.LLM)
	}
	if len(rec.Commits) == 0 {
		fmt.Fprintf(&b, "  commits:   none; the coder changed nothing\n")
	}
	for _, p := range rec.PermissionsRequested {
		fmt.Fprintf(&b, "  denied:    %s %s\n", p.Tool, firstLine(string(p.Input)))
	}
	if len(rec.ReviewFeedback) > 0 {
		b.WriteString(rounds(rec))
	}
	fmt.Fprintf(&b, "  usage:     %d turns, %d input / %d output tokens, $%.4f\n", rec.Usage.Turns, rec.Usage.InputTokens, rec.Usage.OutputTokens, rec.Usage.CostUSD)
	fmt.Fprintf(&b, "  record:    %s\n", filepath.Join(rec.Repo, spawn.Dir, "runs", rec.ID, "record.json"))
	if rec.Error != nil {
		fmt.Fprintf(&b, "  error:     %s: %s\n", rec.Error.Kind, rec.Error.Message)
	}
	if len(rec.Commits) > 0 {
		fmt.Fprintf(&b, "  take it:   git merge %s   (or inspect: git -C %s log; or --mode github for a pull request)\n", rec.Branch, rec.SandboxPath)
	}
	return b.String()
}

// rounds is the table of review rounds: each reviewer's verdict, its
// findings by severity, and what it resolved; then the run's verdict.
func rounds(rec *observability.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  reviews:   %-5s %-24s %-16s %-34s %s\n", "round", "reviewer", "verdict", "findings (crit/high/med/low/info)", "resolved")
	for _, f := range rec.ReviewFeedback {
		counts := map[string]int{}
		for _, x := range f.Findings {
			counts[x.Severity]++
		}
		sev := fmt.Sprintf("%d/%d/%d/%d/%d", counts["critical"], counts["high"], counts["medium"], counts["low"], counts["info"])
		fmt.Fprintf(&b, "             %-5d %-24s %-16s %-34s %d\n", f.Iteration, f.Reviewer+" ("+f.Domain+")", f.Verdict, sev, len(f.Resolved))
	}
	fmt.Fprintf(&b, "  verdict:   %s\n", rec.Verdict)
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > 100 {
		line = string(r[:97]) + "..."
	}
	return line
}
