package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v60/github"
)

// Hidden markers around the part of a pull request's body spawn owns.
const (
	SummaryStart = "<!-- spawn:summary:start -->"
	SummaryEnd   = "<!-- spawn:summary:end -->"
)

// PullRequest is what spawn uses of a pull request.
type PullRequest struct {
	Number int    `json:"number"`
	NodeID string `json:"node_id,omitempty"` // GraphQL id
	URL    string `json:"url,omitempty"`     // html_url
	Title  string `json:"title,omitempty"`
	Body   string `json:"body"`
	Draft  bool   `json:"draft,omitempty"`
	State  string `json:"state"`            // open | closed
	Author string `json:"author,omitempty"` // login
	// HeadRef and HeadSHA are the head branch and its commit; HeadRepo is
	// the head's repository as owner/name ("" when it was deleted), and
	// Fork is true when that is not the base repository.
	HeadRef  string `json:"head_ref,omitempty"`
	HeadSHA  string `json:"head_sha,omitempty"`
	HeadRepo string `json:"head_repo,omitempty"`
	Fork     bool   `json:"fork,omitempty"`
	BaseRef  string `json:"base_ref,omitempty"`
	BaseSHA  string `json:"base_sha,omitempty"`
}

func (c *Client) pullRequest(p *gh.PullRequest) PullRequest {
	out := PullRequest{
		Number: p.GetNumber(), NodeID: p.GetNodeID(), URL: p.GetHTMLURL(), Title: p.GetTitle(), Body: p.GetBody(),
		Draft: p.GetDraft(), State: p.GetState(), Author: p.GetUser().GetLogin(),
		HeadRef: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), HeadRepo: p.GetHead().GetRepo().GetFullName(),
		BaseRef: p.GetBase().GetRef(), BaseSHA: p.GetBase().GetSHA(),
	}
	out.Fork = !strings.EqualFold(out.HeadRepo, c.loc.FullName())
	return out
}

// PR returns pull request number.
func (c *Client) PR(ctx context.Context, number int) (PullRequest, error) {
	var p *gh.PullRequest
	err := c.rest(ctx, op("get pull request #%d", number), func() (r *gh.Response, err error) {
		p, r, err = c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
		return r, err
	})
	if err != nil {
		return PullRequest{}, err
	}
	return c.pullRequest(p), nil
}

// PRRef is a pull request named by a user: a number, "#N", or a URL
// https://HOST/OWNER/REPO/pull/N (any suffix such as /files).
type PRRef struct {
	Owner  string // "" for a bare number
	Repo   string
	Number int
}

// ParsePRRef reads a pull request reference.
func ParsePRRef(ref string) (PRRef, error) {
	s := strings.TrimPrefix(strings.TrimSpace(ref), "#")
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return PRRef{Number: n}, nil
	}
	u, err := url.Parse(s)
	if err == nil && u.Host != "" {
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		for i := 0; i+3 < len(parts); i++ {
			if parts[i+2] != "pull" && parts[i+2] != "pulls" {
				continue
			}
			if n, err := strconv.Atoi(parts[i+3]); err == nil && n > 0 {
				return PRRef{Owner: parts[i], Repo: parts[i+1], Number: n}, nil
			}
		}
	}
	return PRRef{}, fmt.Errorf("%q is not a pull request: give its number or its URL (https://github.com/OWNER/REPO/pull/N)", ref)
}

// PRByRef returns the pull request ref names, which must be in the
// client's repository: one elsewhere is a *PreflightError.
func (c *Client) PRByRef(ctx context.Context, ref string) (PullRequest, error) {
	r, err := ParsePRRef(ref)
	if err != nil {
		return PullRequest{}, &PreflightError{Problem: ProblemOtherRepository, Sentence: err.Error()}
	}
	if r.Owner != "" && !strings.EqualFold(r.Owner+"/"+r.Repo, c.loc.FullName()) {
		return PullRequest{}, &PreflightError{Problem: ProblemOtherRepository,
			Sentence: fmt.Sprintf("pull request %s is in %s/%s, not in %s: run spawn in a clone of %s/%s", ref, r.Owner, r.Repo, c.loc.FullName(), r.Owner, r.Repo)}
	}
	return c.PR(ctx, r.Number)
}

// FindPR returns the open pull request whose head is branch of the
// client's repository, and false when there is none.
func (c *Client) FindPR(ctx context.Context, branch string) (PullRequest, bool, error) {
	var found []*gh.PullRequest
	err := c.rest(ctx, op("list pull requests for %s", branch), func() (r *gh.Response, err error) {
		found, r, err = c.gh.PullRequests.List(ctx, c.owner, c.repo, &gh.PullRequestListOptions{
			State: "open", Head: c.owner + ":" + branch, ListOptions: gh.ListOptions{PerPage: 100},
		})
		return r, err
	})
	if err != nil {
		return PullRequest{}, false, err
	}
	for _, p := range found {
		if p.GetHead().GetRef() == branch && strings.EqualFold(p.GetHead().GetRepo().GetFullName(), c.loc.FullName()) {
			return c.pullRequest(p), true, nil
		}
	}
	return PullRequest{}, false, nil
}

// NewPR describes a pull request to open.
type NewPR struct {
	Head  string // branch in the client's repository
	Base  string // "" means the repository's default branch
	Title string
	Body  string
	Draft bool
}

// EnsurePR returns the open pull request for in.Head, opening it when there
// is none (created is then true). An existing one is returned as it is:
// its title, body, base and draft state are not changed. Where GitHub has
// no draft pull requests (private repositories on some plans) a draft is
// opened ready for review: the result's Draft says which.
func (c *Client) EnsurePR(ctx context.Context, in NewPR) (pr PullRequest, created bool, err error) {
	what := op("open a pull request from %s", in.Head)
	find := func(ctx context.Context) (bool, error) {
		var ok bool
		var err error
		pr, ok, err = c.FindPR(ctx, in.Head)
		return ok, err
	}
	err = c.ensure(ctx, what, find, func(ctx context.Context) error {
		base := in.Base
		if base == "" {
			var err error
			if base, err = c.DefaultBranch(ctx); err != nil {
				return err
			}
		}
		var p *gh.PullRequest
		create := func(draft bool) error {
			return c.rest(ctx, what, func() (r *gh.Response, err error) {
				p, r, err = c.gh.PullRequests.Create(ctx, c.owner, c.repo, &gh.NewPullRequest{
					Title: gh.String(in.Title), Head: gh.String(in.Head), Base: gh.String(base),
					Body: gh.String(in.Body), Draft: gh.Bool(draft),
				})
				return r, err
			})
		}
		err := create(in.Draft)
		if err != nil && in.Draft && statusOf(err) == http.StatusUnprocessableEntity && strings.Contains(err.Error(), "Draft pull requests are not supported") {
			// Private repositories on some plans have no drafts: open it ready.
			err = create(false)
		}
		if err != nil {
			return err
		}
		pr, created = c.pullRequest(p), true
		return nil
	})
	if err != nil && statusOf(err) == 422 && strings.Contains(err.Error(), "already exists") {
		// Opened meanwhile (by another run, or by a person): use it.
		if ok, ferr := find(ctx); ferr == nil && ok {
			return pr, false, nil
		}
	}
	return pr, created, err
}

// WithSummary returns body with summary between SummaryStart and
// SummaryEnd: in place of what the markers held, or appended after a blank
// line when body has no markers. Everything else in body is kept.
func WithSummary(body, summary string) string {
	summary = strings.NewReplacer(SummaryStart, "", SummaryEnd, "").Replace(strings.TrimSpace(summary))
	block := SummaryStart + "\n" + summary + "\n" + SummaryEnd
	start := strings.Index(body, SummaryStart)
	end := strings.Index(body, SummaryEnd)
	if start >= 0 && end > start {
		return body[:start] + block + body[end+len(SummaryEnd):]
	}
	if strings.TrimSpace(body) == "" {
		return block
	}
	return strings.TrimRight(body, "\n") + "\n\n" + block
}

// SetSummary puts summary into pull request number's body between the
// summary markers (see WithSummary), leaving the rest of the body as it
// is; when nothing changes nothing is written.
func (c *Client) SetSummary(ctx context.Context, number int, summary string) (PullRequest, error) {
	pr, err := c.PR(ctx, number)
	if err != nil {
		return PullRequest{}, err
	}
	body := WithSummary(pr.Body, summary)
	if body == pr.Body {
		return pr, nil
	}
	var p *gh.PullRequest
	err = c.rest(ctx, op("update the body of #%d", number), func() (r *gh.Response, err error) {
		p, r, err = c.gh.PullRequests.Edit(ctx, c.owner, c.repo, number, &gh.PullRequest{Body: gh.String(body)})
		return r, err
	})
	if err != nil {
		return PullRequest{}, err
	}
	return c.pullRequest(p), nil
}

// MarkReady moves a draft pull request to ready for review (GraphQL
// markPullRequestReadyForReview); a pull request that is not a draft is
// left alone.
func (c *Client) MarkReady(ctx context.Context, pr PullRequest) error {
	if !pr.Draft {
		return nil
	}
	const q = `mutation($id:ID!){markPullRequestReadyForReview(input:{pullRequestId:$id}){pullRequest{isDraft}}}`
	var out struct {
		Mark struct {
			PullRequest struct {
				IsDraft bool `json:"isDraft"`
			} `json:"pullRequest"`
		} `json:"markPullRequestReadyForReview"`
	}
	what := op("mark #%d ready for review", pr.Number)
	if err := c.graphQL(ctx, what, true, q, map[string]any{"id": pr.NodeID}, &out); err != nil {
		return err
	}
	if out.Mark.PullRequest.IsDraft {
		return &APIError{Op: what, Message: "the pull request is still a draft"}
	}
	return nil
}

// File is one file of a pull request's diff, as list-files gives it.
type File struct {
	Path         string
	PreviousPath string // set for a rename
	Status       string // added | removed | modified | renamed | copied | changed | unchanged
	Patch        string // the file's hunks; "" for a binary file or a diff too large
}

// Files returns every file of pull request number's diff (GitHub lists at
// most 3000).
func (c *Client) Files(ctx context.Context, number int) ([]File, error) {
	var out []File
	opts := &gh.ListOptions{PerPage: 100}
	for {
		var page []*gh.CommitFile
		var resp *gh.Response
		err := c.rest(ctx, op("list the files of #%d", number), func() (r *gh.Response, err error) {
			page, resp, err = c.gh.PullRequests.ListFiles(ctx, c.owner, c.repo, number, opts)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, f := range page {
			out = append(out, File{Path: f.GetFilename(), PreviousPath: f.GetPreviousFilename(), Status: f.GetStatus(), Patch: f.GetPatch()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// Diff returns pull request number's unified diff.
func (c *Client) Diff(ctx context.Context, number int) (string, error) {
	var diff string
	err := c.rest(ctx, op("get the diff of #%d", number), func() (r *gh.Response, err error) {
		diff, r, err = c.gh.PullRequests.GetRaw(ctx, c.owner, c.repo, number, gh.RawOptions{Type: gh.Diff})
		return r, err
	})
	return diff, err
}

// DefaultBranch returns the repository's default branch, read once per
// client (Preflight reads it too).
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	c.mu.Lock()
	branch := c.defaultBranch
	c.mu.Unlock()
	if branch != "" {
		return branch, nil
	}
	repo, err := c.repository(ctx)
	if err != nil {
		return "", err
	}
	return repo.GetDefaultBranch(), nil
}

// repository reads the repository (default branch, permissions).
func (c *Client) repository(ctx context.Context) (*gh.Repository, error) {
	var repo *gh.Repository
	err := c.rest(ctx, op("read %s", c.loc.FullName()), func() (r *gh.Response, err error) {
		repo, r, err = c.gh.Repositories.Get(ctx, c.owner, c.repo)
		return r, err
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.defaultBranch = repo.GetDefaultBranch()
	c.mu.Unlock()
	return repo, nil
}
