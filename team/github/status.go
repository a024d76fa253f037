package github

import (
	"context"

	gh "github.com/google/go-github/v60/github"
)

// StatusContext is the commit status spawn sets on every head it reviews:
// a merge gate branch protection can require.
const StatusContext = "spawn/review"

// StatusState is a commit status's state.
type StatusState string

// The states spawn sets.
const (
	StatusPending StatusState = "pending"
	StatusSuccess StatusState = "success"
	StatusFailure StatusState = "failure"
	StatusError   StatusState = "error"
)

// maxDescription is GitHub's limit on a status description.
const maxDescription = 140

// SetStatus sets StatusContext on commit sha to state with description
// (cut to GitHub's 140 characters) and targetURL (may be ""). Setting it
// again replaces it, so a retry after a 5xx is harmless.
func (c *Client) SetStatus(ctx context.Context, sha string, state StatusState, description, targetURL string) error {
	if r := []rune(description); len(r) > maxDescription {
		description = string(r[:maxDescription-1]) + "…"
	}
	st := &gh.RepoStatus{State: gh.String(string(state)), Context: gh.String(StatusContext), Description: gh.String(description)}
	if targetURL != "" {
		st.TargetURL = gh.String(targetURL)
	}
	short := sha
	if len(short) > 12 {
		short = short[:12]
	}
	cctx := withClass(ctx, callClass{write: true, idempotent: true})
	return c.rest(ctx, op("set status %s=%s on %s", StatusContext, state, short), func() (r *gh.Response, err error) {
		_, r, err = c.gh.Repositories.CreateStatus(cctx, c.owner, c.repo, sha, st)
		return r, err
	})
}
