package github

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Access is what Preflight found spawn may do.
type Access struct {
	// Login is the token's identity, "" when GitHub did not say (an
	// installation token may not read `viewer`).
	Login         string `json:"login,omitempty"`
	DefaultBranch string `json:"default_branch,omitempty"`
	Private       bool   `json:"private,omitempty"`
	// Reviewer says whether the reviewer token (SPAWN_GITHUB_REVIEWER_TOKEN)
	// can submit reviews; ReviewerLogin is its identity and ReviewerProblem,
	// when it cannot, one sentence saying why. Without a reviewer token
	// Reviewer is false and ReviewerProblem "".
	Reviewer        bool   `json:"reviewer,omitempty"`
	ReviewerLogin   string `json:"reviewer_login,omitempty"`
	ReviewerProblem string `json:"reviewer_problem,omitempty"`
}

// Preflight checks, before anything is created, that spawn can work on
// the repository: a token is there, the API answers, the repository is
// visible, and the token can push to it. Any of these failing is a
// *PreflightError whose sentence says what to do (the caller's exit 2).
// A reviewer token that cannot review is not an error: Access says so.
func (c *Client) Preflight(ctx context.Context) (Access, error) {
	var acc Access
	if c.token == "" {
		return acc, &PreflightError{Problem: ProblemNoToken,
			Sentence: "no GitHub token: set GITHUB_TOKEN (or SPAWN_GITHUB_TOKEN or GH_TOKEN) to a token that can push to " + c.loc.FullName() + ", or log in with `gh auth login`"}
	}
	repo, err := c.repository(ctx)
	if err != nil {
		return acc, c.preflightError(ctx, err, c.loc.TokenSource)
	}
	acc.DefaultBranch, acc.Private = repo.GetDefaultBranch(), repo.GetPrivate()
	if perms := repo.GetPermissions(); perms != nil && !perms["push"] {
		return acc, &PreflightError{Problem: ProblemCannotPush,
			Sentence: fmt.Sprintf("the token from %s cannot push to %s: give it write access (for Actions: permissions contents: write and pull-requests: write)", c.source(), c.loc.FullName())}
	}
	login, err := c.viewer(ctx)
	if err != nil {
		return acc, c.preflightError(ctx, err, c.loc.TokenSource)
	}
	acc.Login = login
	r, ok := c.Reviewer()
	if !ok {
		return acc, nil
	}
	if _, err := r.repository(ctx); err != nil {
		if ctx.Err() != nil {
			return acc, ctx.Err()
		}
		var pe *PreflightError
		if errors.As(r.preflightError(ctx, err, EnvReviewerToken), &pe) {
			acc.ReviewerProblem = pe.Sentence
		}
		return acc, nil
	}
	rl, err := r.viewer(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return acc, ctx.Err()
		}
		acc.ReviewerProblem = "the GitHub API did not say who " + EnvReviewerToken + " is (" + r.redact(err.Error()) + "): spawn reviews as the main identity"
		return acc, nil
	}
	acc.ReviewerLogin = rl
	if rl != "" && strings.EqualFold(rl, login) {
		acc.ReviewerProblem = EnvReviewerToken + " is the same identity as the main token (" + rl + "): set it to another account's token so its reviews can approve."
		return acc, nil
	}
	acc.Reviewer = true
	return acc, nil
}

// source names where the client's token came from.
func (c *Client) source() string {
	if c.token == c.loc.ReviewerToken && c.token != c.loc.Token {
		return EnvReviewerToken
	}
	if c.loc.TokenSource == "" {
		return "the environment"
	}
	return c.loc.TokenSource
}

// viewer is the token's login over GraphQL; "" when GitHub refuses to say
// (FORBIDDEN, as for some installation tokens).
func (c *Client) viewer(ctx context.Context) (string, error) {
	var out struct {
		Viewer struct {
			Login string `json:"login"`
		} `json:"viewer"`
	}
	err := c.graphQL(ctx, "read the token's identity", false, `query{viewer{login}}`, nil, &out)
	var ges graphQLErrors
	if errors.As(err, &ges) && !ges.hasType("RATE_LIMITED") {
		return "", nil
	}
	return out.Viewer.Login, err
}

// preflightError turns a failed preflight call into a *PreflightError.
func (c *Client) preflightError(ctx context.Context, err error, source string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if source == "" {
		source = "the environment"
	}
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return &PreflightError{Problem: ProblemRateLimited, Err: err,
			Sentence: "the GitHub rate limit for this token lasts past the deadline (" + rl.Error() + "): try again later or raise the run's timeout"}
	}
	ae, _ := errorsAsAPI(err)
	status := statusOf(err)
	switch {
	case status == http.StatusUnauthorized:
		return &PreflightError{Problem: ProblemBadCredentials, Err: err,
			Sentence: fmt.Sprintf("the token from %s was refused by GitHub (401 Bad credentials): set a valid, unexpired token", source)}
	case status == http.StatusNotFound:
		return &PreflightError{Problem: ProblemNoRepository, Err: err,
			Sentence: fmt.Sprintf("%s was not found at %s with the token from %s: check the remote or GITHUB_REPOSITORY, GITHUB_API_URL, and that the token can see the repository", c.loc.FullName(), c.loc.APIURL, source)}
	case status == http.StatusForbidden:
		msg := ""
		if ae != nil {
			msg = ae.Message
		}
		return &PreflightError{Problem: ProblemCannotPush, Err: err,
			Sentence: fmt.Sprintf("the token from %s was refused access to %s by GitHub (%s): give it access to the repository", source, c.loc.FullName(), msg)}
	case status == 0 && isNetError(err):
		return &PreflightError{Problem: ProblemUnreachable, Err: err,
			Sentence: fmt.Sprintf("the GitHub API at %s did not answer (%s): check the network, or GITHUB_API_URL for GitHub Enterprise", c.loc.APIURL, c.redact(rootCause(err).Error()))}
	}
	return &PreflightError{Problem: ProblemUnexpected, Err: err,
		Sentence: fmt.Sprintf("%s did not answer as the GitHub API (%s): check GITHUB_API_URL and that the remote is on GitHub", c.loc.APIURL, c.redact(err.Error()))}
}

// rootCause is the innermost error of a chain of single wraps.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// isNetError reports whether err is a failure to reach the server (no
// answer at all), as opposed to an answer that made no sense.
func isNetError(err error) bool {
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, errAttemptTimeout)
}
