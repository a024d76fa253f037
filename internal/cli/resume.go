package cli

import (
	"context"
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// resumeOptions is `spawn resume` after flag parsing.
type resumeOptions struct {
	Ref        string
	MoreRounds int
	Repo       string
	Config     string
	JSON       bool
	Quiet      bool
	Progress   progressMode
	Limits     config.Overrides // the limits the flags set (limitFlags)
}

func newResumeCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "continue a run that stopped before the reviewers approved it",
		ArgsUsage: "ID | PREFIX | last",
		Description: "Continues an interrupted, timed-out, budget-stopped, abandoned or not-yet-approved run\n" +
			"in its own worktree and branch: the coder's session is resumed and the review loop goes\n" +
			"on from the round it stopped at, with its open findings. The record keeps both parts.\n" +
			"The exit code is the continued run's.\n\n" +
			"Example:\n   spawn resume last\n   spawn resume 20261123-0931 --more-rounds 2",
		OnUsageError: onUsageError,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "more-rounds", Usage: "review rounds to allow after the last one", DefaultText: "what max_iterations leaves, at least 1"},
			repoFlag(),
			&cli.StringFlag{Name: "config", Usage: "the configuration file (default: <repo>/spawn-team.toml, then $XDG_CONFIG_HOME/spawn/spawn-team.toml)"},
			&cli.BoolFlag{Name: "json", Usage: "print the record as the only output, one JSON document on stdout"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not narrate what the agents do on stderr"},
			progressFlag(),
		}, limitFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError{errors.New("give one run to resume: its id, a unique prefix of it, or last")}
			}
			if c.Int("more-rounds") < 0 {
				return usageError{errors.New("--more-rounds must be 1 or more")}
			}
			progress, err := parseProgress(c.String("progress"))
			if err != nil {
				return err
			}
			return runResume(c.Context, d, &resumeOptions{Ref: c.Args().First(), MoreRounds: c.Int("more-rounds"),
				Repo: c.String("repo"), Config: c.String("config"), JSON: c.Bool("json"), Quiet: c.Bool("quiet"), Progress: progress, Limits: limitOverrides(c)})
		},
	}
}

// runResume is `spawn resume`: like `spawn run`, it prints the summary
// (or the record) and returns the continued run's exit code.
func runResume(ctx context.Context, d *deps, opts *resumeOptions) error {
	return d.runAgents(opts.JSON, func() (*observability.Record, error) {
		repo, loaded, err := d.openConfigured(ctx, opts.Repo, opts.Config, opts.Limits)
		if err != nil {
			return rejected("", err), err
		}
		sink := d.progressSink(opts.Progress, opts.JSON, opts.Quiet)
		defer sink.Close()
		return spawn.Resume(ctx, spawn.ResumeOptions{Ref: opts.Ref, MoreRounds: opts.MoreRounds, Config: loaded.Config, Notes: loaded.Notes,
			RepoDir: repo.Dir, Env: d.env, Hurry: d.hurry}, sink)
	})
}
