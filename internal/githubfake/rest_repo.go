package githubfake

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

var timeZero time.Time

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339, s) }

func listIssueComments(c *call) (*reply, error) {
	p, err := c.loadPull("issue_number")
	if err != nil {
		return nil, err
	}
	list := p.issueComments
	if since := c.query.Get("since"); since != "" {
		t, err := parseTime(since)
		if err != nil {
			return nil, validationFailed(c.docURL, fieldError{Field: "since", Code: "invalid"})
		}
		list = slices.DeleteFunc(slices.Clone(list), func(ic *issueCommentState) bool { return ic.updated.Before(t) })
	}
	lo, hi := c.page(len(list))
	items := []any{}
	for _, ic := range list[lo:hi] {
		items = append(items, c.issueCommentJSON(ic))
	}
	return ok(items), nil
}

func createIssueComment(c *call) (*reply, error) {
	p, err := c.loadPull("issue_number")
	if err != nil {
		return nil, err
	}
	if err := c.requireContent(); err != nil {
		return nil, err
	}
	var in struct {
		Body string `json:"body"`
	}
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Body) == "" {
		return nil, validationFailed(c.docURL, fieldError{Resource: "IssueComment", Field: "body", Code: "missing_field"})
	}
	s := c.s
	now := s.now()
	ic := &issueCommentState{pull: p, author: c.viewer, body: in.Body, created: now, updated: now}
	ic.id = s.newID()
	ic.nodeID = s.nodeID("IC", ic.id, ic)
	p.issueComments = append(p.issueComments, ic)
	p.updated = now
	return created(c.issueCommentJSON(ic), c.base+"/repos/"+c.repo.fullName()+"/issues/comments/"+itoa(ic.id)), nil
}

func updateIssueComment(c *call) (*reply, error) {
	id, err := c.intParam("comment_id")
	if err != nil {
		return nil, err
	}
	var found *issueCommentState
	for _, p := range c.repo.pulls {
		for _, ic := range p.issueComments {
			if ic.id == id {
				found = ic
			}
		}
	}
	if found == nil {
		return nil, notFound(c.docURL)
	}
	if err := c.requireContent(); err != nil {
		return nil, err
	}
	if c.viewer != found.author && !c.perm().atLeast(PermissionWrite) {
		return nil, c.denied()
	}
	var in struct {
		Body string `json:"body"`
	}
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Body) == "" {
		return nil, validationFailed(c.docURL, fieldError{Resource: "IssueComment", Field: "body", Code: "missing_field"})
	}
	found.body, found.updated = in.Body, c.s.now()
	return ok(c.issueCommentJSON(found)), nil
}

func getRateLimit(c *call) (*reply, error) {
	now := c.s.cfg.clock()
	res := func(name string) map[string]any {
		b := c.s.bucket(c.viewer, name)
		b.roll(now)
		return map[string]any{"limit": b.limit, "used": b.used, "remaining": max(0, b.limit-b.used), "reset": b.reset.Unix()}
	}
	core := res("core")
	idle := func(limit int) map[string]any {
		return map[string]any{"limit": limit, "used": 0, "remaining": limit, "reset": now.Add(time.Hour).Unix()}
	}
	return ok(map[string]any{
		"resources": map[string]any{
			"core":                 core,
			"graphql":              res("graphql"),
			"search":               idle(30),
			"code_search":          idle(10),
			"integration_manifest": idle(5000),
		},
		"rate": core,
	}), nil
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// resolveRef resolves a commit-status ref: a SHA, a branch ("main" or
// "heads/main") or a tag ("tags/v1"). It returns "" when nothing matches.
func (c *call) resolveRef(ctx context.Context, ref string) (string, error) {
	var candidates []string
	switch {
	case fullSHA.MatchString(ref):
		candidates = []string{ref}
	case strings.HasPrefix(ref, "heads/") || strings.HasPrefix(ref, "tags/"):
		candidates = []string{"refs/" + ref}
	default:
		candidates = []string{"refs/heads/" + ref, "refs/tags/" + ref, ref}
	}
	for _, cand := range candidates {
		sha, ok, err := c.repo.git.resolveCommit(ctx, cand)
		if err != nil {
			return "", err
		}
		if ok {
			return sha, nil
		}
	}
	return "", nil
}

type statusInput struct {
	State       string  `json:"state"`
	TargetURL   *string `json:"target_url"`
	Description *string `json:"description"`
	Context     string  `json:"context"`
}

func createStatus(c *call) (*reply, error) {
	if err := c.requireWrite(); err != nil {
		return nil, err
	}
	var in statusInput
	if err := c.decode(&in); err != nil {
		return nil, err
	}
	sha, ok, err := c.repo.git.resolveCommit(c.ctx, c.params["sha"])
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, unprocessableMessage("No commit found for SHA: "+c.params["sha"], c.docURL)
	}
	if in.Context == "" {
		in.Context = "default"
	}
	n := 0
	for _, st := range c.repo.statuses[sha] {
		if st.context == in.Context {
			n++
		}
	}
	if n >= 1000 {
		return nil, validationFailed(c.docURL, fieldError{Resource: "Status", Code: "custom",
			Message: "This SHA and context has reached the maximum number of statuses."})
	}
	s := c.s
	st := &statusState{sha: sha, state: in.State, description: in.Description, targetURL: in.TargetURL,
		context: in.Context, creator: c.viewer, created: s.now()}
	st.id = s.newID()
	st.nodeID = s.nodeID("SC", st.id, st)
	c.repo.statuses[sha] = append(c.repo.statuses[sha], st)
	return created(c.statusJSON(st), c.base+"/repos/"+c.repo.fullName()+"/statuses/"+sha), nil
}

func listStatuses(c *call) (*reply, error) {
	sha, err := c.resolveRef(c.ctx, c.params["ref"])
	if err != nil {
		return nil, err
	}
	all := c.repo.statuses[sha]
	newest := make([]*statusState, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		newest = append(newest, all[i])
	}
	lo, hi := c.page(len(newest))
	items := []any{}
	for _, st := range newest[lo:hi] {
		items = append(items, c.statusJSON(st))
	}
	return ok(items), nil
}

// latestStatuses is the newest status of each context of sha, by context.
func latestStatuses(r *repoState, sha string) []*statusState {
	latest := map[string]*statusState{}
	for _, st := range r.statuses[sha] {
		latest[st.context] = st
	}
	out := make([]*statusState, 0, len(latest))
	for _, st := range latest {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].context < out[j].context })
	return out
}

// combinedState is failure if any context failed or errored, pending if
// any is pending or there is none, else success.
func combinedState(latest []*statusState) string {
	if len(latest) == 0 {
		return "pending"
	}
	state := "success"
	for _, st := range latest {
		switch st.state {
		case "error", "failure":
			return "failure"
		case "pending":
			state = "pending"
		}
	}
	return state
}

func combinedStatus(c *call) (*reply, error) {
	sha, err := c.resolveRef(c.ctx, c.params["ref"])
	if err != nil {
		return nil, err
	}
	if sha == "" {
		return nil, notFound(c.docURL)
	}
	latest := latestStatuses(c.repo, sha)
	lo, hi := c.page(len(latest))
	items := []any{}
	for _, st := range latest[lo:hi] {
		items = append(items, c.statusJSON(st))
	}
	return ok(map[string]any{
		"state":       combinedState(latest),
		"sha":         sha,
		"total_count": len(latest),
		"statuses":    items,
		"repository":  c.repoJSON(c.repo, false),
		"commit_url":  c.base + "/repos/" + c.repo.fullName() + "/commits/" + sha,
		"url":         c.base + "/repos/" + c.repo.fullName() + "/commits/" + sha + "/status",
	}), nil
}

func collaboratorPermission(c *call) (*reply, error) {
	a := c.s.accounts[strings.ToLower(c.params["username"])]
	if a == nil || a.typ == "Organization" {
		return nil, notFound(c.docURL)
	}
	perm := c.s.permission(a, c.repo)
	if !perm.atLeast(PermissionRead) {
		return nil, notFound(c.docURL)
	}
	user := c.userJSON(a)
	user["permissions"] = permissionsJSON(perm)
	user["role_name"] = string(perm)
	return ok(map[string]any{
		"permission": perm.legacy(),
		"role_name":  string(perm),
		"user":       user,
	}), nil
}

func permissionsJSON(p Permission) map[string]any {
	return map[string]any{
		"admin":    p.atLeast(PermissionAdmin),
		"maintain": p.atLeast(PermissionMaintain),
		"push":     p.atLeast(PermissionWrite),
		"triage":   p.atLeast(PermissionTriage),
		"pull":     p.atLeast(PermissionRead),
	}
}
