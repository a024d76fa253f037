package githubfake

import (
	"strings"
	"time"
)

// The JSON renderers build GitHub's response objects with every field the
// OpenAPI description requires; the response validation of every request
// keeps them honest.

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// tsOrNil is a nullable timestamp.
func tsOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return ts(t)
}

// html is the web URL of a path: the server's root, as on GitHub
// Enterprise Server.
func (c *call) html(path string) string { return c.s.url + "/" + strings.TrimPrefix(path, "/") }

func (c *call) userJSON(a *account) map[string]any {
	u := c.base + "/users/" + a.login
	return map[string]any{
		"login":               a.login,
		"id":                  a.id,
		"node_id":             a.nodeID,
		"avatar_url":          c.s.url + "/avatars/u/" + itoa(a.id),
		"gravatar_id":         "",
		"url":                 u,
		"html_url":            c.html(a.login),
		"followers_url":       u + "/followers",
		"following_url":       u + "/following{/other_user}",
		"gists_url":           u + "/gists{/gist_id}",
		"starred_url":         u + "/starred{/owner}{/repo}",
		"subscriptions_url":   u + "/subscriptions",
		"organizations_url":   u + "/orgs",
		"repos_url":           u + "/repos",
		"events_url":          u + "/events{/privacy}",
		"received_events_url": u + "/received_events",
		"type":                a.typ,
		"site_admin":          false,
		"user_view_type":      "public",
	}
}

// repoJSON renders repository (full: full-repository, with the viewer's
// permissions).
func (c *call) repoJSON(r *repoState, full bool) map[string]any {
	api := c.base + "/repos/" + r.fullName()
	open := 0
	for _, p := range r.pulls {
		if p.state == "open" {
			open++
		}
	}
	visibility := "private"
	if !r.private {
		visibility = "public"
	}
	host := strings.TrimPrefix(strings.TrimPrefix(c.s.url, "http://"), "https://")
	v := map[string]any{
		"id":                r.id,
		"node_id":           r.nodeID,
		"name":              r.name,
		"full_name":         r.fullName(),
		"owner":             c.userJSON(r.owner),
		"private":           r.private,
		"visibility":        visibility,
		"html_url":          c.html(r.fullName()),
		"description":       nil,
		"fork":              false,
		"url":               api,
		"archive_url":       api + "/{archive_format}{/ref}",
		"assignees_url":     api + "/assignees{/user}",
		"blobs_url":         api + "/git/blobs{/sha}",
		"branches_url":      api + "/branches{/branch}",
		"collaborators_url": api + "/collaborators{/collaborator}",
		"comments_url":      api + "/comments{/number}",
		"commits_url":       api + "/commits{/sha}",
		"compare_url":       api + "/compare/{base}...{head}",
		"contents_url":      api + "/contents/{+path}",
		"contributors_url":  api + "/contributors",
		"deployments_url":   api + "/deployments",
		"downloads_url":     api + "/downloads",
		"events_url":        api + "/events",
		"forks_url":         api + "/forks",
		"git_commits_url":   api + "/git/commits{/sha}",
		"git_refs_url":      api + "/git/refs{/sha}",
		"git_tags_url":      api + "/git/tags{/sha}",
		"git_url":           "git://" + host + "/" + r.fullName() + ".git",
		"issue_comment_url": api + "/issues/comments{/number}",
		"issue_events_url":  api + "/issues/events{/number}",
		"issues_url":        api + "/issues{/number}",
		"keys_url":          api + "/keys{/key_id}",
		"labels_url":        api + "/labels{/name}",
		"languages_url":     api + "/languages",
		"merges_url":        api + "/merges",
		"milestones_url":    api + "/milestones{/number}",
		"notifications_url": api + "/notifications{?since,all,participating}",
		"pulls_url":         api + "/pulls{/number}",
		"releases_url":      api + "/releases{/id}",
		"ssh_url":           "git@" + host + ":" + r.fullName() + ".git",
		"stargazers_url":    api + "/stargazers",
		"statuses_url":      api + "/statuses/{sha}",
		"subscribers_url":   api + "/subscribers",
		"subscription_url":  api + "/subscription",
		"tags_url":          api + "/tags",
		"teams_url":         api + "/teams",
		"trees_url":         api + "/git/trees{/sha}",
		"clone_url":         r.git.dir,
		"mirror_url":        nil,
		"hooks_url":         api + "/hooks",
		"svn_url":           c.html(r.fullName()),
		"homepage":          nil,
		"language":          nil,
		"forks_count":       0,
		"forks":             0,
		"stargazers_count":  0,
		"watchers_count":    0,
		"watchers":          0,
		"size":              0,
		"default_branch":    r.defaultBranch,
		"open_issues_count": open,
		"open_issues":       open,
		"is_template":       false,
		"topics":            []string{},
		"has_issues":        true,
		"has_projects":      false,
		"has_wiki":          false,
		"has_pages":         false,
		"has_downloads":     false,
		"has_discussions":   false,
		"archived":          false,
		"disabled":          false,
		"license":           nil,
		"pushed_at":         ts(r.pushed),
		"created_at":        ts(r.created),
		"updated_at":        ts(r.pushed),
		"allow_forking":     true,
	}
	if full {
		v["permissions"] = permissionsJSON(c.s.permission(c.viewer, r))
		v["network_count"] = 0
		v["subscribers_count"] = 0
		v["allow_squash_merge"] = true
		v["allow_merge_commit"] = true
		v["allow_rebase_merge"] = true
		v["allow_auto_merge"] = false
		v["delete_branch_on_merge"] = false
	}
	return v
}

// association is how a is associated with r: OWNER, COLLABORATOR (any
// role given by AddUser or SetPermission), CONTRIBUTOR (opened a pull
// request) or NONE. An Actions token is NONE.
func (s *Server) association(a *account, r *repoState) string {
	if a == nil || a.actions {
		return "NONE"
	}
	if strings.EqualFold(a.login, r.owner.login) {
		return "OWNER"
	}
	perm, explicit := r.perms[strings.ToLower(a.login)]
	if (explicit && perm != PermissionNone) || (!explicit && a.perm != PermissionNone) {
		return "COLLABORATOR"
	}
	for _, p := range r.pulls {
		if p.author == a {
			return "CONTRIBUTOR"
		}
	}
	return "NONE"
}

func (c *call) pullURL(p *pullState) string {
	return c.base + "/repos/" + p.repo.fullName() + "/pulls/" + itoa(int64(p.number))
}

func link(href string) map[string]any { return map[string]any{"href": href} }

// pullJSON renders pull-request (full) or pull-request-simple.
func (c *call) pullJSON(p *pullState, full bool) map[string]any {
	r := p.repo
	api := c.base + "/repos/" + r.fullName()
	self := c.pullURL(p)
	num := itoa(int64(p.number))
	htmlURL := c.html(r.fullName() + "/pull/" + num)
	issue := api + "/issues/" + num
	var body any
	if p.body != "" {
		body = p.body
	}
	ownerJSON := c.userJSON(r.owner)
	repoJSON := c.repoJSON(r, false)
	v := map[string]any{
		"url":                 self,
		"id":                  p.id,
		"node_id":             p.nodeID,
		"html_url":            htmlURL,
		"diff_url":            htmlURL + ".diff",
		"patch_url":           htmlURL + ".patch",
		"issue_url":           issue,
		"commits_url":         self + "/commits",
		"review_comments_url": self + "/comments",
		"review_comment_url":  api + "/pulls/comments{/number}",
		"comments_url":        issue + "/comments",
		"statuses_url":        api + "/statuses/" + p.headSHA,
		"number":              p.number,
		"state":               p.state,
		"locked":              false,
		"title":               p.title,
		"user":                c.userJSON(p.author),
		"body":                body,
		"labels":              []any{},
		"milestone":           nil,
		"active_lock_reason":  nil,
		"created_at":          ts(p.created),
		"updated_at":          ts(p.updated),
		"closed_at":           tsOrNil(p.closedAt),
		"merged_at":           nil,
		"merge_commit_sha":    nil,
		"assignee":            nil,
		"assignees":           []any{},
		"requested_reviewers": []any{},
		"requested_teams":     []any{},
		"head": map[string]any{
			"label": r.owner.login + ":" + p.headRef, "ref": p.headRef, "sha": p.headSHA,
			"user": ownerJSON, "repo": repoJSON,
		},
		"base": map[string]any{
			"label": r.owner.login + ":" + p.baseRef, "ref": p.baseRef, "sha": p.baseSHA,
			"user": ownerJSON, "repo": repoJSON,
		},
		"_links": map[string]any{
			"self":            link(self),
			"html":            link(htmlURL),
			"issue":           link(issue),
			"comments":        link(issue + "/comments"),
			"review_comments": link(self + "/comments"),
			"review_comment":  link(api + "/pulls/comments{/number}"),
			"commits":         link(self + "/commits"),
			"statuses":        link(api + "/statuses/" + p.headSHA),
		},
		"author_association": c.s.association(p.author, r),
		"auto_merge":         nil,
		"draft":              p.draft,
	}
	if full {
		c.addPullStats(p, v)
	}
	return v
}

// addPullStats adds what only the full pull-request object has: counts
// and mergeability, computed from the bare repository. A git failure is
// reported and leaves mergeable null ("still computing").
func (c *call) addPullStats(p *pullState, v map[string]any) {
	v["merged"] = false
	v["merged_by"] = nil
	v["maintainer_can_modify"] = p.maintainerCanModify
	v["comments"] = len(p.issueComments)
	v["review_comments"] = len(c.visibleComments(p))
	v["mergeable"] = nil
	v["rebaseable"] = nil
	v["mergeable_state"] = "unknown"
	v["commits"], v["additions"], v["deletions"], v["changed_files"] = 0, 0, 0, 0
	files, err := c.s.files(c.ctx, p, "")
	if err != nil {
		c.s.problem("pull request %s#%d: %v", p.repo.fullName(), p.number, err)
		return
	}
	adds, dels := 0, 0
	for _, f := range files {
		adds += f.adds
		dels += f.dels
	}
	v["additions"], v["deletions"], v["changed_files"] = adds, dels, len(files)
	mb, err := p.repo.git.mergeBase(c.ctx, p.baseSHA, p.headSHA)
	if err == nil {
		var commits []commitInfo
		if commits, err = p.repo.git.commits(c.ctx, mb, p.headSHA, 10000); err == nil {
			v["commits"] = len(commits)
		}
	}
	if err != nil {
		c.s.problem("pull request %s#%d: %v", p.repo.fullName(), p.number, err)
		return
	}
	clean, err := p.repo.git.mergesCleanly(c.ctx, p.baseSHA, p.headSHA)
	if err != nil {
		c.s.problem("pull request %s#%d: %v", p.repo.fullName(), p.number, err)
		return
	}
	v["mergeable"], v["rebaseable"] = clean, clean
	state := "clean"
	latest := latestStatuses(p.repo, p.headSHA)
	switch {
	case p.draft:
		state = "draft"
	case !clean:
		state = "dirty"
	case len(latest) > 0 && combinedState(latest) != "success":
		state = "unstable"
	}
	v["mergeable_state"] = state
}

func (c *call) fileJSON(p *pullState, f *fileDiff) map[string]any {
	api := c.base + "/repos/" + p.repo.fullName()
	ref := p.headSHA
	v := map[string]any{
		"sha":          f.sha,
		"filename":     f.path,
		"status":       f.status,
		"additions":    f.adds,
		"deletions":    f.dels,
		"changes":      f.adds + f.dels,
		"blob_url":     c.html(p.repo.fullName() + "/blob/" + ref + "/" + f.path),
		"raw_url":      c.html(p.repo.fullName() + "/raw/" + ref + "/" + f.path),
		"contents_url": api + "/contents/" + f.path + "?ref=" + ref,
	}
	if patch := f.patch(); patch != "" {
		v["patch"] = patch
	}
	if f.previous != "" {
		v["previous_filename"] = f.previous
	}
	return v
}

func (c *call) commitJSON(ci commitInfo) map[string]any {
	api := c.base + "/repos/" + c.repo.fullName()
	parents := []any{}
	for _, p := range ci.parents {
		parents = append(parents, map[string]any{"sha": p, "url": api + "/commits/" + p, "html_url": c.html(c.repo.fullName() + "/commit/" + p)})
	}
	return map[string]any{
		"sha":          ci.sha,
		"node_id":      "C_kwDO" + ci.sha,
		"url":          api + "/commits/" + ci.sha,
		"html_url":     c.html(c.repo.fullName() + "/commit/" + ci.sha),
		"comments_url": api + "/commits/" + ci.sha + "/comments",
		"commit": map[string]any{
			"url":           api + "/git/commits/" + ci.sha,
			"author":        map[string]any{"name": ci.authorName, "email": ci.authorEmail, "date": ts(ci.authorDate)},
			"committer":     map[string]any{"name": ci.committerName, "email": ci.commitEmail, "date": ts(ci.committerDate)},
			"message":       ci.message,
			"comment_count": 0,
			"tree":          map[string]any{"sha": ci.tree, "url": api + "/git/trees/" + ci.tree},
			"verification":  map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil},
		},
		"author":    nil,
		"committer": nil,
		"parents":   parents,
	}
}

func (c *call) reviewJSON(r *reviewState) map[string]any {
	p := r.pull
	htmlURL := c.html(p.repo.fullName() + "/pull/" + itoa(int64(p.number)) + "#pullrequestreview-" + itoa(r.id))
	v := map[string]any{
		"id":                 r.id,
		"node_id":            r.nodeID,
		"user":               c.userJSON(r.author),
		"body":               r.body,
		"state":              r.state,
		"html_url":           htmlURL,
		"pull_request_url":   c.pullURL(p),
		"author_association": c.s.association(r.author, p.repo),
		"_links": map[string]any{
			"html":         link(htmlURL),
			"pull_request": link(c.pullURL(p)),
		},
		"commit_id": r.commitID,
	}
	if r.state != statePending {
		v["submitted_at"] = ts(r.submitted)
	}
	return v
}

// current is where a review comment sits on the pull request's head.
type current struct {
	outdated  bool
	line      int
	startLine int
	position  int
	commitID  string
}

// locate follows a comment from its commit to the pull request's head: a
// change to the commented lines, or to their file's place in the diff,
// makes it outdated.
func (s *Server) locate(c *call, cm *commentState) (current, error) {
	p := cm.pull
	cur := current{line: cm.line, startLine: cm.startLine, position: cm.position, commitID: p.headSHA}
	if cm.subjectType == "file" {
		files, err := s.files(c.ctx, p, "")
		if err != nil {
			return cur, err
		}
		if fileByPath(files, cm.path) == nil {
			cur.outdated, cur.commitID = true, cm.commitID
		}
		return cur, nil
	}
	if cm.commitID == p.headSHA {
		return cur, nil
	}
	if cm.side == "RIGHT" {
		first := cm.line
		if cm.startLine != 0 && cm.startSide == "RIGHT" {
			first = cm.startLine
		}
		hunks, err := p.repo.git.fileHunks(c.ctx, cm.commitID, p.headSHA, cm.path)
		if err != nil {
			return cur, err
		}
		line, ok := mapLine(hunks, first, cm.line, cm.line)
		if !ok {
			cur.outdated, cur.commitID = true, cm.commitID
			return cur, nil
		}
		cur.line = line
		if cm.startLine != 0 {
			cur.startLine = cm.startLine + line - cm.line
		}
	}
	files, err := s.files(c.ctx, p, "")
	if err != nil {
		return cur, err
	}
	f := fileByPath(files, cm.path)
	var h *hunk
	var idx int
	found := false
	if f != nil {
		h, idx, found = f.findLine(cm.side, cur.line)
	}
	if !found {
		cur.outdated, cur.commitID = true, cm.commitID
		return cur, nil
	}
	cur.position = h.lines[idx].pos
	return cur, nil
}

// commentJSON renders pull-request-review-comment, or the legacy
// review-comment of reviews/{id}/comments. An outdated comment has no
// line or position: the keys are left out (GitHub sends null, which the
// description does not allow).
func (c *call) commentJSON(cm *commentState, legacy bool) (map[string]any, error) {
	p := cm.pull
	cur, err := c.s.locate(c, cm)
	if err != nil {
		return nil, err
	}
	self := c.base + "/repos/" + p.repo.fullName() + "/pulls/comments/" + itoa(cm.id)
	htmlURL := c.html(p.repo.fullName() + "/pull/" + itoa(int64(p.number)) + "#discussion_r" + itoa(cm.id))
	v := map[string]any{
		"url":                    self,
		"id":                     cm.id,
		"node_id":                cm.nodeID,
		"pull_request_review_id": cm.review.id,
		"diff_hunk":              cm.diffHunk,
		"path":                   cm.path,
		"commit_id":              cur.commitID,
		"original_commit_id":     cm.commitID,
		"user":                   c.userJSON(cm.author),
		"body":                   cm.body,
		"created_at":             ts(cm.created),
		"updated_at":             ts(cm.updated),
		"html_url":               htmlURL,
		"pull_request_url":       c.pullURL(p),
		"author_association":     c.s.association(cm.author, p.repo),
		"_links": map[string]any{
			"self":         link(self),
			"html":         link(htmlURL),
			"pull_request": link(c.pullURL(p)),
		},
		"subject_type":        cm.subjectType,
		"start_line":          nil,
		"original_start_line": nil,
		"start_side":          nil,
	}
	if cm.inReplyTo != nil {
		v["in_reply_to_id"] = cm.inReplyTo.id
	}
	if cm.subjectType == "file" {
		if legacy {
			v["position"], v["original_position"] = nil, 1
		}
		return v, nil
	}
	v["original_line"] = cm.line
	v["original_position"] = cm.position
	v["side"] = cm.side
	if cm.startLine != 0 {
		v["original_start_line"] = cm.startLine
		v["start_side"] = cm.startSide
	}
	switch {
	case !cur.outdated:
		v["line"] = cur.line
		v["position"] = cur.position
		if cm.startLine != 0 {
			v["start_line"] = cur.startLine
		}
	case legacy:
		v["position"] = nil
	}
	return v, nil
}

func (c *call) issueCommentJSON(ic *issueCommentState) map[string]any {
	p := ic.pull
	api := c.base + "/repos/" + p.repo.fullName()
	return map[string]any{
		"id":                 ic.id,
		"node_id":            ic.nodeID,
		"url":                api + "/issues/comments/" + itoa(ic.id),
		"html_url":           c.html(p.repo.fullName() + "/pull/" + itoa(int64(p.number)) + "#issuecomment-" + itoa(ic.id)),
		"issue_url":          api + "/issues/" + itoa(int64(p.number)),
		"body":               ic.body,
		"user":               c.userJSON(ic.author),
		"created_at":         ts(ic.created),
		"updated_at":         ts(ic.updated),
		"author_association": c.s.association(ic.author, p.repo),
	}
}

func (c *call) statusJSON(st *statusState) map[string]any {
	var desc, target any
	if st.description != nil {
		desc = *st.description
	}
	if st.targetURL != nil {
		target = *st.targetURL
	}
	return map[string]any{
		"url":         c.base + "/repos/" + c.repo.fullName() + "/statuses/" + st.sha,
		"avatar_url":  c.s.url + "/avatars/u/" + itoa(st.creator.id),
		"id":          st.id,
		"node_id":     st.nodeID,
		"state":       st.state,
		"description": desc,
		"target_url":  target,
		"context":     st.context,
		"created_at":  ts(st.created),
		"updated_at":  ts(st.created),
		"creator":     c.userJSON(st.creator),
	}
}
