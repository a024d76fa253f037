package githubfake

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// restHandlers serve the operations of the OpenAPI subset, by operationId.
// The request has been validated against the description and its
// repository (if any) loaded and checked readable.
var restHandlers map[string]func(*call) (*reply, error)

func init() {
	restHandlers = map[string]func(*call) (*reply, error){
		"repos/get":                               getRepo,
		"pulls/list":                              listPulls,
		"pulls/create":                            createPull,
		"pulls/get":                               getPull,
		"pulls/update":                            updatePull,
		"pulls/list-files":                        listFiles,
		"pulls/list-commits":                      listCommits,
		"pulls/list-reviews":                      listReviews,
		"pulls/create-review":                     createReview,
		"pulls/get-review":                        getReview,
		"pulls/submit-review":                     submitReview,
		"pulls/list-comments-for-review":          listReviewComments,
		"pulls/list-review-comments":              listComments,
		"pulls/create-review-comment":             createComment,
		"pulls/create-reply-for-review-comment":   createReply,
		"pulls/get-review-comment":                getComment,
		"pulls/update-review-comment":             updateComment,
		"issues/list-comments":                    listIssueComments,
		"issues/create-comment":                   createIssueComment,
		"issues/update-comment":                   updateIssueComment,
		"rate-limit/get":                          getRateLimit,
		"repos/create-commit-status":              createStatus,
		"repos/list-commit-statuses-for-ref":      listStatuses,
		"repos/get-combined-status-for-ref":       combinedStatus,
		"repos/get-collaborator-permission-level": collaboratorPermission,
	}
}

func getRepo(c *call) (*reply, error) {
	return ok(c.repoJSON(c.repo, true)), nil
}

// loadPull finds the pull request of the pull_number (or issue_number)
// parameter and refreshes its head and base from the bare repository.
func (c *call) loadPull(param string) (*pullState, error) {
	n, err := c.intParam(param)
	if err != nil {
		return nil, err
	}
	for _, p := range c.repo.pulls {
		if int64(p.number) == n {
			if err := c.s.refresh(c.ctx, p); err != nil {
				return nil, err
			}
			return p, nil
		}
	}
	return nil, notFound(c.docURL)
}

// refresh re-reads the head and base branches of p: a push moves a pull
// request's head, as on GitHub. A deleted branch keeps its last commit.
func (s *Server) refresh(ctx context.Context, p *pullState) error {
	branches, err := p.repo.git.branches(ctx)
	if err != nil {
		return err
	}
	if sha, ok := branches[p.headRef]; ok && sha != p.headSHA {
		p.headSHA = sha
		p.repo.pushed = s.now()
	}
	if sha, ok := branches[p.baseRef]; ok {
		p.baseSHA = sha
	}
	return nil
}

// files returns the pull request's diff at commit (its head when ""), as
// GitHub computes it: from the merge base of base and commit.
func (s *Server) files(ctx context.Context, p *pullState, commit string) ([]*fileDiff, error) {
	if commit == "" {
		commit = p.headSHA
	}
	mb, err := p.repo.git.mergeBase(ctx, p.baseSHA, commit)
	if err != nil {
		return nil, err
	}
	if mb == "" {
		return nil, fmt.Errorf("%s and %s share no history", p.baseRef, p.headRef)
	}
	return p.repo.git.diff(ctx, mb, commit)
}

func fileByPath(files []*fileDiff, path string) *fileDiff {
	for _, f := range files {
		if f.path == path {
			return f
		}
	}
	return nil
}

func listPulls(c *call) (*reply, error) {
	state := c.query.Get("state")
	if state == "" {
		state = "open"
	}
	head := c.query.Get("head")
	headOwner, headRef, headQualified := strings.Cut(head, ":")
	var out []*pullState
	for _, p := range c.repo.pulls {
		if state != "all" && p.state != state {
			continue
		}
		// A head filter without "owner:" is ignored, as on GitHub.
		if headQualified && (!strings.EqualFold(headOwner, c.repo.owner.login) || p.headRef != headRef) {
			continue
		}
		if b := c.query.Get("base"); b != "" && p.baseRef != b {
			continue
		}
		out = append(out, p)
	}
	sortKey := c.query.Get("sort")
	dir := c.query.Get("direction")
	if dir == "" {
		dir = "asc"
		if sortKey == "" || sortKey == "created" {
			dir = "desc"
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if sortKey == "updated" {
			if !a.updated.Equal(b.updated) {
				return a.updated.Before(b.updated) == (dir == "asc")
			}
		}
		return (a.number < b.number) == (dir == "asc")
	})
	lo, hi := c.page(len(out))
	items := []any{}
	for _, p := range out[lo:hi] {
		if err := c.s.refresh(c.ctx, p); err != nil {
			return nil, err
		}
		items = append(items, c.pullJSON(p, false))
	}
	return ok(items), nil
}

type pullInput struct {
	Title               *string `json:"title"`
	Head                string  `json:"head"`
	HeadRepo            string  `json:"head_repo"`
	Base                string  `json:"base"`
	Body                *string `json:"body"`
	Draft               bool    `json:"draft"`
	MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	Issue               *int64  `json:"issue"`
	State               string  `json:"state"`
}

func createPull(c *call) (*reply, error) {
	if err := c.requireWrite(); err != nil {
		return nil, err
	}
	if c.viewer.actions && !c.repo.actionsPRs {
		return nil, forbidden("GitHub Actions is not permitted to create or approve pull requests.", c.docURL)
	}
	var in pullInput
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	const res = "PullRequest"
	if in.Issue != nil {
		return nil, validationFailed(c.docURL, fieldError{Resource: res, Field: "issue", Code: "invalid"})
	}
	if in.Title == nil || *in.Title == "" {
		return nil, validationFailed(c.docURL, fieldError{Resource: res, Field: "title", Code: "missing_field"})
	}
	headRef := in.Head
	if owner, ref, ok := strings.Cut(in.Head, ":"); ok {
		if !strings.EqualFold(owner, c.repo.owner.login) {
			// Forks are not modelled: another owner's branch does not exist.
			return nil, validationFailed(c.docURL, fieldError{Resource: res, Field: "head", Code: "invalid"})
		}
		headRef = ref
	}
	if in.HeadRepo != "" && !strings.EqualFold(in.HeadRepo, c.repo.fullName()) {
		return nil, validationFailed(c.docURL, fieldError{Resource: res, Field: "head_repo", Code: "invalid"})
	}
	branches, err := c.repo.git.branches(c.ctx)
	if err != nil {
		return nil, err
	}
	var errs []fieldError
	headSHA, headOK := branches[headRef]
	baseSHA, baseOK := branches[in.Base]
	if !baseOK {
		errs = append(errs, fieldError{Resource: res, Field: "base", Code: "invalid"})
	}
	if !headOK {
		errs = append(errs, fieldError{Resource: res, Field: "head", Code: "invalid"})
	}
	if len(errs) > 0 {
		return nil, validationFailed(c.docURL, errs...)
	}
	label := c.repo.owner.login + ":" + headRef
	for _, p := range c.repo.pulls {
		if p.state == "open" && p.headRef == headRef && p.baseRef == in.Base {
			return nil, validationFailed(c.docURL, fieldError{Resource: res, Code: "custom", Message: "A pull request already exists for " + label + "."})
		}
	}
	if ahead, err := c.repo.git.isAncestor(c.ctx, headSHA, baseSHA); err != nil {
		return nil, err
	} else if ahead {
		return nil, validationFailed(c.docURL, fieldError{Resource: res, Code: "custom", Message: "No commits between " + in.Base + " and " + headRef})
	}
	if mb, err := c.repo.git.mergeBase(c.ctx, baseSHA, headSHA); err != nil {
		return nil, err
	} else if mb == "" {
		return nil, validationFailed(c.docURL, fieldError{Resource: res, Code: "custom",
			Message: "The " + headRef + " branch has no history in common with " + in.Base})
	}
	s := c.s
	now := s.now()
	p := &pullState{
		repo: c.repo, number: c.repo.nextNumber, title: *in.Title, draft: in.Draft, state: "open",
		author: c.viewer, headRef: headRef, baseRef: in.Base, headSHA: headSHA, baseSHA: baseSHA,
		created: now, updated: now,
	}
	p.maintainerCanModify = in.MaintainerCanModify == nil || *in.MaintainerCanModify
	if in.Body != nil {
		p.body = *in.Body
	}
	c.repo.nextNumber++
	p.id = s.newID()
	p.nodeID = s.nodeID("PR", p.id, p)
	c.repo.pulls = append(c.repo.pulls, p)
	v := c.pullJSON(p, true)
	return created(v, c.pullURL(p)), nil
}

func getPull(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	// The diff and patch media types: the change since the merge base.
	accept := c.r.Header.Get("Accept")
	media, render := "", c.repo.git.diffText
	switch {
	case strings.Contains(accept, "diff"):
		media = "diff"
	case strings.Contains(accept, "patch"):
		media, render = "patch", c.repo.git.formatPatch
	default:
		return ok(c.pullJSON(p, true)), nil
	}
	mb, err := c.repo.git.mergeBase(c.ctx, p.baseSHA, p.headSHA)
	if err != nil {
		return nil, err
	}
	text, err := render(c.ctx, mb, p.headSHA)
	if err != nil {
		return nil, err
	}
	return &reply{status: http.StatusOK, raw: text, ctype: "application/vnd.github." + media + "; charset=utf-8"}, nil
}

func updatePull(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	if c.viewer == nil || (c.viewer != p.author && !c.perm().atLeast(PermissionWrite)) {
		if c.viewer == nil {
			return nil, c.requireWrite()
		}
		return nil, c.denied()
	}
	var in pullInput
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	const res = "PullRequest"
	if in.Base != "" && in.Base != p.baseRef {
		branches, err := c.repo.git.branches(c.ctx)
		if err != nil {
			return nil, err
		}
		sha, ok := branches[in.Base]
		if !ok {
			return nil, validationFailed(c.docURL, fieldError{Resource: res, Field: "base", Code: "invalid"})
		}
		p.baseRef, p.baseSHA = in.Base, sha
	}
	if in.State == "open" && p.state == "closed" {
		for _, q := range c.repo.pulls {
			if q != p && q.state == "open" && q.headRef == p.headRef && q.baseRef == p.baseRef {
				return nil, validationFailed(c.docURL, fieldError{Resource: res, Code: "custom",
					Message: "A pull request already exists for " + c.repo.owner.login + ":" + p.headRef + "."})
			}
		}
	}
	now := c.s.now()
	if in.Title != nil {
		p.title = *in.Title
	}
	if in.Body != nil {
		p.body = *in.Body
	}
	if in.MaintainerCanModify != nil {
		p.maintainerCanModify = *in.MaintainerCanModify
	}
	switch {
	case in.State == "closed" && p.state == "open":
		p.state, p.closedAt = "closed", now
	case in.State == "open" && p.state == "closed":
		p.state, p.closedAt = "open", timeZero
	}
	p.updated = now
	return ok(c.pullJSON(p, true)), nil
}

func listFiles(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	files, err := c.s.files(c.ctx, p, "")
	if err != nil {
		return nil, err
	}
	// GitHub lists at most 3000 files.
	files = files[:min(len(files), 3000)]
	lo, hi := c.page(len(files))
	items := []any{}
	for _, f := range files[lo:hi] {
		items = append(items, c.fileJSON(p, f))
	}
	return ok(items), nil
}

func listCommits(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	mb, err := c.repo.git.mergeBase(c.ctx, p.baseSHA, p.headSHA)
	if err != nil {
		return nil, err
	}
	// GitHub lists at most 250 commits.
	commits, err := c.repo.git.commits(c.ctx, mb, p.headSHA, 250)
	if err != nil {
		return nil, err
	}
	lo, hi := c.page(len(commits))
	items := []any{}
	for _, ci := range commits[lo:hi] {
		items = append(items, c.commitJSON(ci))
	}
	return ok(items), nil
}

// visibleReviews are the reviews the viewer may see: a PENDING review is
// its author's alone.
func (c *call) visibleReviews(p *pullState) []*reviewState {
	var out []*reviewState
	for _, r := range p.reviews {
		if r.state != statePending || r.author == c.viewer {
			out = append(out, r)
		}
	}
	return out
}

// visibleComments are the pull request's review comments the viewer may
// see, ascending by id.
func (c *call) visibleComments(p *pullState) []*commentState {
	var out []*commentState
	for _, cm := range p.comments {
		if cm.review.state != statePending || cm.review.author == c.viewer {
			out = append(out, cm)
		}
	}
	return out
}

func listReviews(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	reviews := c.visibleReviews(p)
	lo, hi := c.page(len(reviews))
	items := []any{}
	for _, r := range reviews[lo:hi] {
		items = append(items, c.reviewJSON(r))
	}
	return ok(items), nil
}

func (c *call) loadReview(p *pullState) (*reviewState, error) {
	id, err := c.intParam("review_id")
	if err != nil {
		return nil, err
	}
	for _, r := range c.visibleReviews(p) {
		if r.id == id {
			return r, nil
		}
	}
	return nil, notFound(c.docURL)
}

func getReview(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	r, err := c.loadReview(p)
	if err != nil {
		return nil, err
	}
	return ok(c.reviewJSON(r)), nil
}

func listReviewComments(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	r, err := c.loadReview(p)
	if err != nil {
		return nil, err
	}
	var list []*commentState
	for _, cm := range p.comments {
		if cm.review == r {
			list = append(list, cm)
		}
	}
	lo, hi := c.page(len(list))
	items := []any{}
	for _, cm := range list[lo:hi] {
		v, err := c.commentJSON(cm, true)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	return ok(items), nil
}

func listComments(c *call) (*reply, error) {
	p, err := c.loadPull("pull_number")
	if err != nil {
		return nil, err
	}
	list := c.visibleComments(p)
	if since := c.query.Get("since"); since != "" {
		t, err := parseTime(since)
		if err != nil {
			return nil, validationFailed(c.docURL, fieldError{Field: "since", Code: "invalid"})
		}
		list = slices.DeleteFunc(slices.Clone(list), func(cm *commentState) bool { return cm.updated.Before(t) })
	}
	byUpdated := c.query.Get("sort") == "updated"
	desc := c.query.Get("direction") == "desc"
	sorted := slices.Clone(list)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if byUpdated && !a.updated.Equal(b.updated) {
			return a.updated.Before(b.updated) != desc
		}
		return (a.id < b.id) != desc
	})
	lo, hi := c.page(len(sorted))
	items := []any{}
	for _, cm := range sorted[lo:hi] {
		v, err := c.commentJSON(cm, false)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	return ok(items), nil
}

func (c *call) loadComment() (*commentState, error) {
	id, err := c.intParam("comment_id")
	if err != nil {
		return nil, err
	}
	for _, p := range c.repo.pulls {
		for _, cm := range c.visibleComments(p) {
			if cm.id == id {
				if err := c.s.refresh(c.ctx, p); err != nil {
					return nil, err
				}
				return cm, nil
			}
		}
	}
	return nil, notFound(c.docURL)
}

func getComment(c *call) (*reply, error) {
	cm, err := c.loadComment()
	if err != nil {
		return nil, err
	}
	v, err := c.commentJSON(cm, false)
	if err != nil {
		return nil, err
	}
	return ok(v), nil
}

func updateComment(c *call) (*reply, error) {
	cm, err := c.loadComment()
	if err != nil {
		return nil, err
	}
	if err := c.requireContent(); err != nil {
		return nil, err
	}
	if c.viewer != cm.author && !c.perm().atLeast(PermissionWrite) {
		return nil, c.denied()
	}
	var in struct {
		Body string `json:"body"`
	}
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	cm.body, cm.updated = in.Body, c.s.now()
	v, err := c.commentJSON(cm, false)
	if err != nil {
		return nil, err
	}
	return ok(v), nil
}
