package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/demo"
	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// demoOptions is `spawn demo` after flag parsing.
type demoOptions struct {
	Coder    string
	Reviewer string
	// Bins are the binaries to drive, by CLI name (--claude, --codex...).
	Bins map[string]string
	Dir  string
	JSON bool
	Mode observability.Mode // pingpong, or github against Forge
	// Forge is the GitHub a github-mode demo opens its pull request on.
	// The spawn binary has none (the fake GitHub is test code): the
	// GitHub demo is a test, which gives it one (make demo-github).
	Forge demoForge
}

// demoForge is a GitHub for the demo: it serves the demo's repository,
// and tells what the run did there.
type demoForge interface {
	// Start serves repo, the demo's repository in root, and returns the
	// environment that points spawn at it (GITHUB_API_URL, a token...).
	Start(ctx context.Context, root string, repo git.Repo) (env []string, err error)
	// Describe writes what the run did on it: the pull request, its
	// reviews, replies and threads.
	Describe(w io.Writer)
	Close()
}

func newDemoCmd(d *deps, runF func(context.Context, *deps, *demoOptions) error) *cli.Command {
	reg := runners.NewRegistry()
	defaults := config.Default().Team
	flags := []cli.Flag{
		&cli.StringFlag{Name: "coder", Usage: "the coder's agent CLI: " + strings.Join(reg.Names(), " | "), Value: defaults.Coder},
		&cli.StringFlag{Name: "reviewer", Usage: "the reviewer's agent CLI, of another model family than the coder's", Value: defaults.Reviewers[0]},
	}
	for _, a := range reg.Adapters() {
		flags = append(flags, &cli.StringFlag{Name: a.Name(), Usage: "the " + a.Name() + " binary to drive", Value: a.Install().Command})
	}
	flags = append(flags,
		&cli.StringFlag{Name: "dir", Usage: "where to create the demo repository (default: a new temporary directory, kept)"},
		&cli.BoolFlag{Name: "json", Usage: "print only the record"},
		&cli.StringFlag{Name: "mode", Usage: "pingpong; github (the same loop as a pull request on a fake GitHub) is a test of spawn's checkout: make demo-github", Value: "pingpong"},
	)
	return &cli.Command{
		Name:  "demo",
		Usage: "run spawn offline: a real agent CLI fixes a bug in a throwaway repository and a real agent CLI of another model family reviews it, driven by built-in scripted models",
		Description: "No API key is needed: a local scripted model server stands in for the model APIs.\n" +
			"The CLIs are real; the coder runs its real tools (its shell, its file tools) in the sandbox,\n" +
			"the reviewer reviews the diff, the coder fixes what it found in its resumed session, the reviewer approves.\n" +
			"Any coder may pair with any reviewer of another family: --coder codex --reviewer claude.\n\n" +
			"The same loop as a pull request on a fake GitHub (the review with its inline comment, the coder's\n" +
			"reply naming the fix, the thread resolved) is `make demo-github` in spawn's checkout: the fake\n" +
			"GitHub is test code, which the spawn binary does not carry.\n\n" +
			"Example:\n   spawn demo --claude agents/node_modules/.bin/claude --gemini agents/node_modules/.bin/gemini\n" +
			"   spawn demo --coder codex --reviewer claude --codex agents/node_modules/.bin/codex --claude agents/node_modules/.bin/claude",
		OnUsageError: onUsageError,
		Flags:        flags,
		Action: func(c *cli.Context) error {
			mode := observability.Mode(c.String("mode"))
			if mode != observability.ModePingpong && mode != observability.ModeGitHub {
				return usageError{fmt.Errorf("--mode %q: the demo runs pingpong or github", mode)}
			}
			bins := map[string]string{}
			for _, a := range reg.Adapters() {
				bins[a.Name()] = c.String(a.Name())
			}
			return runF(c.Context, d, &demoOptions{Coder: c.String("coder"), Reviewer: c.String("reviewer"), Bins: bins,
				Dir: c.String("dir"), JSON: c.Bool("json"), Mode: mode})
		},
	}
}

// runDemo is `spawn demo`.
func runDemo(ctx context.Context, d *deps, opts *demoOptions) error {
	if opts.Mode == observability.ModeGitHub && opts.Forge == nil {
		return usageError{errors.New("--mode github runs the demo on a fake GitHub, which is test code the spawn binary does not carry; run `make demo-github` in spawn's checkout")}
	}
	d.agents.Store(true)
	root := opts.Dir
	if root == "" {
		var err error
		if root, err = os.MkdirTemp("", "spawn-demo-"); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	reg := runners.NewRegistry()
	coder, reviewer, err := demoPair(reg, opts)
	if err != nil {
		return err
	}
	sc, err := demo.Scenario(coder.Provider().Route, reviewer.Provider().Route)
	if err != nil {
		return err
	}
	srv, err := modelserver.Start(sc)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer srv.Close()

	home := filepath.Join(root, "home")
	tmp := filepath.Join(root, "tmp")
	for _, dir := range []string{home, tmp} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	senv, err := srv.Env(home)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	env := demoEnv(d.env, reg, home, tmp, senv)
	repo, err := demo.Repo(ctx, filepath.Join(root, "calc"), env)
	if err != nil {
		return err
	}
	for _, a := range []runners.Adapter{coder, reviewer} {
		if _, err := proc.LookPath(opts.Bins[a.Name()], env); err != nil {
			return &fault.Error{Kind: fault.KindMissingCLI, Err: err, Msg: fmt.Sprintf(
				"the %s CLI (%s) was not found; install the pinned CLIs with `make agents` and pass --%s agents/node_modules/.bin/%s, or install it with npm",
				a.Name(), opts.Bins[a.Name()], a.Name(), a.Install().Command)}
		}
	}
	cfg := config.Default()
	cfg.Team.Mode = observability.ModePingpong
	cfg.Team.Coder, cfg.Team.Reviewers = coder.Name(), []string{reviewer.Name()}
	if opts.Mode == observability.ModeGitHub {
		ghEnv, err := opts.Forge.Start(ctx, root, repo)
		if err != nil {
			return err
		}
		defer opts.Forge.Close()
		env = append(env, ghEnv...)
		cfg.Team.Mode = observability.ModeGitHub
		cfg.GitHub.MinWriteInterval = 0
	}
	for _, a := range []runners.Adapter{coder, reviewer} {
		cfg.Runners.Edit(a.Name(), func(s *runners.Settings) { s.Command, s.MaxRetries = opts.Bins[a.Name()], 0 })
	}
	if !opts.JSON {
		fmt.Fprintf(d.io.Err, "spawn demo: repository %s, task %q, model API scripted at %s\n", repo.Dir, demo.Task, srv.URL())
	}
	run := spawn.Options{Task: demo.Task, RepoDir: repo.Dir, Config: cfg, Env: env, Hurry: d.hurry}
	// The demo narrates what the agents do even without a terminal.
	pl := newProgressLine(d.io.Err, d.io.ErrTTY, !opts.JSON)
	rec, runErr := spawn.Run(ctx, run, pl)
	pl.Close()
	code := rec.ExitCode
	if runErr != nil {
		fmt.Fprintf(d.io.Err, "spawn: %v\n", runErr)
	}
	if rec.ID == "" {
		return exitCode(code)
	}
	return d.demoReport(ctx, opts, rec, repo, root)
}

// demoPair is the demo's coder and reviewer, of two model families.
func demoPair(reg runners.Registry, opts *demoOptions) (coder, reviewer runners.Adapter, err error) {
	if coder, err = reg.Lookup(opts.Coder); err != nil {
		return nil, nil, usageError{fmt.Errorf("--coder: %w", err)}
	}
	if reviewer, err = reg.Lookup(opts.Reviewer); err != nil {
		return nil, nil, usageError{fmt.Errorf("--reviewer: %w", err)}
	}
	if coder.Family() == reviewer.Family() {
		return nil, nil, usageError{fmt.Errorf("--coder %s and --reviewer %s are of one model family (%s); the demo pairs a reviewer of another family", coder.Name(), reviewer.Name(), coder.Family())}
	}
	return coder, reviewer, nil
}

// demoReport prints the demo's record (--json), or its summary, the
// change on the run's branch and where everything is kept.
func (d *deps) demoReport(ctx context.Context, opts *demoOptions, rec *observability.Record, repo git.Repo, root string) error {
	code := rec.ExitCode
	if opts.JSON {
		if err := printJSON(d.io.Out, rec); err != nil {
			return err
		}
		return exitIf(code)
	}
	fmt.Fprint(d.io.Out, summary(rec))
	diff, err := repo.Run(ctx, "diff", "--no-color", rec.Base, rec.Branch)
	if err != nil {
		return errors.Join(fmt.Errorf("demo: cannot show the change: %w", err), exitIf(code))
	}
	fmt.Fprintf(d.io.Out, "\nThe change on %s:\n%s\n", rec.Branch, strings.TrimRight(diff, "\n"))
	if opts.Mode == observability.ModeGitHub {
		opts.Forge.Describe(d.io.Out)
	}
	fmt.Fprintf(d.io.Out, "\nEverything that happened is in the record %s\n", filepath.Join(rec.Repo, sandbox.Dir, "runs", rec.ID, "record.json"))
	fmt.Fprintf(d.io.Out, "(spawn demo --json prints it). The demo folder %s is kept; remove it with: rm -rf %s\n", root, root)
	return exitIf(code)
}

// demoEnv is the user's environment with every model credential and
// base URL the agent CLIs read removed (each provider's Vars), and spawn's
// own settings, a private HOME and TMPDIR, and the scripted server's
// variables.
func demoEnv(base []string, reg runners.Registry, home, tmp string, server []string) []string {
	var env []string
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		read := slices.ContainsFunc(reg.Adapters(), func(a runners.Adapter) bool { return a.Provider().Reads(name) })
		if read || strings.HasPrefix(name, "SPAWN_") || name == "HOME" || name == "TMPDIR" || name == "XDG_CONFIG_HOME" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "TMPDIR="+tmp, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	return append(env, server...)
}
