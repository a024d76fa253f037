package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// repoFlag is the --repo flag of the commands that read a repository's
// runs; spawn finds the repository from any directory inside it.
func repoFlag() cli.Flag {
	return &cli.StringFlag{Name: "repo", Usage: "a directory in the git repository whose runs to read", Value: "."}
}

// openRepo opens the repository that holds dir and its runs, and repairs
// the runs whose spawn died (their work committed, their record finished
// as interrupted), telling the user once, on stderr, for each.
func (d *deps) openRepo(ctx context.Context, dir string) (*runs.Repo, error) {
	return d.openRepoAt(ctx, dir, "")
}

// openRepoAt is openRepo that also resolves base (runs.OpenRepoAt).
func (d *deps) openRepoAt(ctx context.Context, dir, base string) (*runs.Repo, error) {
	repo, err := runs.OpenRepoAt(ctx, dir, base, d.env)
	if err != nil {
		return nil, err
	}
	repaired, err := repo.Repair(ctx, time.Now)
	for _, rp := range repaired {
		saved := "it left no uncommitted work"
		if rp.Saved != "" {
			saved = fmt.Sprintf("its uncommitted work is committed on %s (%s)", rp.Branch, shortID(rp.Saved))
		}
		fmt.Fprintf(d.io.Err, "spawn: run %s was abandoned (its spawn process died); %s and it is marked interrupted; `spawn resume %s` continues it\n", rp.ID, saved, rp.ID)
	}
	if err != nil {
		// A run that could not be repaired does not stop the command:
		// it is listed as abandoned, and the next command tries again.
		fmt.Fprintf(d.io.Err, "spawn: warning: %v\n", err)
	}
	return repo, nil
}

// shortID is the first 12 characters of a commit sha.
func shortID(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
