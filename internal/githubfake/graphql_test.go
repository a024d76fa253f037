package githubfake_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threadsQuery is the review-threads query spawn sends (GitHub's
// documented shape), paginated by a variable.
const threadsQuery = `
query ReviewThreads($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: $first, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated path line viewerCanResolve
          comments(first: 100) { nodes { databaseId fullDatabaseId author { login } body } }
        }
      }
    }
  }
}`

const resolveMutation = `mutation Resolve($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } } }`

// reviewWithThreeThreads has bob post one review with three inline
// comments and returns their REST ids.
func (f *fixture) reviewWithThreeThreads(t *testing.T) []int64 {
	t.Helper()
	f.featureBranch(t)
	f.openPR(t)
	bob := f.client(t, bobToken)
	review, _, err := bob.PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Event: github.String("COMMENT"), Body: github.String("round 1"),
		Comments: []*github.DraftReviewComment{
			{Path: github.String("app.txt"), Line: github.Int(5), Body: github.String("a")},
			{Path: github.String("app.txt"), Line: github.Int(30), Body: github.String("b")},
			{Path: github.String("new.txt"), Line: github.Int(3), Body: github.String("c")},
		},
	})
	require.NoError(t, err)
	comments, _, err := bob.PullRequests.ListReviewComments(f.ctx, owner, repoName, 1, review.GetID(), nil)
	require.NoError(t, err)
	var ids []int64
	for _, c := range comments {
		ids = append(ids, c.GetID())
	}
	return ids
}

func number(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "%v (%T) is not a number", v, v)
	i, err := n.Int64()
	require.NoError(t, err)
	return i
}

func TestReviewThreadsPaginateAndResolveByRESTCommentID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := f.reviewWithThreeThreads(t)
	_, _, err := f.client(t, aliceToken).PullRequests.CreateCommentInReplyTo(f.ctx, owner, repoName, 1, "Fixed in 1234567", ids[1])
	require.NoError(t, err)

	// # two pages of threads; each comment's databaseId is its REST id
	vars := map[string]any{"owner": owner, "name": repoName, "number": 1, "first": 2}
	status, page1 := f.graphql(t, aliceToken, threadsQuery, vars)
	require.Equal(t, http.StatusOK, status)
	require.Nil(t, page1["errors"], "%v", page1["errors"])
	conn := dig(t, page1, "data", "repository", "pullRequest", "reviewThreads")
	assert.Equal(t, true, dig(t, conn, "pageInfo", "hasNextPage"))
	nodes := dig(t, conn, "nodes").([]any)
	require.Len(t, nodes, 2)
	vars["after"] = dig(t, conn, "pageInfo", "endCursor")
	_, page2 := f.graphql(t, aliceToken, threadsQuery, vars)
	conn2 := dig(t, page2, "data", "repository", "pullRequest", "reviewThreads")
	assert.Equal(t, false, dig(t, conn2, "pageInfo", "hasNextPage"))
	nodes = append(nodes, dig(t, conn2, "nodes").([]any)...)
	require.Len(t, nodes, 3)

	threadOf := map[int64]string{}
	for i, n := range nodes {
		id := dig(t, n, "id").(string)
		assert.True(t, strings.HasPrefix(id, "PRRT_"), id)
		assert.Equal(t, false, dig(t, n, "isResolved"))
		assert.Equal(t, true, dig(t, n, "viewerCanResolve"), "the author of the pull request may resolve")
		first := dig(t, n, "comments", "nodes", 0)
		assert.Equal(t, ids[i], number(t, dig(t, first, "databaseId")))
		assert.Equal(t, itoa(ids[i]), dig(t, first, "fullDatabaseId"), "fullDatabaseId is a BigInt string")
		assert.Equal(t, "bob", dig(t, first, "author", "login"))
		threadOf[ids[i]] = id
	}
	replies := dig(t, nodes[1], "comments", "nodes").([]any)
	require.Len(t, replies, 2)
	assert.Equal(t, "Fixed in 1234567", dig(t, replies[1], "body"))

	// # resolve the thread of REST comment ids[1]
	_, res := f.graphql(t, aliceToken, resolveMutation, map[string]any{"id": threadOf[ids[1]]})
	require.Nil(t, res["errors"], "%v", res["errors"])
	assert.Equal(t, true, dig(t, res, "data", "resolveReviewThread", "thread", "isResolved"))
	threads := f.srv.Threads(owner, repoName, 1)
	assert.True(t, threads[1].Resolved)
	assert.Equal(t, "alice", threads[1].ResolvedBy)
	_, res = f.graphql(t, aliceToken, `mutation($id: ID!) { unresolveReviewThread(input: {threadId: $id, clientMutationId: "m1"}) { clientMutationId thread { isResolved viewerCanResolve } } }`,
		map[string]any{"id": threadOf[ids[1]]})
	assert.Equal(t, "m1", dig(t, res, "data", "unresolveReviewThread", "clientMutationId"))
	assert.Equal(t, false, dig(t, res, "data", "unresolveReviewThread", "thread", "isResolved"))
	assert.Equal(t, true, dig(t, res, "data", "unresolveReviewThread", "thread", "viewerCanResolve"))

	// # a reader sees viewerCanResolve false and is refused
	_, body := f.graphql(t, carolToken, threadsQuery, map[string]any{"owner": owner, "name": repoName, "number": 1, "first": 1})
	assert.Equal(t, false, dig(t, body, "data", "repository", "pullRequest", "reviewThreads", "nodes", 0, "viewerCanResolve"))
	status, res = f.graphql(t, carolToken, resolveMutation, map[string]any{"id": threadOf[ids[0]]})
	assert.Equal(t, http.StatusOK, status, "GraphQL errors come with HTTP 200")
	assert.Nil(t, dig(t, res, "data", "resolveReviewThread"))
	assert.Equal(t, "FORBIDDEN", dig(t, res, "errors", 0, "type"))
	assert.Equal(t, []any{"resolveReviewThread"}, dig(t, res, "errors", 0, "path"))
	assert.Equal(t, "carol does not have the correct permissions to execute `ResolveReviewThread`", dig(t, res, "errors", 0, "message"))

	// # the Actions token cannot resolve even with write access
	_, body = f.graphql(t, botToken, threadsQuery, map[string]any{"owner": owner, "name": repoName, "number": 1, "first": 1})
	assert.Equal(t, false, dig(t, body, "data", "repository", "pullRequest", "reviewThreads", "nodes", 0, "viewerCanResolve"))
	_, res = f.graphql(t, botToken, resolveMutation, map[string]any{"id": threadOf[ids[0]]})
	assert.Equal(t, "Resource not accessible by integration", dig(t, res, "errors", 0, "message"))
	assert.False(t, f.srv.Threads(owner, repoName, 1)[0].Resolved)

	// # an unknown thread id
	_, res = f.graphql(t, aliceToken, resolveMutation, map[string]any{"id": "PRRT_nope"})
	assert.Equal(t, "NOT_FOUND", dig(t, res, "errors", 0, "type"))
	assert.Equal(t, "Could not resolve to a node with the global id of 'PRRT_nope'", dig(t, res, "errors", 0, "message"))
}

func TestMarkPullRequestReadyForReview(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.featureBranch(t)
	pr := f.openPR(t)
	const ready = `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }`

	_, res := f.graphql(t, carolToken, ready, map[string]any{"id": pr.GetNodeID()})
	assert.Equal(t, "FORBIDDEN", dig(t, res, "errors", 0, "type"))
	got, _ := f.srv.PullRequest(owner, repoName, 1)
	assert.True(t, got.Draft)

	_, res = f.graphql(t, aliceToken, ready, map[string]any{"id": pr.GetNodeID()})
	require.Nil(t, res["errors"], "%v", res["errors"])
	assert.Equal(t, false, dig(t, res, "data", "markPullRequestReadyForReview", "pullRequest", "isDraft"))
	rest, _, err := f.client(t, aliceToken).PullRequests.Get(f.ctx, owner, repoName, 1)
	require.NoError(t, err)
	assert.False(t, rest.GetDraft())
	assert.Equal(t, "clean", rest.GetMergeableState())
}

func TestGraphQLRefusesWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.featureBranch(t)
	f.openPR(t)
	cases := []struct {
		name, query string
		vars        map[string]any
		message     string
		hasData     bool
	}{
		{"unknown field", `{ repository(owner: "acme", name: "app") { pullRequest(number: 1) { reviewDecisionX } } }`, nil,
			"Field 'reviewDecisionX' doesn't exist on type 'PullRequest'", false},
		{"unknown mutation", `mutation { addPullRequestReviewThreadReplyX(input: {}) { clientMutationId } }`, nil,
			"Field 'addPullRequestReviewThreadReplyX' doesn't exist on type 'Mutation'", false},
		{"missing argument", `{ repository(owner: "acme") { id } }`, nil,
			"Field 'repository' is missing required arguments: name", false},
		{"no selection", `{ repository(owner: "acme", name: "app") }`, nil,
			"Field must have selections (field 'repository' returns Repository but has no selections. Did you mean 'repository { ... }'?)", false},
		{"parse error", `{ viewer { login }`, nil, "Unexpected end of document", false},
		{"missing variable", `query($n: Int!) { repository(owner: "acme", name: "app") { pullRequest(number: $n) { id } } }`, map[string]any{},
			"Variable $n of type Int! was provided invalid value", false},
		{"no page size", `{ repository(owner: "acme", name: "app") { pullRequest(number: 1) { reviewThreads { totalCount } } } }`, nil,
			"You must provide a `first` or `last` value to properly paginate the `reviewThreads` connection.", true},
		{"page too large", `{ repository(owner: "acme", name: "app") { pullRequest(number: 1) { reviewThreads(first: 101) { totalCount } } } }`, nil,
			"Requesting 101 records on the `reviewThreads` connection exceeds the `first` limit of 100 records.", true},
		{"unknown pull request", `{ repository(owner: "acme", name: "app") { pullRequest(number: 9) { id } } }`, nil,
			"Could not resolve to a PullRequest with the number of 9.", true},
		{"unknown repository", `{ repository(owner: "acme", name: "nope") { id } }`, nil,
			"Could not resolve to a Repository with the name 'acme/nope'.", true},
	}
	for _, tc := range cases {
		status, res := f.graphql(t, aliceToken, tc.query, tc.vars)
		assert.Equal(t, http.StatusOK, status, tc.name)
		assert.Equal(t, tc.message, dig(t, res, "errors", 0, "message"), tc.name)
		_, hasData := res["data"]
		assert.Equal(t, tc.hasData, hasData, "%s: data present", tc.name)
	}

	// Fragments, aliases and __typename work; the viewer is the token's.
	_, res := f.graphql(t, bobToken, `
		query { me: viewer { ...who } repository(owner: "acme", name: "app") { viewerPermission pullRequest(number: 1) { author { __typename ... on User { login } } } } }
		fragment who on User { login __typename }`, nil)
	require.Nil(t, res["errors"], "%v", res["errors"])
	assert.Equal(t, "bob", dig(t, res, "data", "me", "login"))
	assert.Equal(t, "MAINTAIN", dig(t, res, "data", "repository", "viewerPermission"))
	assert.Equal(t, "alice", dig(t, res, "data", "repository", "pullRequest", "author", "login"))

	// A bad token is a 401; no token at all is refused too.
	status, _ := f.graphql(t, "revoked", `{ viewer { login } }`, nil)
	assert.Equal(t, http.StatusUnauthorized, status)
}
