package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	gh "github.com/google/go-github/v60/github"
)

// Thread is a review thread of a pull request (GraphQL's
// PullRequestReviewThread) with its comments, first comment first.
type Thread struct {
	ID       string `json:"id"` // PRRT_...: what Resolve takes
	Resolved bool   `json:"resolved"`
	Outdated bool   `json:"outdated,omitempty"`
	// ViewerCanResolve is false for an identity that may not resolve it
	// (Actions' GITHUB_TOKEN): Resolve would return ErrCannotResolve.
	ViewerCanResolve bool            `json:"viewer_can_resolve,omitempty"`
	Path             string          `json:"path"`
	Line             int             `json:"line"` // 0 when outdated or a file comment
	Comments         []ThreadComment `json:"comments"`
}

// ThreadComment is a comment in a thread; ID is its REST id.
type ThreadComment struct {
	ID     int64  `json:"id"`
	Author string `json:"author,omitempty"` // login; "" for a deleted account
	Body   string `json:"body"`
}

// Spawn reports whether spawn posted the comment (it carries a marker).
func (tc ThreadComment) Spawn() bool { return HasMarker(tc.Body) }

// Root is the thread's first comment (zero for a thread without comments).
func (t Thread) Root() ThreadComment {
	if len(t.Comments) == 0 {
		return ThreadComment{}
	}
	return t.Comments[0]
}

// Author is the login of whoever opened the thread.
func (t Thread) Author() string { return t.Root().Author }

// Spawn reports whether spawn opened the thread.
func (t Thread) Spawn() bool { return t.Root().Spawn() }

// Has reports whether the comment with REST id commentID is in the thread.
func (t Thread) Has(commentID int64) bool {
	for _, c := range t.Comments {
		if c.ID == commentID {
			return true
		}
	}
	return false
}

// ThreadOf returns the thread holding the REST review comment commentID.
func ThreadOf(threads []Thread, commentID int64) (Thread, bool) {
	for _, t := range threads {
		if t.Has(commentID) {
			return t, true
		}
	}
	return Thread{}, false
}

const threadFields = `id isResolved isOutdated viewerCanResolve path line
comments(first:100){pageInfo{hasNextPage endCursor} nodes{databaseId fullDatabaseId author{login} body}}`

const threadsQuery = `query($owner:String!,$name:String!,$number:Int!,$after:String){
repository(owner:$owner,name:$name){pullRequest(number:$number){
reviewThreads(first:100,after:$after){pageInfo{hasNextPage endCursor} nodes{` + threadFields + `}}}}}`

const threadCommentsQuery = `query($id:ID!,$after:String){node(id:$id){... on PullRequestReviewThread{
comments(first:100,after:$after){pageInfo{hasNextPage endCursor} nodes{databaseId fullDatabaseId author{login} body}}}}}`

type pageInfo struct {
	HasNextPage bool   `json:"hasNextPage"`
	EndCursor   string `json:"endCursor"`
}

type commentConn struct {
	PageInfo pageInfo `json:"pageInfo"`
	Nodes    []struct {
		DatabaseID     *int64 `json:"databaseId"`
		FullDatabaseID string `json:"fullDatabaseId"`
		Author         *struct {
			Login string `json:"login"`
		} `json:"author"`
		Body string `json:"body"`
	} `json:"nodes"`
}

func (cc commentConn) comments() []ThreadComment {
	out := make([]ThreadComment, 0, len(cc.Nodes))
	for _, n := range cc.Nodes {
		var tc ThreadComment
		if id, err := strconv.ParseInt(n.FullDatabaseID, 10, 64); err == nil {
			tc.ID = id
		} else if n.DatabaseID != nil {
			tc.ID = *n.DatabaseID
		}
		if n.Author != nil {
			tc.Author = n.Author.Login
		}
		tc.Body = n.Body
		out = append(out, tc)
	}
	return out
}

// Threads returns every review thread of pull request number, reading
// every page of reviewThreads and of each thread's comments.
func (c *Client) Threads(ctx context.Context, number int) ([]Thread, error) {
	what := op("read the review threads of #%d", number)
	var out []Thread
	var after any
	for {
		var data struct {
			Repository *struct {
				PullRequest *struct {
					ReviewThreads struct {
						PageInfo pageInfo `json:"pageInfo"`
						Nodes    []struct {
							ID               string      `json:"id"`
							IsResolved       bool        `json:"isResolved"`
							IsOutdated       bool        `json:"isOutdated"`
							ViewerCanResolve bool        `json:"viewerCanResolve"`
							Path             string      `json:"path"`
							Line             *int        `json:"line"`
							Comments         commentConn `json:"comments"`
						} `json:"nodes"`
					} `json:"reviewThreads"`
				} `json:"pullRequest"`
			} `json:"repository"`
		}
		vars := map[string]any{"owner": c.owner, "name": c.repo, "number": number, "after": after}
		if err := c.graphQL(ctx, what, false, threadsQuery, vars, &data); err != nil {
			return nil, err
		}
		if data.Repository == nil || data.Repository.PullRequest == nil {
			return nil, &APIError{Op: what, Status: http.StatusNotFound, Message: "no such pull request"}
		}
		conn := data.Repository.PullRequest.ReviewThreads
		for _, n := range conn.Nodes {
			t := Thread{ID: n.ID, Resolved: n.IsResolved, Outdated: n.IsOutdated, ViewerCanResolve: n.ViewerCanResolve,
				Path: n.Path, Comments: n.Comments.comments()}
			if n.Line != nil {
				t.Line = *n.Line
			}
			for cursor := n.Comments.PageInfo; cursor.HasNextPage; {
				more, next, err := c.threadComments(ctx, what, n.ID, cursor.EndCursor)
				if err != nil {
					return nil, err
				}
				t.Comments = append(t.Comments, more...)
				cursor = next
			}
			out = append(out, t)
		}
		if !conn.PageInfo.HasNextPage {
			return out, nil
		}
		after = conn.PageInfo.EndCursor
	}
}

func (c *Client) threadComments(ctx context.Context, what, threadID, after string) ([]ThreadComment, pageInfo, error) {
	var data struct {
		Node *struct {
			Comments commentConn `json:"comments"`
		} `json:"node"`
	}
	if err := c.graphQL(ctx, what, false, threadCommentsQuery, map[string]any{"id": threadID, "after": after}, &data); err != nil {
		return nil, pageInfo{}, err
	}
	if data.Node == nil {
		return nil, pageInfo{}, &APIError{Op: what, Message: "thread " + threadID + " vanished"}
	}
	return data.Node.Comments.comments(), data.Node.Comments.PageInfo, nil
}

// OpenThreads returns the unresolved threads of pull request number that
// spawn did not open, for `spawn pr` to weigh (see Permission).
func (c *Client) OpenThreads(ctx context.Context, number int) ([]Thread, error) {
	all, err := c.Threads(ctx, number)
	if err != nil {
		return nil, err
	}
	var out []Thread
	for _, t := range all {
		if !t.Resolved && !t.Spawn() {
			out = append(out, t)
		}
	}
	return out, nil
}

// Resolve resolves review thread threadID (GraphQL resolveReviewThread);
// resolving a resolved thread is a no-op. When the identity may not
// resolve threads it returns an error wrapping ErrCannotResolve, which is
// not a failure: the caller notes it and carries on.
func (c *Client) Resolve(ctx context.Context, threadID string) error {
	const q = `mutation($id:ID!){resolveReviewThread(input:{threadId:$id}){thread{id isResolved}}}`
	var out struct {
		Resolve *struct {
			Thread *struct {
				IsResolved bool `json:"isResolved"`
			} `json:"thread"`
		} `json:"resolveReviewThread"`
	}
	what := op("resolve review thread %s", threadID)
	err := c.graphQL(ctx, what, true, q, map[string]any{"id": threadID}, &out)
	var ges graphQLErrors
	if errors.As(err, &ges) && ges.hasType("FORBIDDEN") {
		return fmt.Errorf("%s: %w (%s)", what, ErrCannotResolve, c.redact(ges.Error()))
	}
	if err != nil {
		return err
	}
	if out.Resolve == nil || out.Resolve.Thread == nil || !out.Resolve.Thread.IsResolved {
		return &APIError{Op: what, Message: "the thread is still unresolved"}
	}
	return nil
}

// Permission is a person's role on the repository.
type Permission string

// The roles, from most to least.
const (
	PermissionAdmin    Permission = "admin"
	PermissionMaintain Permission = "maintain"
	PermissionWrite    Permission = "write"
	PermissionTriage   Permission = "triage"
	PermissionRead     Permission = "read"
	PermissionNone     Permission = "none"
)

// Trusted reports whether the role may direct changes: write, maintain or
// admin.
func (p Permission) Trusted() bool {
	return p == PermissionAdmin || p == PermissionMaintain || p == PermissionWrite
}

// Permission returns login's role on the repository (GET
// /repos/{owner}/{repo}/collaborators/{login}/permission): the precise
// role_name when it is one of the built-in roles, else the coarse
// permission; PermissionNone for someone who is not a collaborator.
func (c *Client) Permission(ctx context.Context, login string) (Permission, error) {
	what := op("read the permission of %s", login)
	req, err := c.gh.NewRequest("GET", fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", c.owner, c.repo, login), nil)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	var out struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	err = c.rest(ctx, what, func() (*gh.Response, error) { return c.gh.Do(ctx, req, &out) })
	if statusOf(err) == http.StatusNotFound {
		return PermissionNone, nil
	}
	if err != nil {
		return "", err
	}
	switch p := Permission(out.RoleName); p {
	case PermissionAdmin, PermissionMaintain, PermissionWrite, PermissionTriage, PermissionRead:
		return p, nil
	}
	switch p := Permission(out.Permission); p {
	case PermissionAdmin, PermissionWrite, PermissionRead, PermissionNone:
		return p, nil
	}
	return PermissionNone, nil
}
