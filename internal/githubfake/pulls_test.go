package githubfake_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

func TestDraftPullRequestFromAPushedBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	alice := f.client(t, aliceToken)

	// # the repository exists, seeded from the local clone
	repo, _, err := alice.Repositories.Get(f.ctx, owner, repoName)
	require.NoError(t, err)
	assert.Equal(t, "main", repo.GetDefaultBranch())
	assert.True(t, repo.GetPrivate())
	assert.True(t, repo.GetPermissions()["push"])

	// # push a branch with the real git CLI, open a draft pull request
	head := f.featureBranch(t)
	pr, resp, err := alice.PullRequests.Create(f.ctx, owner, repoName, &github.NewPullRequest{
		Title: github.String("Change app"), Head: github.String("feature"), Base: github.String("main"),
		Body: github.String("Body"), Draft: github.Bool(true),
	})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, pr.GetURL(), resp.Header.Get("Location"))
	assert.Equal(t, 1, pr.GetNumber())
	assert.True(t, pr.GetDraft())
	assert.Equal(t, "open", pr.GetState())
	assert.Equal(t, head, pr.GetHead().GetSHA())
	assert.Equal(t, "acme:feature", pr.GetHead().GetLabel())
	assert.Equal(t, "alice", pr.GetUser().GetLogin())
	assert.True(t, strings.HasPrefix(pr.GetNodeID(), "PR_"), pr.GetNodeID())
	assert.Equal(t, 2, pr.GetChangedFiles())
	assert.Equal(t, 1, pr.GetCommits())
	assert.Equal(t, "draft", pr.GetMergeableState())

	// # a second pull request for the same head is GitHub's 422
	_, _, err = alice.PullRequests.Create(f.ctx, owner, repoName, &github.NewPullRequest{
		Title: github.String("Again"), Head: github.String("acme:feature"), Base: github.String("main"),
	})
	er := apiError(t, err, http.StatusUnprocessableEntity)
	assert.Equal(t, "Validation Failed", er.Message)
	require.Len(t, er.Errors, 1)
	assert.Equal(t, "A pull request already exists for acme:feature.", er.Errors[0].Message)
	assert.Equal(t, "custom", er.Errors[0].Code)

	// # a missing head branch, and no commits between the branches
	_, _, err = alice.PullRequests.Create(f.ctx, owner, repoName, &github.NewPullRequest{
		Title: github.String("x"), Head: github.String("nope"), Base: github.String("main"),
	})
	er = apiError(t, err, http.StatusUnprocessableEntity)
	assert.Equal(t, []github.Error{{Resource: "PullRequest", Field: "head", Code: "invalid"}}, er.Errors)
	git(t, f.local, "branch", "same", "main")
	f.push(t, "same")
	_, _, err = alice.PullRequests.Create(f.ctx, owner, repoName, &github.NewPullRequest{
		Title: github.String("x"), Head: github.String("same"), Base: github.String("main"),
	})
	er = apiError(t, err, http.StatusUnprocessableEntity)
	assert.Equal(t, "No commits between main and same", er.Errors[0].Message)

	// # the list filters by head as owner:branch; a bare branch is ignored
	list, _, err := alice.PullRequests.List(f.ctx, owner, repoName, &github.PullRequestListOptions{Head: "acme:feature"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	list, _, err = alice.PullRequests.List(f.ctx, owner, repoName, &github.PullRequestListOptions{Head: "acme:other"})
	require.NoError(t, err)
	assert.Empty(t, list)
	list, _, err = alice.PullRequests.List(f.ctx, owner, repoName, &github.PullRequestListOptions{Head: "other"})
	require.NoError(t, err)
	assert.Len(t, list, 1)

	// # files and the diff come from the commits in the bare repository
	files, _, err := alice.PullRequests.ListFiles(f.ctx, owner, repoName, 1, nil)
	require.NoError(t, err)
	require.Len(t, files, 2)
	assert.Equal(t, "app.txt", files[0].GetFilename())
	assert.Equal(t, "modified", files[0].GetStatus())
	assert.Equal(t, 2, files[0].GetAdditions())
	assert.Equal(t, 2, files[0].GetDeletions())
	assert.True(t, strings.HasPrefix(files[0].GetPatch(), "@@ -2,7 +2,7 @@"), files[0].GetPatch())
	assert.Contains(t, files[0].GetPatch(), "\n@@ -27,7 +27,7 @@")
	assert.False(t, strings.HasSuffix(files[0].GetPatch(), "\n"))
	assert.Equal(t, "new.txt", files[1].GetFilename())
	assert.Equal(t, "added", files[1].GetStatus())
	diff, _, err := alice.PullRequests.GetRaw(f.ctx, owner, repoName, 1, github.RawOptions{Type: github.Diff})
	require.NoError(t, err)
	assert.Contains(t, diff, "diff --git a/app.txt b/app.txt")
	assert.Contains(t, diff, "+changed 30")

	// # a later push moves the head; PATCH edits title and body
	testenv.WriteFile(t, f.local, "new.txt", "one\ntwo\nthree\nfour\n")
	git(t, f.local, "commit", "--quiet", "-am", "four")
	f.push(t, "feature")
	newHead := git(t, f.local, "rev-parse", "HEAD")
	pr, _, err = alice.PullRequests.Edit(f.ctx, owner, repoName, 1, &github.PullRequest{Title: github.String("Renamed")})
	require.NoError(t, err)
	assert.Equal(t, "Renamed", pr.GetTitle())
	assert.Equal(t, newHead, pr.GetHead().GetSHA())
	assert.Equal(t, 2, pr.GetCommits())
	got, ok := f.srv.PullRequest(owner, repoName, 1)
	require.True(t, ok)
	assert.Equal(t, newHead, got.HeadSHA)
	assert.True(t, got.Draft)

	// # a reader cannot open a pull request
	_, _, err = f.client(t, carolToken).PullRequests.Create(f.ctx, owner, repoName, &github.NewPullRequest{
		Title: github.String("x"), Head: github.String("feature"), Base: github.String("main"),
	})
	er = apiError(t, err, http.StatusForbidden)
	assert.Equal(t, "Resource not accessible by personal access token", er.Message)
}

func TestActionsTokenNeedsTheRepositorySettingToOpenPullRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.featureBranch(t)
	bot := f.client(t, botToken)
	_, _, err := bot.PullRequests.Create(f.ctx, owner, repoName, &github.NewPullRequest{
		Title: github.String("x"), Head: github.String("feature"), Base: github.String("main"),
	})
	er := apiError(t, err, http.StatusForbidden)
	assert.Equal(t, "GitHub Actions is not permitted to create or approve pull requests.", er.Message)

	g := newFixture(t, allowActions())
	g.featureBranch(t)
	pr, _, err := g.client(t, botToken).PullRequests.Create(g.ctx, owner, repoName, &github.NewPullRequest{
		Title: github.String("x"), Head: github.String("feature"), Base: github.String("main"),
	})
	require.NoError(t, err)
	assert.Equal(t, "Bot", pr.GetUser().GetType())
	assert.Equal(t, "NONE", pr.GetAuthorAssociation())
}

func TestUnknownRepositoriesPullsAndTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	alice := f.client(t, aliceToken)

	_, _, err := alice.Repositories.Get(f.ctx, owner, "missing")
	er := apiError(t, err, http.StatusNotFound)
	assert.Equal(t, "Not Found", er.Message)
	assert.Equal(t, "https://docs.github.com/rest/repos/repos#get-a-repository", er.DocumentationURL)

	_, _, err = alice.PullRequests.Get(f.ctx, owner, repoName, 42)
	apiError(t, err, http.StatusNotFound)

	// Owner and name are matched case-insensitively.
	_, _, err = alice.Repositories.Get(f.ctx, "ACME", "App")
	require.NoError(t, err)

	_, _, err = f.client(t, "revoked").Repositories.Get(f.ctx, owner, repoName)
	er = apiError(t, err, http.StatusUnauthorized)
	assert.Equal(t, "Bad credentials", er.Message)

	// A private repository is invisible to anonymous requests and to
	// users without a role.
	r := f.do(t, "", http.MethodGet, "/repos/acme/app", nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	require.NoError(t, f.srv.AddUser("dave", "dave-token", "none"))
	_, _, err = f.client(t, "dave-token").Repositories.Get(f.ctx, owner, repoName)
	apiError(t, err, http.StatusNotFound)
}
