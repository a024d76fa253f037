package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// cleanOptions is `spawn clean` after flag parsing.
type cleanOptions struct {
	Repo      string
	Refs      []string
	All       bool
	OlderThan time.Duration
	Force     bool
	Purge     bool
	DryRun    bool
	JSON      bool
}

func newCleanCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:      "clean",
		Usage:     "remove runs' worktrees and branches, never work that is neither merged nor pushed",
		ArgsUsage: "ID... | --all | --older-than AGE",
		Description: "Removes each run's worktree (.spawn/worktrees/<id>) and its branches (its branch and any\n" +
			"branch under spawn/<id>/). The record, transcripts and cassette stay unless --purge.\n\n" +
			"A run is refused, and nothing of it touched, when removing it would lose work: a commit\n" +
			"that no other branch, remote-tracking branch or tag reaches (merge it or push it; the\n" +
			"branches of other runs do not count), or uncommitted changes in its worktree. --force\n" +
			"removes it anyway. A branch merged by squash or rebase is not recognised as merged.\n" +
			"A live run (its spawn is still running) is never touched, even with --force.\n" +
			"Exit code 1 when a run was refused, live or failed; 2 for a usage error or an unknown id.\n\n" +
			"Example:\n   spawn clean last\n   spawn clean --older-than 7d --dry-run\n   spawn clean 20250101-1200 --force --purge",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			repoFlag(),
			&cli.BoolFlag{Name: "all", Usage: "clean every run of the repository"},
			&cli.StringFlag{Name: "older-than", Usage: "clean the runs that ended longer ago than this: 7d, 12h, 90m"},
			&cli.BoolFlag{Name: "force", Usage: "drop commits that are neither merged nor pushed, and uncommitted changes"},
			&cli.BoolFlag{Name: "purge", Usage: "remove the run directory too: record, events, transcripts, cassette"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "say what would be removed and change nothing"},
			&cli.BoolFlag{Name: "json", Usage: "print what was done as one JSON document"},
		},
		Action: func(c *cli.Context) error {
			opts := &cleanOptions{
				Repo: c.String("repo"), Refs: c.Args().Slice(), All: c.Bool("all"),
				Force: c.Bool("force"), Purge: c.Bool("purge"), DryRun: c.Bool("dry-run"), JSON: c.Bool("json"),
			}
			if s := c.String("older-than"); s != "" {
				age, err := parseAge(s)
				if err != nil {
					return &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("--older-than %s: %v", s, err), Err: err}
				}
				opts.OlderThan = age
			}
			return runClean(c.Context, d, opts)
		},
	}
}

// runClean is `spawn clean`: one line per run (or one JSON document), exit
// 1 when any run was kept because it was refused, live or failed.
func runClean(ctx context.Context, d *deps, opts *cleanOptions) error {
	if len(opts.Refs) == 0 && !opts.All && opts.OlderThan == 0 {
		return &fault.Error{Kind: fault.KindUsage, Msg: "say which runs to clean: run ids, --all, or --older-than 7d; see spawn clean --help"}
	}
	repo, err := d.openRepo(ctx, opts.Repo)
	if err != nil {
		return err
	}
	done, err := repo.Clean(ctx, runs.CleanOptions{
		Refs: opts.Refs, All: opts.All, OlderThan: opts.OlderThan,
		Force: opts.Force, Purge: opts.Purge, DryRun: opts.DryRun,
	})
	if err != nil {
		return err
	}
	if done == nil {
		done = []runs.Cleaned{}
	}
	kept := 0
	for _, c := range done {
		if c.Action.Kept() {
			kept++
		}
	}
	if opts.JSON {
		if err := printJSON(d.io.Out, done); err != nil {
			return err
		}
		return exitIf(min(kept, 1))
	}
	if len(done) == 0 {
		fmt.Fprintln(d.io.Out, "nothing to clean")
	}
	for _, c := range done {
		fmt.Fprintln(d.io.Out, cleanLine(c))
	}
	if kept > 0 {
		fmt.Fprintf(d.io.Err, "spawn: %s kept; see why above\n", text.Plural(kept, "run"))
	}
	return exitIf(min(kept, 1))
}

// cleanLine is one run's outcome, for a person.
func cleanLine(c runs.Cleaned) string {
	what := cleanWhat(c)
	switch c.Action {
	case runs.CleanRemoved:
		line := fmt.Sprintf("%s  removed %s", c.ID, what)
		for _, u := range c.Unsaved {
			line += fmt.Sprintf(" (dropped %s of %s)", text.Plural(len(u.Commits), "unsaved commit"), u.Branch)
		}
		return line
	case runs.CleanWouldRemove:
		return fmt.Sprintf("%s  would remove %s", c.ID, what)
	case runs.CleanNothing:
		return fmt.Sprintf("%s  nothing to remove (no worktree or branch left)", c.ID)
	case runs.CleanLive:
		return fmt.Sprintf("%s  kept: %s", c.ID, c.Reason)
	case runs.CleanRefused:
		return fmt.Sprintf("%s  kept: %s", c.ID, c.Reason)
	}
	return fmt.Sprintf("%s  failed: %s", c.ID, c.Reason)
}

// cleanWhat names what a cleaned run loses: its worktree, its branches,
// its run directory.
func cleanWhat(c runs.Cleaned) string {
	var parts []string
	if c.Worktree != "" {
		parts = append(parts, "worktree "+c.Worktree)
	}
	if len(c.Branches) > 0 {
		parts = append(parts, "branch "+strings.Join(c.Branches, ", "))
	}
	if c.Purged {
		parts = append(parts, "the record and transcripts")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// parseAge reads an age such as 7d, 12h, 90m or 1d12h: whole days (d)
// followed by an optional Go duration. It must be positive.
func parseAge(s string) (time.Duration, error) {
	bad := fmt.Errorf("not an age; write it like 7d, 12h or 90m")
	rest := s
	var age time.Duration
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		days, err := strconv.Atoi(rest[:i])
		if err != nil || days < 0 || days > 100*365 {
			return 0, bad
		}
		age, rest = time.Duration(days)*24*time.Hour, rest[i+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return 0, bad
		}
		age += d
	}
	if age <= 0 {
		return 0, fmt.Errorf("must be more than zero, such as 7d")
	}
	return age, nil
}
