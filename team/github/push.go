package github

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// PushError is a failed git push or fetch; Stderr is git's message with
// any credentials in URLs removed.
type PushError struct {
	Op     string // "push feature to origin"
	Stderr string
	Err    error
}

func (e *PushError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return "git " + e.Op + ": " + msg
}

func (e *PushError) Unwrap() error { return e.Err }

// gitEnv is repo's environment with git told never to prompt: a push that
// needs credentials nobody set up fails instead of hanging.
func gitEnv(repo git.Repo) git.Repo {
	repo.Env = append(append([]string(nil), repo.Env...), "GIT_TERMINAL_PROMPT=0")
	return repo
}

// Push pushes branch of repo to remote (refs/heads/branch on both sides)
// with the git CLI and the user's own credentials (credential helpers,
// ssh keys, what actions/checkout set up): no token is injected. It
// returns the commit pushed. Cancelling ctx kills git.
func Push(ctx context.Context, repo git.Repo, remote, branch string) (string, error) {
	sha, err := repo.Resolve(ctx, "refs/heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("push %s: no such branch: %w", branch, err)
	}
	what := fmt.Sprintf("push %s to %s", branch, remote)
	ref := "refs/heads/" + branch
	if _, err := gitEnv(repo).Run(ctx, "push", "--quiet", "--porcelain", remote, ref+":"+ref); err != nil {
		return "", gitError(ctx, what, err)
	}
	return sha, nil
}

// Fetch fetches branch from remote into refs/remotes/REMOTE/BRANCH and
// returns its commit (for `spawn pr`, the pull request's head).
func Fetch(ctx context.Context, repo git.Repo, remote, branch string) (string, error) {
	what := fmt.Sprintf("fetch %s from %s", branch, remote)
	dst := "refs/remotes/" + remote + "/" + branch
	if _, err := gitEnv(repo).Run(ctx, "fetch", "--quiet", "--no-tags", remote, "+refs/heads/"+branch+":"+dst); err != nil {
		return "", gitError(ctx, what, err)
	}
	sha, err := repo.Resolve(ctx, dst)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return sha, nil
}

func gitError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("git %s: %w", what, ctx.Err())
	}
	var exit *proc.ExitError
	if errors.As(err, &exit) {
		return &PushError{Op: what, Stderr: redactURLs(exit.Stderr), Err: errors.New(redactURLs(exit.Error()))}
	}
	return &PushError{Op: what, Err: errors.New(redactURLs(err.Error()))}
}
