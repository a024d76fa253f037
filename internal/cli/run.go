package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// runOptions is `spawn run` after flag parsing.
type runOptions struct {
	Task     string
	TaskFile string
	TaskArgs []string
	Mode     string
	Repo     string
	Base     string
	Branch   string
	Config   string
	JSON     bool
	Quiet    bool // no narration of what the agents do; notes, warnings and the summary stay
	// Limits are the limits the flags set (limitFlags).
	Limits    config.Overrides
	Model     string
	Coder     string   // --coder
	Reviewers []string // --reviewer, repeated
	PRBase    string   // github mode: the pull request's base branch
	// Progress is --progress: what stderr shows while the run runs.
	Progress progressMode
	// Detach starts the run in a process of its own (runDetach); childArgs
	// are the flags that process gets, DetachedID the id it runs under.
	Detach     bool
	DetachedID string
	childArgs  []string
}

func newRunCmd(d *deps, runF func(context.Context, *deps, *runOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a task: a coder in a sandbox branch, reviewed until approved",
		ArgsUsage: "[--] TASK... | -",
		Description: "The task comes from the arguments, from --task-file, or from stdin with -.\n" +
			"The coder works in a git worktree at .spawn/worktrees/<id> on its own branch;\n" +
			"your working tree is never touched. The record is .spawn/runs/<id>/record.json.\n" +
			"spawn ls, show, logs, diff and resume find the run again.\n\n" +
			"Example:\n   spawn run \"add a /healthz endpoint that returns 200\"\n" +
			"   spawn run --mode solo --task-file task.md\n" +
			"   echo \"fix the flaky test in store_test.go\" | spawn run --json -",
		OnUsageError: onUsageError,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "mode", Usage: "solo | sequential | pingpong | github (default: the config's mode, pingpong out of the box)"},
			&cli.StringFlag{Name: "repo", Usage: "the git repository to work on", Value: "."},
			&cli.StringFlag{Name: "base", Usage: "the commit the sandbox branch starts from", Value: "HEAD"},
			&cli.StringFlag{Name: "branch", Usage: "the sandbox branch's name (default: spawn/<id>/<slug>)"},
			&cli.StringFlag{Name: "config", Usage: "the configuration file (default: <repo>/spawn-team.toml, then $XDG_CONFIG_HOME/spawn/spawn-team.toml)"},
			&cli.StringFlag{Name: "task-file", Usage: "read the task from this file"},
			&cli.BoolFlag{Name: "json", Usage: "print the record as the only output, one JSON document on stdout"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not narrate what the agents do on stderr (the summary, notes and warnings stay)"},
			&cli.StringFlag{Name: "coder", Usage: "the coder's agent CLI: " + strings.Join(runners.NewRegistry().Names(), " | ") + " (default: the config's coder)"},
			&cli.StringSliceFlag{Name: "reviewer", Usage: "a reviewer's agent CLI, one seat of the review board; repeat it for a board of several (default: the config's reviewers)"},
			&cli.StringFlag{Name: "model", Usage: "the coder's model (its CLI's --model; default: [runners.<coder>] model)"},
			&cli.StringFlag{Name: "pr-base", Usage: "github mode: the pull request's base branch (default: the branch --base names, else the repository's default branch)"},
			progressFlag(),
			&cli.BoolFlag{Name: "detach", Usage: "start the run in the background, print its id and return (with --json, {\"id\": ...}); its output goes to detach.log in the run directory"},
			&cli.StringFlag{Name: detachedIDFlag, Hidden: true},
		}, limitFlags()...),
		Action: func(c *cli.Context) error {
			if err := danglingValue(c); err != nil {
				return err
			}
			if err := checkDetachedID(c.String(detachedIDFlag)); err != nil {
				return err
			}
			progress, err := parseProgress(c.String("progress"))
			if err != nil {
				return err
			}
			opts := &runOptions{
				TaskFile:   c.String("task-file"),
				TaskArgs:   c.Args().Slice(),
				Mode:       c.String("mode"),
				Repo:       c.String("repo"),
				Base:       c.String("base"),
				Branch:     c.String("branch"),
				Config:     c.String("config"),
				JSON:       c.Bool("json"),
				Quiet:      c.Bool("quiet"),
				Limits:     limitOverrides(c),
				Model:      c.String("model"),
				Coder:      c.String("coder"),
				Reviewers:  c.StringSlice("reviewer"),
				PRBase:     c.String("pr-base"),
				Progress:   progress,
				Detach:     c.Bool("detach"),
				DetachedID: c.String(detachedIDFlag),
				childArgs:  childRunArgs(c),
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
		return "", &fault.Error{Kind: fault.KindUsage, Msg: "give the task either as arguments or with --task-file, not both"}
	case opts.TaskFile != "":
		b, err := os.ReadFile(opts.TaskFile)
		if err != nil {
			return "", &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("cannot read the task file: %v", err), Err: err}
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("the task file %s is empty; write the task in it, or give the task as words", opts.TaskFile)}
		}
		return string(b), nil
	case args != "-" && slices.Contains(opts.TaskArgs, "-"):
		return "", &fault.Error{Kind: fault.KindUsage, Msg: `"-" reads the task from stdin and must be the only word; give the task as words, or pipe it: echo "fix the bug" | spawn run -`}
	case args == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("cannot read the task from stdin: %v", err), Err: err}
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", &fault.Error{Kind: fault.KindUsage, Msg: `stdin held no task; pipe the task in, such as: echo "fix the bug" | spawn run -`}
		}
		return string(b), nil
	case args == "":
		return "", &fault.Error{Kind: fault.KindUsage, Msg: `no task given; try: spawn run "add a /healthz endpoint"`}
	}
	return args, nil
}

// runRun is `spawn run`: it prints the summary (or, with --json, the
// record: one document, even when nothing was created) and returns the
// run's exit code.
func runRun(ctx context.Context, d *deps, opts *runOptions) error {
	if opts.Detach {
		return runDetach(ctx, d, opts)
	}
	return d.runAgents(opts.JSON, func() (*observability.Record, error) { return execute(ctx, d, opts) })
}

// runAgents runs a command that runs agents (run, resume, pr) and reports
// its record: the summary, or with json the record as the one document
// (even when nothing was created); the error on stderr; the run's exit
// code.
func (d *deps) runAgents(json bool, run func() (*observability.Record, error)) error {
	d.agents.Store(true)
	rec, err := run()
	switch {
	case json:
		if perr := printJSON(d.io.Out, rec); perr != nil {
			return errors.Join(err, perr)
		}
	case rec.ID != "":
		fmt.Fprint(d.io.Out, summary(rec))
	}
	if err != nil {
		fmt.Fprintf(d.io.Err, "spawn: %v\n", err)
	}
	return exitIf(rec.ExitCode)
}

// openConfigured opens the repository that holds dir (repairing its
// abandoned runs) and loads the configuration for it, with the flags'
// overrides.
func (d *deps) openConfigured(ctx context.Context, dir, file string, flags config.Overrides) (*runs.Repo, config.Loaded, error) {
	repo, err := d.openRepo(ctx, dir)
	if err != nil {
		return nil, config.Loaded{}, err
	}
	loaded, err := config.Load(ctx, config.Source{File: file, RepoDir: repo.Dir, Top: repo.Dir, Env: d.env, Flags: flags})
	return repo, loaded, err
}

// execute assembles the configuration and runs the task. The record is
// never nil.
func execute(ctx context.Context, d *deps, opts *runOptions) (*observability.Record, error) {
	task, err := readTask(opts, d.io.In)
	if err != nil {
		return rejected(task, err), err
	}
	flags := opts.Limits
	flags.Mode, flags.Model, flags.PRBase = observability.Mode(opts.Mode), opts.Model, opts.PRBase
	flags.Coder, flags.Reviewers = opts.Coder, opts.Reviewers
	// Runs whose spawn died are repaired before a new one starts. Outside
	// a repository there is nothing to repair, and spawn.Run says why it
	// cannot run there.
	// The git process that finds the repository resolves the run's base
	// too, for the sandbox.
	src := config.Source{File: opts.Config, RepoDir: opts.Repo, Env: d.env, Flags: flags}
	var found *sandbox.Found
	if repo, err := d.openRepoAt(ctx, opts.Repo, cmp.Or(opts.Base, "HEAD")); err == nil {
		src.Top, found = repo.WorkTree(), &repo.Found
	} else if spawn.KindOf(err) != fault.KindRepo {
		return rejected(task, err), err
	}
	loaded, err := config.Load(ctx, src)
	if err != nil {
		return rejected(task, err), err
	}
	sink := d.progressSink(opts.Progress, opts.JSON, opts.Quiet)
	defer sink.Close()
	return spawn.Run(ctx, spawn.Options{
		Task:    task,
		Config:  loaded.Config,
		Notes:   loaded.Notes,
		RepoDir: opts.Repo,
		Base:    opts.Base,
		Branch:  opts.Branch,
		Found:   found,
		Env:     d.env,
		Hurry:   d.hurry,
		ID:      opts.DetachedID,
	}, sink)
}

// rejected is the record-shaped answer to input the CLI refused before a
// run could start.
func rejected(task string, err error) *observability.Record {
	now := time.Now()
	rec := observability.New("", task, "", now)
	rec.Error = &observability.Error{Kind: string(spawn.KindOf(err)), Message: err.Error()}
	rec.Finish(observability.StatusFailed, spawn.ExitCode(err, observability.VerdictNone), now)
	return rec
}

// firstLine is the first line of s, cut to fit a terminal line (cut).
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return cut(line, 100)
}
