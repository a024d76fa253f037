package githubfake_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
)

const reviewsPath = "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"

func TestA502AfterTheEffectLosesOnlyTheAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.featureBranch(t)
	f.openPR(t)
	bob := f.client(t, bobToken)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Method: "POST", Path: reviewsPath, AfterEffect: true}))

	_, resp, err := bob.PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Event: github.String("COMMENT"), Body: github.String("<!-- spawn:round-1 --> review"),
		Comments: []*github.DraftReviewComment{{Path: github.String("app.txt"), Line: github.Int(5), Body: github.String("x")}},
	})
	apiError(t, err, http.StatusBadGateway)
	assert.NotEmpty(t, resp.Header.Get("X-RateLimit-Remaining"), "a fault still carries the rate-limit headers")

	// The review exists: a client that retries blindly would post it twice.
	reviews, _, err := bob.PullRequests.ListReviews(f.ctx, owner, repoName, 1, nil)
	require.NoError(t, err)
	require.Len(t, reviews, 1)
	assert.Equal(t, "<!-- spawn:round-1 --> review", reviews[0].GetBody())
	assert.Len(t, f.srv.ReviewComments(owner, repoName, 1), 1)

	log := f.srv.Requests()
	var faulted []githubfake.Request
	for _, r := range log {
		if r.Fault != "" {
			faulted = append(faulted, r)
		}
	}
	require.Len(t, faulted, 1)
	assert.Equal(t, "pulls/create-review", faulted[0].Operation)
	assert.Equal(t, http.StatusBadGateway, faulted[0].Status)
	assert.Equal(t, http.StatusOK, faulted[0].EffectStatus)
	assert.Equal(t, "bob", faulted[0].Login)
}

func TestA5xxBeforeTheEffectChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.featureBranch(t)
	f.openPR(t)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Status: 503, Method: "POST", Path: "/repos/acme/app/issues/*/comments", Times: 2}))
	alice := f.client(t, aliceToken)
	for i := 0; i < 2; i++ {
		_, _, err := alice.Issues.CreateComment(f.ctx, owner, repoName, 1, &github.IssueComment{Body: github.String("hi")})
		apiError(t, err, http.StatusServiceUnavailable)
	}
	assert.Empty(t, f.srv.IssueComments(owner, repoName, 1))
	_, _, err := alice.Issues.CreateComment(f.ctx, owner, repoName, 1, &github.IssueComment{Body: github.String("hi")})
	require.NoError(t, err, "the fault was used up")
	assert.Len(t, f.srv.IssueComments(owner, repoName, 1), 1)
}

func TestSecondaryRateLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.featureBranch(t)
	f.openPR(t)

	// # 403 with retry-after: go-github sees an AbuseRateLimitError
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.SecondaryRateLimit, Method: "POST", Path: reviewsPath, RetryAfter: 1500 * time.Millisecond}))
	_, _, err := f.client(t, bobToken).PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Event: github.String("COMMENT"), Body: github.String("x"),
	})
	var abuse *github.AbuseRateLimitError
	require.ErrorAs(t, err, &abuse)
	assert.Equal(t, http.StatusForbidden, abuse.Response.StatusCode)
	require.NotNil(t, abuse.RetryAfter)
	assert.Equal(t, 2*time.Second, *abuse.RetryAfter, "retry-after is whole seconds, rounded up")
	assert.Contains(t, abuse.Message, "You have exceeded a secondary rate limit")
	assert.Empty(t, f.srv.Reviews(owner, repoName, 1), "a rate-limited request has no effect")

	// # 429 without retry-after, and the remaining quota is not zero
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.SecondaryRateLimit, Status: 429, Path: "/repos/{owner}/{repo}"}))
	r := f.do(t, aliceToken, http.MethodGet, "/repos/acme/app", nil)
	assert.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Empty(t, r.header.Get("Retry-After"))
	assert.NotEqual(t, "0", r.header.Get("X-RateLimit-Remaining"))
	body := r.json(t)
	assert.Equal(t, "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits", body["documentation_url"])
}

func TestPrimaryRateLimitAndBadCredentials(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	// # every response carries the rate-limit headers, and they count
	r := f.do(t, aliceToken, http.MethodGet, "/repos/acme/app", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "5000", r.header.Get("X-RateLimit-Limit"))
	assert.Equal(t, "4999", r.header.Get("X-RateLimit-Remaining"))
	assert.Equal(t, "1", r.header.Get("X-RateLimit-Used"))
	assert.Equal(t, "core", r.header.Get("X-RateLimit-Resource"))
	reset, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
	require.NoError(t, err)
	assert.Greater(t, reset, time.Now().Unix())
	assert.NotEmpty(t, r.header.Get("X-GitHub-Request-Id"))

	// # an injected exhaustion: 403, remaining 0, reset in the future
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.PrimaryRateLimit, Path: "/repos/{owner}/{repo}", ResetIn: time.Hour}))
	_, _, err = f.client(t, aliceToken).Repositories.Get(f.ctx, owner, repoName)
	var rle *github.RateLimitError
	require.ErrorAs(t, err, &rle)
	assert.Equal(t, 0, rle.Rate.Remaining)
	assert.True(t, rle.Rate.Reset.After(time.Now().Add(50*time.Minute)))

	// # a real exhaustion of a small quota
	require.NoError(t, f.srv.AddUser("eve", "eve-token", githubfake.PermissionRead, githubfake.RateLimit(2)))
	for i := 0; i < 2; i++ {
		r = f.do(t, "eve-token", http.MethodGet, "/repos/acme/app", nil)
		require.Equal(t, http.StatusOK, r.status)
	}
	r = f.do(t, "eve-token", http.MethodGet, "/repos/acme/app", nil)
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.Equal(t, "0", r.header.Get("X-RateLimit-Remaining"))
	assert.Contains(t, r.json(t)["message"], "API rate limit exceeded for user ID")
	r = f.do(t, "eve-token", http.MethodGet, "/rate_limit", nil)
	assert.Equal(t, http.StatusOK, r.status, "GET /rate_limit does not count")
	assert.Equal(t, "0", r.header.Get("X-RateLimit-Remaining"))

	// # a token revoked mid-run
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.BadCredentials, Path: "/graphql"}))
	status, _ := f.graphql(t, aliceToken, `{ viewer { login } }`, nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	status, res := f.graphql(t, aliceToken, `{ viewer { login } }`, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "alice", dig(t, res, "data", "viewer", "login"))
}

func TestGraphQLFaultsMatchAField(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.reviewWithThreeThreads(t)
	threads := f.srv.Threads(owner, repoName, 1)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Path: "/graphql", GraphQLField: "resolveReviewThread", AfterEffect: true}))

	status, _ := f.graphql(t, aliceToken, `{ viewer { login } }`, nil)
	assert.Equal(t, http.StatusOK, status, "another operation does not match")
	status, _ = f.graphql(t, aliceToken, resolveMutation, map[string]any{"id": threads[0].ID})
	assert.Equal(t, http.StatusBadGateway, status)
	assert.True(t, f.srv.Threads(owner, repoName, 1)[0].Resolved, "the thread was resolved before the answer was lost")
}

func TestAnInjectedFaultThatNeverMatchedIsReported(t *testing.T) {
	t.Parallel()
	var reported []string
	srv, err := githubfake.Start(githubfake.WithErrorf(func(format string, args ...any) {
		reported = append(reported, format)
	}))
	require.NoError(t, err)
	require.NoError(t, srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Path: "/repos/a/b"}))
	require.Error(t, srv.Verify())
	srv.Close()
	assert.Len(t, reported, 1)

	assert.Error(t, srv.Inject(githubfake.Fault{Kind: githubfake.SecondaryRateLimit, Path: "/x", AfterEffect: true}))
	assert.Error(t, srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Status: 404, Path: "/x"}))
	assert.Error(t, srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Path: "x"}))
}
