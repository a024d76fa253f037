package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v60/github"
)

// Event is what a review says about the pull request.
type Event string

// The review events. GitHub refuses APPROVE and REQUEST_CHANGES from the
// pull request's author: with one identity, spawn reviews with COMMENT.
const (
	EventComment        Event = "COMMENT"
	EventApprove        Event = "APPROVE"
	EventRequestChanges Event = "REQUEST_CHANGES"
)

// ReviewRequest is one review to submit.
type ReviewRequest struct {
	// Marker identifies the review (Run, Round, Seat): it is appended to
	// Body, and to each inline comment with the comment's finding.
	Marker   Marker
	Event    Event
	Body     string
	CommitID string // the head reviewed; "" means the pull request's latest commit
	// Comments are the inline comments, placed by Diff.Place on the diff
	// of CommitID.
	Comments []InlineComment
}

// PostedComment is an inline comment of a posted review.
type PostedComment struct {
	ID        int64  `json:"id"`
	FindingID string `json:"finding_id,omitempty"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	StartLine int    `json:"start_line,omitempty"`
	URL       string `json:"url,omitempty"`
}

// PostedReview is a review on GitHub.
type PostedReview struct {
	ID       int64           `json:"id"`
	State    string          `json:"state"` // APPROVED | CHANGES_REQUESTED | COMMENTED | ...
	URL      string          `json:"url,omitempty"`
	CommitID string          `json:"commit_id,omitempty"`
	Author   string          `json:"author,omitempty"`
	Body     string          `json:"body"`
	Comments []PostedComment `json:"comments"`
	// Existing is true when the review was found already posted (by an
	// earlier try or an earlier run) rather than posted by this call.
	Existing bool `json:"existing,omitempty"`
	// Folded is true when GitHub refused the inline comments' anchors and
	// they went into the body instead.
	Folded bool `json:"folded,omitempty"`
}

// CommentFor returns the id of the inline comment posted for findingID.
func (r PostedReview) CommentFor(findingID string) (int64, bool) {
	for _, c := range r.Comments {
		if c.FindingID == findingID {
			return c.ID, true
		}
	}
	return 0, false
}

// SubmitReview posts in as ONE review of pull request number, unless a
// review carrying in.Marker is already there, which it returns instead
// (Existing): it looks before posting and again after an answer that
// leaves the effect unknown (a 5xx, a timeout), so it never posts twice.
// The result maps each inline comment to its finding.
//
// Should GitHub still refuse an inline comment's anchor (the head moved
// after the comments were placed), the review is posted again with every
// inline comment folded into its body (FoldComments), and Folded is set:
// the review is never lost to a 422 about its anchors.
func (c *Client) SubmitReview(ctx context.Context, number int, in ReviewRequest) (PostedReview, error) {
	rev, err := c.submitReview(ctx, number, in)
	if err == nil || len(in.Comments) == 0 || statusOf(err) != http.StatusUnprocessableEntity ||
		!strings.Contains(strings.ToLower(err.Error()), "pull request review thread") {
		return rev, err
	}
	folded := in
	folded.Body, folded.Comments = FoldComments(in.Body, in.Comments), nil
	rev, ferr := c.submitReview(ctx, number, folded)
	if ferr != nil {
		return PostedReview{}, errors.Join(err, ferr)
	}
	rev.Folded = true
	return rev, nil
}

// FoldComments returns body followed by the inline comments as a list
// ("- `path:line`: text"), for a review that cannot anchor them.
func FoldComments(body string, comments []InlineComment) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(body, "\n"))
	for i, ic := range comments {
		if i == 0 {
			b.WriteString("\n\n")
		} else {
			b.WriteString("\n")
		}
		where := fmt.Sprintf("%s:%d", ic.Path, ic.Line)
		if ic.StartLine > 0 && ic.StartLine < ic.Line {
			where = fmt.Sprintf("%s:%d-%d", ic.Path, ic.StartLine, ic.Line)
		}
		fmt.Fprintf(&b, "- `%s`: %s", where, strings.TrimSpace(ic.Body))
	}
	return b.String()
}

func (c *Client) submitReview(ctx context.Context, number int, in ReviewRequest) (PostedReview, error) {
	if in.Marker.Run == "" {
		return PostedReview{}, errors.New("submit review: the marker needs a run id")
	}
	if in.Event == "" {
		in.Event = EventComment
	}
	marker := Marker{Run: in.Marker.Run, Round: in.Marker.Round, Seat: in.Marker.Seat}
	what := op("submit the review of #%d (%s)", number, marker.describe())
	var out PostedReview
	find := func(ctx context.Context) (bool, error) {
		r, ok, err := c.findReview(ctx, number, marker)
		if ok {
			out, out.Existing = r, true
		}
		return ok, err
	}
	err := c.ensure(ctx, what, find, func(ctx context.Context) error {
		req := &gh.PullRequestReviewRequest{Body: gh.String(marker.Append(in.Body)), Event: gh.String(string(in.Event))}
		if in.CommitID != "" {
			req.CommitID = gh.String(in.CommitID)
		}
		for _, ic := range in.Comments {
			cm := marker
			cm.Finding = ic.FindingID
			dc := &gh.DraftReviewComment{Path: gh.String(ic.Path), Body: gh.String(cm.Append(ic.Body)),
				Line: gh.Int(ic.Line), Side: gh.String("RIGHT")}
			if ic.StartLine > 0 && ic.StartLine < ic.Line {
				dc.StartLine, dc.StartSide = gh.Int(ic.StartLine), gh.String("RIGHT")
			}
			req.Comments = append(req.Comments, dc)
		}
		var r *gh.PullRequestReview
		if err := c.rest(ctx, what, func() (resp *gh.Response, err error) {
			r, resp, err = c.gh.PullRequests.CreateReview(ctx, c.owner, c.repo, number, req)
			return resp, err
		}); err != nil {
			return err
		}
		out = postedReview(r)
		return nil
	})
	if err != nil {
		return PostedReview{}, err
	}
	comments, err := c.reviewComments(ctx, number, out.ID)
	if err != nil {
		return PostedReview{}, err
	}
	out.Comments = comments
	return out, nil
}

func postedReview(r *gh.PullRequestReview) PostedReview {
	return PostedReview{ID: r.GetID(), State: r.GetState(), URL: r.GetHTMLURL(), CommitID: r.GetCommitID(),
		Author: r.GetUser().GetLogin(), Body: r.GetBody()}
}

// findReview returns the review of number carrying marker.
func (c *Client) findReview(ctx context.Context, number int, marker Marker) (PostedReview, bool, error) {
	reviews, err := c.Reviews(ctx, number)
	if err != nil {
		return PostedReview{}, false, err
	}
	for _, r := range reviews {
		if marker.In(r.Body) {
			return r, true, nil
		}
	}
	return PostedReview{}, false, nil
}

// Reviews returns every review of pull request number, oldest first,
// without their comments.
func (c *Client) Reviews(ctx context.Context, number int) ([]PostedReview, error) {
	var out []PostedReview
	opts := &gh.ListOptions{PerPage: 100}
	for {
		var page []*gh.PullRequestReview
		var resp *gh.Response
		err := c.rest(ctx, op("list the reviews of #%d", number), func() (r *gh.Response, err error) {
			page, resp, err = c.gh.PullRequests.ListReviews(ctx, c.owner, c.repo, number, opts)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			out = append(out, postedReview(r))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// reviewComments lists a review's comments with the findings their
// markers name.
func (c *Client) reviewComments(ctx context.Context, number int, reviewID int64) ([]PostedComment, error) {
	var out []PostedComment
	opts := &gh.ListOptions{PerPage: 100}
	for {
		var page []*gh.PullRequestComment
		var resp *gh.Response
		err := c.rest(ctx, op("list the comments of review %d on #%d", reviewID, number), func() (r *gh.Response, err error) {
			page, resp, err = c.gh.PullRequests.ListReviewComments(ctx, c.owner, c.repo, number, reviewID, opts)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, cm := range page {
			pc := PostedComment{ID: cm.GetID(), Path: cm.GetPath(), Line: cm.GetLine(), StartLine: cm.GetStartLine(), URL: cm.GetHTMLURL()}
			if m, ok := ParseMarker(cm.GetBody()); ok {
				pc.FindingID = m.Finding
			}
			out = append(out, pc)
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// Comment is a pull request review comment (a thread's first comment or a
// reply), as REST gives it.
type Comment struct {
	ID        int64  `json:"id"`
	InReplyTo int64  `json:"in_reply_to,omitempty"` // 0 for a thread's first comment
	ReviewID  int64  `json:"review_id,omitempty"`
	Author    string `json:"author,omitempty"`
	Body      string `json:"body"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	URL       string `json:"url,omitempty"`
}

// Spawn reports whether spawn posted the comment (it carries a marker).
func (cm Comment) Spawn() bool { return HasMarker(cm.Body) }

// Comments returns every review comment of pull request number, replies
// included, by id.
func (c *Client) Comments(ctx context.Context, number int) ([]Comment, error) {
	var out []Comment
	opts := &gh.PullRequestListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		var page []*gh.PullRequestComment
		var resp *gh.Response
		err := c.rest(ctx, op("list the review comments of #%d", number), func() (r *gh.Response, err error) {
			page, resp, err = c.gh.PullRequests.ListComments(ctx, c.owner, c.repo, number, opts)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, cm := range page {
			out = append(out, comment(cm))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func comment(cm *gh.PullRequestComment) Comment {
	return Comment{ID: cm.GetID(), InReplyTo: cm.GetInReplyTo(), ReviewID: cm.GetPullRequestReviewID(),
		Author: cm.GetUser().GetLogin(), Body: cm.GetBody(), Path: cm.GetPath(), Line: cm.GetLine(), URL: cm.GetHTMLURL()}
}

// Reply posts body (with marker, whose ReplyTo is set to commentID) as a
// reply in the thread of review comment commentID on pull request number,
// unless a reply carrying the same marker is already in that thread, which
// it returns (existing true): it looks before posting and again after an
// answer that leaves the effect unknown. The marker names the reply, so
// two different replies to one thread need markers that differ (Round,
// Seat or Finding). commentID must be a thread's first comment (GitHub
// has no replies to replies); marker.Run must be set.
func (c *Client) Reply(ctx context.Context, number int, commentID int64, marker Marker, body string) (reply Comment, existing bool, err error) {
	if marker.Run == "" {
		return Comment{}, false, errors.New("reply: the marker needs a run id")
	}
	marker.ReplyTo = commentID
	what := op("reply to comment %d on #%d", commentID, number)
	find := func(ctx context.Context) (bool, error) {
		all, err := c.Comments(ctx, number)
		if err != nil {
			return false, err
		}
		for _, cm := range all {
			if (cm.InReplyTo == commentID || cm.ID == commentID) && marker.In(cm.Body) {
				reply, existing = cm, true
				return true, nil
			}
		}
		return false, nil
	}
	err = c.ensure(ctx, what, find, func(ctx context.Context) error {
		req, err := c.gh.NewRequest("POST", fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", c.owner, c.repo, number, commentID),
			map[string]string{"body": marker.Append(body)})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		var cm gh.PullRequestComment
		if err := c.rest(ctx, what, func() (*gh.Response, error) { return c.gh.Do(ctx, req, &cm) }); err != nil {
			return err
		}
		reply = comment(&cm)
		return nil
	})
	return reply, existing, err
}

// StripMarkers returns body without spawn's hidden markers, trimmed, for
// showing it (or putting it into a prompt).
func StripMarkers(body string) string {
	for {
		i := strings.Index(body, markerPrefix)
		if i < 0 {
			return strings.TrimSpace(body)
		}
		j := strings.Index(body[i:], "-->")
		if j < 0 {
			return strings.TrimSpace(body[:i])
		}
		body = body[:i] + body[i+j+3:]
	}
}
