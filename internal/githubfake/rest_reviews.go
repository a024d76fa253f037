package githubfake

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// commentInput is one inline comment of a review, or the body of a
// single review comment.
type commentInput struct {
	Path        string `json:"path"`
	Body        string `json:"body"`
	Line        *int   `json:"line"`
	Side        string `json:"side"`
	StartLine   *int   `json:"start_line"`
	StartSide   string `json:"start_side"`
	Position    *int   `json:"position"`
	SubjectType string `json:"subject_type"`
	CommitID    string `json:"commit_id"`
	InReplyTo   *int64 `json:"in_reply_to"`
}

// anchor is where a new comment sits in the diff of its commit.
type anchor struct {
	path        string
	line        int
	startLine   int
	side        string
	startSide   string
	position    int
	diffHunk    string
	subjectType string
}

// anchorProblem is one reason GitHub refuses a comment's anchor. The
// review endpoints quote sentence; the comment endpoint returns the error
// object.
type anchorProblem struct {
	sentence string
	err      fieldError
}

const threadResource = "PullRequestReviewComment"

var (
	problemPath = anchorProblem{"Pull request review thread path is invalid",
		fieldError{Resource: threadResource, Code: "invalid", Field: "pull_request_review_thread.path"}}
	problemLine = anchorProblem{"Pull request review thread line must be part of the diff",
		fieldError{Resource: threadResource, Code: "custom", Field: "pull_request_review_thread.line", Message: "pull_request_review_thread.line must be part of the diff"}}
	// The position and side sentences are assumed, built as GitHub builds
	// the others.
	problemPosition = anchorProblem{"Pull request review thread position is invalid",
		fieldError{Resource: threadResource, Code: "invalid", Field: "pull_request_review_thread.position"}}
	problemSide = anchorProblem{"Pull request review thread side is invalid",
		fieldError{Resource: threadResource, Code: "invalid", Field: "pull_request_review_thread.side"}}
	problemSameHunk = anchorProblem{"Pull request review thread start line must be part of the same hunk as the line.",
		fieldError{Resource: threadResource, Code: "custom", Field: "pull_request_review_thread.start_line", Message: "pull_request_review_thread.start_line must be part of the same hunk as the line."}}
	problemPrecede = anchorProblem{"Pull request review thread start line must precede the end line.",
		fieldError{Resource: threadResource, Code: "custom", Field: "pull_request_review_thread.start_line", Message: "pull_request_review_thread.start_line must precede the end line."}}
	problemHunk = anchorProblem{"Pull request review thread diff hunk can't be blank",
		fieldError{Resource: threadResource, Code: "missing_field", Field: "pull_request_review_thread.diff_hunk"}}
)

// anchorComment checks a comment's anchor against the diff of files and
// returns where it sits, or GitHub's reasons for refusing it.
func anchorComment(files []*fileDiff, in commentInput) (anchor, []anchorProblem) {
	a := anchor{path: in.Path, subjectType: "line"}
	f := fileByPath(files, in.Path)
	if f == nil {
		return a, []anchorProblem{problemPath, problemHunk}
	}
	if in.SubjectType == "file" {
		a.subjectType = "file"
		return a, nil
	}
	if in.Line == nil && in.Position != nil {
		h, idx, ok := f.atPosition(*in.Position)
		if !ok {
			return a, []anchorProblem{problemPosition, problemHunk}
		}
		a.line, a.side = h.lines[idx].lineSide()
		a.position, a.diffHunk = *in.Position, h.diffHunk(idx)
		return a, nil
	}
	side := in.Side
	if side == "" {
		side = "RIGHT"
	}
	if side != "RIGHT" && side != "LEFT" {
		return a, []anchorProblem{problemSide, problemHunk}
	}
	var h *hunk
	var idx int
	found := false
	if in.Line != nil {
		h, idx, found = f.findLine(side, *in.Line)
	}
	if !found {
		if in.StartLine != nil {
			return a, []anchorProblem{problemLine, problemSameHunk, problemHunk}
		}
		return a, []anchorProblem{problemLine, problemHunk}
	}
	a.line, a.side = *in.Line, side
	a.position, a.diffHunk = h.lines[idx].pos, h.diffHunk(idx)
	if in.StartLine == nil {
		return a, nil
	}
	startSide := in.StartSide
	if startSide == "" {
		startSide = side
	}
	if startSide != "RIGHT" && startSide != "LEFT" {
		return a, []anchorProblem{problemSide}
	}
	if startSide == side && *in.StartLine >= *in.Line {
		return a, []anchorProblem{problemPrecede}
	}
	sh, sidx, ok := f.findLine(startSide, *in.StartLine)
	if !ok || sh != h {
		return a, []anchorProblem{problemSameHunk}
	}
	if sh.lines[sidx].pos >= h.lines[idx].pos {
		return a, []anchorProblem{problemPrecede}
	}
	a.startLine, a.startSide = *in.StartLine, startSide
	return a, nil
}

func sentences(ps []anchorProblem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.sentence
	}
	return out
}

func fieldErrors(ps []anchorProblem) []fieldError {
	out := make([]fieldError, len(ps))
	for i, p := range ps {
		out[i] = p.err
	}
	return out
}

// commitInPull resolves sha and checks it is a commit of the pull request
// (reachable from its head). It returns "" when it is not.
func (s *Server) commitInPull(ctx context.Context, p *pullState, sha string) (string, error) {
	full, ok, err := p.repo.git.resolveCommit(ctx, sha)
	if err != nil || !ok {
		return "", err
	}
	in, err := p.repo.git.isAncestor(ctx, full, p.headSHA)
	if err != nil || !in {
		return "", err
	}
	return full, nil
}

type reviewInput struct {
	CommitID string         `json:"commit_id"`
	Body     *string        `json:"body"`
	Event    string         `json:"event"`
	Comments []commentInput `json:"comments"`
}

// reviewEventProblem is GitHub's refusal of an event on p by the viewer,
// or "" when the event is allowed. The approval sentences are GitHub's;
// the request-changes and blank-body ones are assumed (no public response
// shows them).
func (c *call) reviewEventProblem(p *pullState, event, body string, comments int) string {
	switch {
	case event == "APPROVE" && p.author == c.viewer:
		return "Can not approve your own pull request"
	case event == "REQUEST_CHANGES" && p.author == c.viewer:
		return "Can not request changes on your own pull request"
	case event == "APPROVE" && c.viewer.actions && !c.repo.actionsPRs:
		return "GitHub Actions is not permitted to approve pull requests."
	case (event == "REQUEST_CHANGES" || event == "COMMENT") && strings.TrimSpace(body) == "" && comments == 0:
		return "Body can't be blank"
	}
	return ""
}

func createReview(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	if err := c.requireContent(); err != nil {
		return nil, err
	}
	var in reviewInput
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	body := ""
	if in.Body != nil {
		body = *in.Body
	}
	if in.Event == "" {
		for _, r := range p.reviews {
			if r.state == statePending && r.author == c.viewer {
				return nil, unprocessableSimple(c.docURL, "User can only have one pending review per pull request")
			}
		}
	} else if msg := c.reviewEventProblem(p, in.Event, body, len(in.Comments)); msg != "" {
		return nil, unprocessableSimple(c.docURL, msg)
	}
	commit := p.headSHA
	if in.CommitID != "" {
		if commit, err = c.s.commitInPull(c.ctx, p, in.CommitID); err != nil {
			return nil, err
		} else if commit == "" {
			return nil, unprocessableSimple(c.docURL, "No commit found for SHA: "+in.CommitID)
		}
	}
	files, err := c.s.files(c.ctx, p, commit)
	if err != nil {
		return nil, err
	}
	// The review is all or nothing: one bad anchor refuses it whole, and
	// GitHub's message does not say which comment was at fault.
	anchors := make([]anchor, len(in.Comments))
	for i, ci := range in.Comments {
		a, problems := anchorComment(files, ci)
		if len(problems) > 0 {
			return nil, unprocessableSimple(c.docURL, sentences(problems)...)
		}
		anchors[i] = a
	}
	s := c.s
	now := s.now()
	r := &reviewState{pull: p, author: c.viewer, body: body, commitID: commit, created: now, state: statePending}
	if in.Event != "" {
		r.state, r.submitted = eventState[in.Event], now
	}
	r.id = s.newID()
	r.nodeID = s.nodeID("PRR", r.id, r)
	p.reviews = append(p.reviews, r)
	for i, a := range anchors {
		s.addComment(p, r, a, in.Comments[i].Body, commit, nil, now)
	}
	p.updated = now
	return ok(c.reviewJSON(r)), nil
}

// addComment stores a review comment; a comment that replies to nothing
// opens a thread.
func (s *Server) addComment(p *pullState, r *reviewState, a anchor, body, commit string, replyTo *commentState, now time.Time) *commentState {
	cm := &commentState{
		pull: p, review: r, author: r.author, body: body, path: a.path, commitID: commit,
		side: a.side, startSide: a.startSide, line: a.line, startLine: a.startLine, position: a.position,
		diffHunk: a.diffHunk, subjectType: a.subjectType, inReplyTo: replyTo, created: now, updated: now,
	}
	cm.id = s.newID()
	cm.nodeID = s.nodeID("PRRC", cm.id, cm)
	p.comments = append(p.comments, cm)
	if replyTo == nil {
		t := &threadState{pull: p, comments: []*commentState{cm}}
		t.id = s.newID()
		t.nodeID = s.nodeID("PRRT", t.id, t)
		p.threads = append(p.threads, t)
		cm.thread = t
	} else {
		cm.thread = replyTo.thread
		cm.thread.comments = append(cm.thread.comments, cm)
	}
	return cm
}

func submitReview(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	if err := c.requireContent(); err != nil {
		return nil, err
	}
	r, err := c.loadReview(p)
	if err != nil {
		return nil, err
	}
	var in reviewInput
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	if r.state != statePending {
		// Wording assumed.
		return nil, unprocessableSimple(c.docURL, "Can not submit a review that is not pending")
	}
	body := r.body
	if in.Body != nil {
		body = *in.Body
	}
	n := 0
	for _, cm := range p.comments {
		if cm.review == r {
			n++
		}
	}
	if msg := c.reviewEventProblem(p, in.Event, body, n); msg != "" {
		return nil, unprocessableSimple(c.docURL, msg)
	}
	now := c.s.now()
	r.body, r.state, r.submitted = body, eventState[in.Event], now
	p.updated = now
	return ok(c.reviewJSON(r)), nil
}

func createComment(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	if err := c.requireContent(); err != nil {
		return nil, err
	}
	var in commentInput
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	if in.InReplyTo != nil {
		// "When specified, all parameters other than body ... are ignored."
		return c.reply(p, *in.InReplyTo, in.Body)
	}
	commit, err := c.s.commitInPull(c.ctx, p, in.CommitID)
	if err != nil {
		return nil, err
	}
	if commit == "" {
		return nil, validationFailed(c.docURL, fieldError{Resource: threadResource, Code: "invalid", Field: "commit_id"})
	}
	files, err := c.s.files(c.ctx, p, commit)
	if err != nil {
		return nil, err
	}
	a, problems := anchorComment(files, in)
	if len(problems) > 0 {
		return nil, validationFailed(c.docURL, fieldErrors(problems)...)
	}
	cm := c.s.newSingleComment(p, c.viewer, a, in.Body, commit, nil)
	v, err := c.commentJSON(cm, false)
	if err != nil {
		return nil, err
	}
	return created(v, c.base+"/repos/"+c.repo.fullName()+"/pulls/comments/"+itoa(cm.id)), nil
}

// newSingleComment stores a comment made outside a review: GitHub wraps
// it in a review of its own (COMMENTED, empty body).
func (s *Server) newSingleComment(p *pullState, author *account, a anchor, body, commit string, replyTo *commentState) *commentState {
	now := s.now()
	r := &reviewState{pull: p, author: author, state: stateCommented, commitID: commit, created: now, submitted: now}
	r.id = s.newID()
	r.nodeID = s.nodeID("PRR", r.id, r)
	p.reviews = append(p.reviews, r)
	p.updated = now
	return s.addComment(p, r, a, body, commit, replyTo, now)
}

func createReply(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	if err := c.requireContent(); err != nil {
		return nil, err
	}
	id, err := c.intParam("comment_id")
	if err != nil {
		return nil, err
	}
	var in struct {
		Body string `json:"body"`
	}
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	return c.reply(p, id, in.Body)
}

// reply answers the top-level comment id of p. A reply to a reply is
// refused with 422 (GitHub documents only that such replies are not
// supported; the status and wording are assumed).
func (c *call) reply(p *pullState, id int64, body string) (*reply, error) {
	var root *commentState
	for _, cm := range c.visibleComments(p) {
		if cm.id == id {
			root = cm
		}
	}
	if root == nil {
		return nil, notFound(c.docURL)
	}
	if root.inReplyTo != nil {
		return nil, validationFailed(c.docURL, fieldError{Resource: threadResource, Code: "invalid", Field: "in_reply_to",
			Message: "in_reply_to must be the id of a top-level review comment: replies to replies are not supported"})
	}
	a := anchor{path: root.path, line: root.line, startLine: root.startLine, side: root.side, startSide: root.startSide,
		position: root.position, diffHunk: root.diffHunk, subjectType: root.subjectType}
	cm := c.s.newSingleComment(p, c.viewer, a, body, root.commitID, root)
	v, err := c.commentJSON(cm, false)
	if err != nil {
		return nil, err
	}
	return &reply{status: http.StatusCreated, value: v,
		header: http.Header{"Location": {c.base + "/repos/" + c.repo.fullName() + "/pulls/comments/" + itoa(cm.id)}}}, nil
}
