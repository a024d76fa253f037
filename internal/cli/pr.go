package cli

import (
	"context"
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// prOptions is `spawn pr` after flag parsing.
type prOptions struct {
	Ref    string
	Repo   string
	Config string
	JSON   bool
	Quiet  bool
}

func newPRCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:      "pr",
		Usage:     "address a person's review on an existing pull request: fix, push, reply",
		ArgsUsage: "NUMBER | URL",
		Description: "Fetches the pull request's branch into a sandbox worktree, has the coder address the unresolved,\n" +
			"current review threads whose author is trusted (write, maintain or admin on the repository,\n" +
			"or [github] trusted_authors), pushes the fix to the pull request's branch, then has the\n" +
			"reviewer check the fix of each thread: a confirmed thread gets \"Fixed in <commits>\" with the\n" +
			"check round, one still open gets what is missing and goes back to the coder, up to\n" +
			"max_iterations turns; a declined one gets the coder's reason. [github] verify_fixes = false\n" +
			"makes it one unchecked pass. Threads left alone (untrusted author, outdated, resolved) are\n" +
			"listed in the record by id and why, never by their text, which reaches no prompt. A thread\n" +
			"is resolved only with [github] resolve_human_threads = true. A fork's pull request is refused.\n" +
			"The token and repository are found as in github mode (SPAWN_GITHUB_TOKEN, GITHUB_TOKEN,\n" +
			"GH_TOKEN or gh auth token; GITHUB_REPOSITORY or the remote).\n\n" +
			"Example:\n   spawn pr 42\n   spawn pr https://github.com/acme/app/pull/42 --json",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			repoFlag(),
			&cli.StringFlag{Name: "config", Usage: "the configuration file (default: <repo>/spawn-team.toml, then $XDG_CONFIG_HOME/spawn/spawn-team.toml)"},
			&cli.BoolFlag{Name: "json", Usage: "print the record as the only output, one JSON document on stdout"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not narrate what the coder does on stderr"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError{errors.New("give one pull request: its number or its URL")}
			}
			return runPR(c.Context, d, &prOptions{Ref: c.Args().First(), Repo: c.String("repo"), Config: c.String("config"),
				JSON: c.Bool("json"), Quiet: c.Bool("quiet")})
		},
	}
}

// runPR is `spawn pr`: like `spawn run`, the summary (or the record) and
// the run's exit code.
func runPR(ctx context.Context, d *deps, opts *prOptions) error {
	return d.runAgents(opts.JSON, func() (*observability.Record, error) {
		repo, loaded, err := d.openConfigured(ctx, opts.Repo, opts.Config, config.Overrides{})
		if err != nil {
			return rejected("", err), err
		}
		sink := d.narration(!opts.JSON && !opts.Quiet)
		defer sink.Close()
		return spawn.FixPR(ctx, spawn.PROptions{Ref: opts.Ref, Options: spawn.Options{Config: loaded.Config, Notes: loaded.Notes, RepoDir: repo.Dir, Env: d.env, Hurry: d.hurry}}, sink)
	})
}
