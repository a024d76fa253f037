package githubfake_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

func TestCommitStatusesGateTheHead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.featureBranch(t)
	f.openPR(t)
	bot := f.client(t, botToken)

	status, resp, err := bot.Repositories.CreateStatus(f.ctx, owner, repoName, head, &github.RepoStatus{
		State: github.String("pending"), Context: github.String("spawn/review"), Description: github.String("round 1"),
	})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "pending", status.GetState())
	combined, _, err := bot.Repositories.GetCombinedStatus(f.ctx, owner, repoName, head, nil)
	require.NoError(t, err)
	assert.Equal(t, "pending", combined.GetState())

	_, _, err = bot.Repositories.CreateStatus(f.ctx, owner, repoName, head, &github.RepoStatus{
		State: github.String("success"), Context: github.String("spawn/review"), TargetURL: github.String("https://example.com/run"),
	})
	require.NoError(t, err)
	_, _, err = bot.Repositories.CreateStatus(f.ctx, owner, repoName, head, &github.RepoStatus{State: github.String("success")})
	require.NoError(t, err)
	// The branch name resolves like the sha; the latest status per context wins.
	combined, _, err = bot.Repositories.GetCombinedStatus(f.ctx, owner, repoName, "feature", nil)
	require.NoError(t, err)
	assert.Equal(t, "success", combined.GetState())
	assert.Equal(t, head, combined.GetSHA())
	assert.Equal(t, 2, combined.GetTotalCount())
	list, _, err := bot.Repositories.ListStatuses(f.ctx, owner, repoName, "heads/feature", nil)
	require.NoError(t, err)
	require.Len(t, list, 3)
	assert.Equal(t, "default", list[0].GetContext(), "newest first")
	assert.Len(t, f.srv.Statuses(owner, repoName, head), 3)

	pr, _, err := bot.PullRequests.Get(f.ctx, owner, repoName, 1)
	require.NoError(t, err)
	assert.Equal(t, "draft", pr.GetMergeableState())
	assert.True(t, pr.GetMergeable())

	_, _, err = bot.Repositories.CreateStatus(f.ctx, owner, repoName, strings.Repeat("0", 40), &github.RepoStatus{State: github.String("success")})
	er := apiError(t, err, http.StatusUnprocessableEntity)
	assert.Equal(t, "No commit found for SHA: "+strings.Repeat("0", 40), er.Message)
	_, _, err = f.client(t, carolToken).Repositories.CreateStatus(f.ctx, owner, repoName, head, &github.RepoStatus{State: github.String("success")})
	apiError(t, err, http.StatusForbidden)
	_, _, err = bot.Repositories.GetCombinedStatus(f.ctx, owner, repoName, "no-such-branch", nil)
	apiError(t, err, http.StatusNotFound)
}

func TestCollaboratorPermissionLevels(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.NoError(t, f.srv.AddUser("tom", "tom-token", githubfake.PermissionTriage))
	require.NoError(t, f.srv.AddUser("nobody", "nobody-token", githubfake.PermissionNone))
	require.NoError(t, f.srv.SetPermission(owner, repoName, "carol", githubfake.PermissionAdmin))
	alice := f.client(t, aliceToken)
	cases := []struct{ login, permission, role string }{
		{"alice", "write", "write"},
		{"bob", "write", "maintain"},
		{"tom", "read", "triage"},
		{"carol", "admin", "admin"},
		{"acme", "", ""}, // an organisation is not a collaborator
		{"nobody", "", ""},
		{"ghost", "", ""},
	}
	for _, tc := range cases {
		level, _, err := alice.Repositories.GetPermissionLevel(f.ctx, owner, repoName, tc.login)
		if tc.permission == "" {
			apiError(t, err, http.StatusNotFound)
			continue
		}
		require.NoError(t, err, tc.login)
		assert.Equal(t, tc.permission, level.GetPermission(), tc.login)
		assert.Equal(t, tc.login, level.GetUser().GetLogin())
		// go-github v60 does not decode role_name: read it raw.
		r := f.do(t, aliceToken, http.MethodGet, "/repos/acme/app/collaborators/"+tc.login+"/permission", nil)
		assert.Equal(t, tc.role, r.json(t)["role_name"], tc.login)
	}

	// A public repository: anyone reads, anonymous included.
	require.NoError(t, f.srv.AddRepo(owner, "open", "trunk", githubfake.Public()))
	r := f.do(t, "", http.MethodGet, "/repos/acme/open", nil)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "60", r.header.Get("X-RateLimit-Limit"))
	assert.Equal(t, "trunk", r.json(t)["default_branch"])
	level, _, err := f.client(t, "nobody-token").Repositories.GetPermissionLevel(f.ctx, owner, "open", "nobody")
	require.NoError(t, err)
	assert.Equal(t, "read", level.GetPermission())
}

func TestListsPaginateWithLinkHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	git(t, f.local, "checkout", "--quiet", "-b", "feature")
	for i := 1; i <= 5; i++ {
		testenv.WriteFile(t, f.local, fmt.Sprintf("f%d.txt", i), "x\n")
	}
	git(t, f.local, "add", ".")
	git(t, f.local, "commit", "--quiet", "-m", "five files")
	f.push(t, "feature")
	f.openPR(t)
	alice := f.client(t, aliceToken)

	files, resp, err := alice.PullRequests.ListFiles(f.ctx, owner, repoName, 1, &github.ListOptions{PerPage: 2})
	require.NoError(t, err)
	assert.Len(t, files, 2)
	assert.Equal(t, 2, resp.NextPage)
	assert.Equal(t, 3, resp.LastPage)
	assert.Equal(t, 0, resp.PrevPage)
	link := resp.Header.Get("Link")
	assert.Contains(t, link, f.srv.URL()+"/repos/acme/app/pulls/1/files?page=2&per_page=2>; rel=\"next\"")

	var all []string
	opts := &github.ListOptions{PerPage: 2}
	for {
		page, resp, err := alice.PullRequests.ListFiles(f.ctx, owner, repoName, 1, opts)
		require.NoError(t, err)
		for _, file := range page {
			all = append(all, file.GetFilename())
		}
		if resp.NextPage == 0 {
			assert.Equal(t, 2, resp.PrevPage)
			assert.Equal(t, 1, resp.FirstPage)
			break
		}
		opts.Page = resp.NextPage
	}
	assert.Equal(t, []string{"f1.txt", "f2.txt", "f3.txt", "f4.txt", "f5.txt"}, all)

	_, resp, err = alice.PullRequests.ListFiles(f.ctx, owner, repoName, 1, nil)
	require.NoError(t, err)
	assert.Empty(t, resp.Header.Get("Link"), "no Link header when everything fits on one page")

	// per_page above 100 is clamped.
	r := f.do(t, aliceToken, http.MethodGet, "/repos/acme/app/pulls/1/files?per_page=500", nil)
	assert.Equal(t, http.StatusOK, r.status)
}

func TestRequestsThatBreakTheDescription(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.featureBranch(t)
	f.openPR(t)

	cases := []struct {
		name, method, path string
		body               any
		status             int
		message            string
	}{
		{"missing head", "POST", "/repos/acme/app/pulls", map[string]any{"base": "main", "title": "x"}, 422,
			"Invalid request.\n\n\"head\" wasn't supplied."},
		{"wrong type", "POST", "/repos/acme/app/pulls", map[string]any{"head": "feature", "base": "main", "draft": "yes"}, 422,
			"Invalid request.\n\nFor 'properties/draft', \"yes\" is not a boolean."},
		{"bad enum", "POST", "/repos/acme/app/pulls/1/reviews", map[string]any{"event": "LGTM"}, 422,
			"Invalid request.\n\nFor 'properties/event', \"LGTM\" is not one of [\"APPROVE\", \"REQUEST_CHANGES\", \"COMMENT\"]."},
		{"not JSON", "POST", "/repos/acme/app/issues/1/comments", "{body:", 400, "Problems parsing JSON"},
		{"not an object", "POST", "/repos/acme/app/issues/1/comments", "[1]", 400, "Body should be a JSON object"},
		{"non-numeric pull number", "GET", "/repos/acme/app/pulls/abc", nil, 404, "Not Found"},
	}
	for _, tc := range cases {
		r := f.do(t, aliceToken, tc.method, tc.path, tc.body)
		assert.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.body)
		assert.Equal(t, tc.message, r.json(t)["message"], tc.name)
	}
	assert.Len(t, f.srv.PullRequests(owner, repoName), 1, "refused requests change nothing")

	// An unsupported API version is a 400.
	req, err := http.NewRequest(http.MethodGet, f.srv.URL()+"/repos/acme/app", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("X-GitHub-Api-Version", "2020-01-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	// A conditional GET answers 304 without a body and without cost.
	r := f.do(t, aliceToken, http.MethodGet, "/repos/acme/app/pulls/1", nil)
	require.Equal(t, http.StatusOK, r.status)
	etag := r.header.Get("ETag")
	require.NotEmpty(t, etag)
	req, err = http.NewRequest(http.MethodGet, f.srv.URL()+"/repos/acme/app/pulls/1", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusNotModified, resp.StatusCode)
	assert.Equal(t, r.header.Get("X-RateLimit-Remaining"), resp.Header.Get("X-RateLimit-Remaining"))

	// The GitHub Enterprise layout answers too.
	r = f.do(t, aliceToken, http.MethodGet, "/api/v3/repos/acme/app/pulls/1", nil)
	assert.Equal(t, http.StatusOK, r.status)
	assert.True(t, strings.HasPrefix(r.json(t)["url"].(string), f.srv.URL()+"/api/v3/"))
}
