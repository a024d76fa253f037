package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// diffOptions is `spawn diff` after flag parsing.
type diffOptions struct {
	Repo string
	Ref  string
	Stat bool
}

func newDiffCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "show the changes a run made: its branch against the commit it started from",
		ArgsUsage: runRefUsage,
		Description: "git diff of the run's base commit and its branch: everything the run\n" +
			"committed. For a run still working, the uncommitted changes in its worktree\n" +
			"are not included (spawn commits them at the end of each turn).\n\n" +
			"Example:\n   spawn diff last\n   spawn diff --stat 20261123-0941\n   spawn diff last | git apply",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			repoFlag(),
			&cli.BoolFlag{Name: "stat", Usage: "print a diffstat (the files changed and how much) instead of the diff"},
		},
		Action: func(c *cli.Context) error {
			ref, err := oneRunRef(c)
			if err != nil {
				return err
			}
			return runDiff(c.Context, d, &diffOptions{Repo: c.String("repo"), Ref: ref, Stat: c.Bool("stat")})
		},
	}
}

// runDiff is `spawn diff`: the diff on stdout, nothing when the branch
// holds no change (a note on stderr says so).
func runDiff(ctx context.Context, d *deps, opts *diffOptions) error {
	repo, e, err := d.lookupRun(ctx, opts.Repo, opts.Ref)
	if err != nil {
		return err
	}
	rec, err := readRecord(e)
	if err != nil {
		return err
	}
	if rec.Branch == "" || rec.Base == "" {
		return &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("run %s has no branch: it ended before its sandbox was made; spawn show %s says why", e.ID, e.ID)}
	}
	if !repo.Git.BranchExists(ctx, rec.Branch) {
		return &fault.Error{Kind: fault.KindRepo, Msg: fmt.Sprintf("the branch %s of run %s no longer exists (spawn clean removes it); its record is kept: spawn show %s", rec.Branch, e.ID, e.ID)}
	}
	if e.State == runs.StateRunning {
		fmt.Fprintf(d.io.Err, "note: run %s is still running: this is what it committed so far, without the uncommitted work in %s\n", e.ID, rec.SandboxPath)
	}
	args := []string{"diff", "--no-ext-diff", "--no-color"}
	if opts.Stat {
		args = append(args, "--stat")
	}
	out, err := repo.Git.Run(ctx, append(args, rec.Base, "refs/heads/"+rec.Branch, "--")...)
	if err != nil {
		return fmt.Errorf("git diff of run %s: %w", e.ID, err)
	}
	if out == "" {
		fmt.Fprintf(d.io.Err, "note: the branch %s holds no change from its base %.12s\n", rec.Branch, rec.Base)
		return nil
	}
	_, err = fmt.Fprintln(d.io.Out, out)
	return err
}
