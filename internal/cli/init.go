package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// initOptions is `spawn init` after flag parsing.
type initOptions struct {
	Repo string
}

func newInitCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "write a commented spawn-team.toml with every setting at its default",
		Description: "Writes spawn-team.toml at the top of the repository (from any directory in it):\n" +
			"every section and key at its built-in default, each with a comment saying what it does.\n" +
			"An existing spawn-team.toml is never overwritten (exit code 2).\n\n" +
			"Example:\n   spawn init\n   spawn init --repo ~/src/app && spawn doctor --repo ~/src/app",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "repo", Usage: "a directory in the git repository to write spawn-team.toml for", Value: "."},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("spawn init takes no arguments (got %q); pass --repo DIR for another repository", c.Args().First())}
			}
			return runInit(c.Context, d, &initOptions{Repo: c.String("repo")})
		},
	}
}

// runInit is `spawn init`.
func runInit(ctx context.Context, d *deps, opts *initOptions) error {
	repo, err := runs.OpenRepo(ctx, opts.Repo, d.env)
	if err != nil {
		return err
	}
	path, err := config.WriteTemplate(repo.Dir)
	if errors.Is(err, config.ErrExists) {
		return &fault.Error{Kind: fault.KindUsage, Err: err,
			Msg: fmt.Sprintf("%s already exists and spawn init never overwrites it; edit it, or delete it and run spawn init again", path)}
	}
	if err != nil {
		return &fault.Error{Kind: fault.KindInternal, Err: err, Msg: fmt.Sprintf("cannot write %s: %v", path, err)}
	}
	fmt.Fprintf(d.io.Out, "wrote %s: every setting at its default, each with a comment; edit it, then `spawn doctor` checks it, and commit it to keep it with the repository\n", path)
	return nil
}
