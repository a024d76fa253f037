// Package git runs the git CLI for spawn, through the one exec seam.
package git

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// ErrNotRepo means the directory is not inside a git work tree.
var ErrNotRepo = errors.New("not a git repository")

// Repo is a git work tree: the user's repository or a spawn worktree.
type Repo struct {
	Dir string   // the top of the work tree
	Env []string // the environment git runs with
}

// Commit is one commit on a branch.
type Commit struct {
	SHA     string
	Subject string
}

// Open finds the work tree that holds dir.
func Open(ctx context.Context, dir string, env []string) (Repo, error) {
	r := Repo{Dir: dir, Env: env}
	top, err := r.Run(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		var exit *proc.ExitError
		if errors.As(err, &exit) && strings.Contains(exit.Stderr, "not a git repository") {
			return Repo{}, fmt.Errorf("%s: %w", dir, ErrNotRepo)
		}
		return Repo{}, err
	}
	r.Dir = top
	return r, nil
}

// Run runs git with args in the work tree and returns its trimmed stdout.
func (r Repo) Run(ctx context.Context, args ...string) (string, error) {
	out, err := proc.Run(ctx, proc.Cmd{Path: "git", Args: args, Dir: r.Dir, Env: r.Env})
	return strings.TrimRight(string(out), "\n"), err
}

// Resolve returns the commit sha that ref names; an error if it names none.
func (r Repo) Resolve(ctx context.Context, ref string) (string, error) {
	return r.Run(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
}

// HasCommits reports whether HEAD points at a commit.
func (r Repo) HasCommits(ctx context.Context) bool {
	_, err := r.Resolve(ctx, "HEAD")
	return err == nil
}

// BranchExists reports whether refs/heads/name exists.
func (r Repo) BranchExists(ctx context.Context, name string) bool {
	_, err := r.Run(ctx, "show-ref", "--verify", "--quiet", "refs/heads/"+name)
	return err == nil
}

// ValidBranchName reports whether git accepts name as a branch name.
func (r Repo) ValidBranchName(ctx context.Context, name string) bool {
	_, err := r.Run(ctx, "check-ref-format", "--branch", name)
	return err == nil
}

// CommonDir is the repository's shared .git directory (absolute), the same
// from the main work tree and from every linked worktree.
func (r Repo) CommonDir(ctx context.Context) (string, error) {
	dir, err := r.Run(ctx, "rev-parse", "--git-common-dir")
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.Dir, dir)
	}
	return filepath.Clean(dir), nil
}

// AddWorktree creates a linked worktree at path on a new branch started at base.
func (r Repo) AddWorktree(ctx context.Context, path, branch, base string) (Repo, error) {
	if _, err := r.Run(ctx, "worktree", "add", "--quiet", "-b", branch, path, base); err != nil {
		return Repo{}, fmt.Errorf("create worktree: %w", err)
	}
	return Repo{Dir: path, Env: r.Env}, nil
}

// Status returns `git status --porcelain` output: empty means clean.
func (r Repo) Status(ctx context.Context) (string, error) {
	return r.Run(ctx, "status", "--porcelain", "--untracked-files=all")
}

// CommitAll stages everything in the work tree and commits it with msg. It
// returns the new commit's sha, or "" when there was nothing to commit.
// When git knows no identity, the commit is authored as spawn.
func (r Repo) CommitAll(ctx context.Context, msg string) (string, error) {
	if _, err := r.Run(ctx, "add", "--all"); err != nil {
		return "", fmt.Errorf("stage changes: %w", err)
	}
	if _, err := r.Run(ctx, "diff", "--cached", "--quiet"); err == nil {
		return "", nil
	}
	args := []string{"commit", "--quiet", "--no-verify", "-m", msg}
	if email, _ := r.Run(ctx, "config", "user.email"); email == "" {
		args = append([]string{"-c", "user.name=spawn", "-c", "user.email=spawn@localhost"}, args...)
	}
	if _, err := r.Run(ctx, args...); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	return r.Resolve(ctx, "HEAD")
}

// Log lists the commits reachable from to and not from from, oldest first.
func (r Repo) Log(ctx context.Context, from, to string) ([]Commit, error) {
	out, err := r.Run(ctx, "log", "--reverse", "--format=%H%x00%s", from+".."+to)
	if err != nil {
		return nil, err
	}
	var commits []Commit
	for _, line := range strings.Split(out, "\n") {
		sha, subject, ok := strings.Cut(line, "\x00")
		if ok {
			commits = append(commits, Commit{SHA: sha, Subject: subject})
		}
	}
	return commits, nil
}
