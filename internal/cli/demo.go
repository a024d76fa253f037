package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/demo"
	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// demoOptions is `spawn demo` after flag parsing.
type demoOptions struct {
	Claude string
	Gemini string
	Dir    string
	JSON   bool
	Mode   observability.Mode // pingpong, or github against a fake GitHub
}

func newDemoCmd(d *deps, runF func(context.Context, *deps, *demoOptions) error) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run spawn offline: the real claude CLI fixes a bug in a throwaway repository and the real gemini CLI reviews it, driven by built-in scripted models",
		Description: "No API key is needed: a local scripted model server stands in for both model APIs.\n" +
			"The claude and gemini binaries are real; claude runs its real tools (Bash, Read, Edit) in the sandbox,\n" +
			"gemini reviews the diff, claude fixes what it found in its resumed session, gemini approves.\n\n" +
			"With --mode github the same loop runs as a pull request on a fake GitHub started for the demo:\n" +
			"the review with its inline comment, the coder's reply naming the fix, the thread resolved.\n\n" +
			"Example:\n   spawn demo --claude agents/node_modules/.bin/claude --gemini agents/node_modules/.bin/gemini\n" +
			"   spawn demo --mode github --claude agents/node_modules/.bin/claude --gemini agents/node_modules/.bin/gemini",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "claude", Usage: "the claude binary to drive", Value: "claude"},
			&cli.StringFlag{Name: "gemini", Usage: "the gemini binary to drive", Value: "gemini"},
			&cli.StringFlag{Name: "dir", Usage: "where to create the demo repository (default: a new temporary directory, kept)"},
			&cli.BoolFlag{Name: "json", Usage: "print only the record"},
			&cli.StringFlag{Name: "mode", Usage: "pingpong, or github: the same loop as a pull request on a fake GitHub (reviews, replies, resolved threads)", Value: "pingpong"},
		},
		Action: func(c *cli.Context) error {
			mode := observability.Mode(c.String("mode"))
			if mode != observability.ModePingpong && mode != observability.ModeGitHub {
				return usageError{fmt.Errorf("--mode %q: the demo runs pingpong or github", mode)}
			}
			return runF(c.Context, d, &demoOptions{Claude: c.String("claude"), Gemini: c.String("gemini"), Dir: c.String("dir"), JSON: c.Bool("json"), Mode: mode})
		},
	}
}

// runDemo is `spawn demo`.
func runDemo(ctx context.Context, d *deps, opts *demoOptions) error {
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
	sc, err := demo.Scenario()
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
	genv, err := srv.GeminiEnv(home)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	env := demoEnv(d.env, home, tmp, append(srv.ClaudeEnv(), genv...))
	repo, err := demo.Repo(ctx, filepath.Join(root, "calc"), env)
	if err != nil {
		return err
	}
	for _, bin := range []struct{ flag, command string }{{"claude", opts.Claude}, {"gemini", opts.Gemini}} {
		if _, err := proc.LookPath(bin.command, env); err != nil {
			return &spawn.Error{Kind: spawn.KindMissingCLI, Err: err, Msg: fmt.Sprintf(
				"the %s CLI (%s) was not found; install the pinned CLIs with `make agents` and pass --%s agents/node_modules/.bin/%s, or install it with npm",
				bin.flag, bin.command, bin.flag, bin.flag)}
		}
	}
	cfg := config.Default()
	cfg.Team.Mode = observability.ModePingpong
	var gh *githubfake.Server
	if opts.Mode == observability.ModeGitHub {
		var ghEnv []string
		if gh, ghEnv, err = demoGitHub(ctx, root, repo); err != nil {
			return err
		}
		defer gh.Close()
		env = append(env, ghEnv...)
		cfg.Team.Mode = observability.ModeGitHub
		cfg.GitHub.MinWriteInterval = 0
	}
	cfg.Runners.Claude.Command = opts.Claude
	cfg.Runners.Claude.MaxRetries = 0
	cfg.Runners.Gemini.Command = opts.Gemini
	cfg.Runners.Gemini.MaxRetries = 0
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
	if gh != nil {
		describePR(d.io.Out, gh)
	}
	fmt.Fprintf(d.io.Out, "\nEverything that happened is in the record %s\n", filepath.Join(rec.Repo, sandbox.Dir, "runs", rec.ID, "record.json"))
	fmt.Fprintf(d.io.Out, "(spawn demo --json prints it). The demo folder %s is kept; remove it with: rm -rf %s\n", root, root)
	return exitIf(code)
}

// demoEnv is the user's environment with every model credential and
// configuration variable removed, a private HOME and TMPDIR, and the
// scripted server's variables.
func demoEnv(base []string, home, tmp string, server []string) []string {
	var env []string
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "ANTHROPIC_"), strings.HasPrefix(name, "CLAUDE_"),
			strings.HasPrefix(name, "GEMINI_"), strings.HasPrefix(name, "GOOGLE_"),
			strings.HasPrefix(name, "SPAWN_"),
			name == "HOME", name == "TMPDIR", name == "XDG_CONFIG_HOME":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "TMPDIR="+tmp, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	return append(env, server...)
}
