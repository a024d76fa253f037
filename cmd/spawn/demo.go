package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/demo"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/team"
)

// demoOptions is `spawn demo` after flag parsing.
type demoOptions struct {
	Claude string
	Gemini string
	Dir    string
	JSON   bool
}

func newDemoCmd(d *deps, runF func(context.Context, *deps, *demoOptions) error) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run spawn offline: the real claude CLI fixes a bug in a throwaway repository and the real gemini CLI reviews it, driven by built-in scripted models",
		Description: "No API key is needed: a local scripted model server stands in for both model APIs.\n" +
			"The claude and gemini binaries are real; claude runs its real tools (Bash, Read, Edit) in the sandbox,\n" +
			"gemini reviews the diff, claude fixes what it found in its resumed session, gemini approves.",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "claude", Usage: "the claude binary to drive", Value: "claude"},
			&cli.StringFlag{Name: "gemini", Usage: "the gemini binary to drive", Value: "gemini"},
			&cli.StringFlag{Name: "dir", Usage: "where to create the demo repository (default: a new temporary directory, kept)"},
			&cli.BoolFlag{Name: "json", Usage: "print only the record"},
		},
		Action: func(c *cli.Context) error {
			return runF(c.Context, d, &demoOptions{Claude: c.String("claude"), Gemini: c.String("gemini"), Dir: c.String("dir"), JSON: c.Bool("json")})
		},
	}
}

// runDemo is `spawn demo`.
func runDemo(ctx context.Context, d *deps, opts *demoOptions) error {
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
	cfg := spawn.DefaultConfig()
	cfg.Runners.Claude.Command = opts.Claude
	cfg.Runners.Claude.MaxRetries = 0
	cfg.Runners.Gemini.Command = opts.Gemini
	cfg.Runners.Gemini.MaxRetries = 0
	if !opts.JSON {
		fmt.Fprintf(d.io.Err, "spawn demo: repository %s, task %q, model API scripted at %s\n", repo.Dir, demo.Task, srv.URL())
	}
	run := spawn.Options{Task: demo.Task, Mode: "pingpong", RepoDir: repo.Dir, Config: cfg, Env: env, Notes: d.io.Err, Hurry: d.hurry}
	var pl *progressLine
	if !opts.JSON {
		pl = newProgressLine(d.io.Err, d.io.ErrTTY)
		run.OnProgress = pl.Progress
	}
	rec, runErr := team.Execute(ctx, run)
	if pl != nil {
		pl.Close()
	}
	code := spawn.ExitCode(runErr, verdictOf(rec))
	if runErr != nil {
		fmt.Fprintf(d.io.Err, "spawn: %v\n", runErr)
	}
	if rec == nil {
		return exitCode(code)
	}
	if opts.JSON {
		if err := printJSON(d.io.Out, rec); err != nil {
			return err
		}
		return exitIf(code)
	}
	fmt.Fprint(d.io.Out, summary(rec))
	diff, err := repo.Run(ctx, "diff", rec.Base, rec.Branch)
	if err == nil {
		fmt.Fprintf(d.io.Out, "\nThe change on %s:\n%s\n", rec.Branch, diff)
	}
	b, err := observability.Encode(rec, observability.NewRedactor(env))
	if err != nil {
		return err
	}
	fmt.Fprintf(d.io.Out, "\nThe record (%s):\n%s", filepath.Join(rec.Repo, spawn.Dir, "runs", rec.ID, "record.json"), b)
	return exitIf(code)
}

func exitIf(code int) error {
	if code != 0 {
		return exitCode(code)
	}
	return nil
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
