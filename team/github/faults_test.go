package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

const reviewsPath = "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"

func oneFinding(head string) ReviewRequest {
	return ReviewRequest{Marker: Marker{Run: "r", Round: 1, Seat: "s"}, Body: "Review.", CommitID: head,
		Comments: []InlineComment{{FindingID: "f1", Path: "app.txt", Line: 5, Body: "Five."}}}
}

// TestA502AfterTheReviewPostsNoSecondReview: the review is made but its
// answer lost; the retry finds it by its marker.
func TestA502AfterTheReviewPostsNoSecondReview(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Method: "POST", Path: reviewsPath, AfterEffect: true}))
	rev, err := c.SubmitReview(f.ctx, pr.Number, oneFinding(head))
	require.NoError(t, err)
	assert.True(t, rev.Existing)
	_, ok := rev.CommentFor("f1")
	assert.True(t, ok)
	assert.Len(t, f.srv.Reviews(owner, repoName, pr.Number), 1)
	assert.Equal(t, 1, f.writes()["pulls/create-review"])
	waits := f.recordedWaits()
	require.Len(t, waits, 1)
	assert.Contains(t, waits[0].why, "checking whether it took effect")
}

func TestA502AfterAReplyPostsNoSecondReply(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	rev, err := c.SubmitReview(f.ctx, pr.Number, oneFinding(head))
	require.NoError(t, err)
	id, _ := rev.CommentFor("f1")
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Status: 504, Method: "POST", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", AfterEffect: true}))
	_, existing, err := c.Reply(f.ctx, pr.Number, id, Marker{Run: "r", Round: 1}, "Fixed.")
	require.NoError(t, err)
	assert.True(t, existing)
	assert.Len(t, f.srv.ReviewComments(owner, repoName, pr.Number), 2)
}

func TestA502AfterOpeningThePROpensNoSecond(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	f.featureBranch(t)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Method: "POST", Path: "/repos/{owner}/{repo}/pulls", AfterEffect: true}))
	pr, _, err := c.EnsurePR(f.ctx, NewPR{Head: "feature", Title: "T", Body: "B", Draft: true})
	require.NoError(t, err)
	assert.Equal(t, 1, pr.Number)
	assert.Len(t, f.srv.PullRequests(owner, repoName), 1)
}

// slowAnswers lets the first request matching it reach the server, then
// withholds the answer until the attempt times out.
type slowAnswers struct {
	base  http.RoundTripper
	match func(*http.Request) bool
	done  atomic.Bool
}

func (s *slowAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(r)
	if err == nil && s.match(r) && s.done.CompareAndSwap(false, true) {
		if cerr := resp.Body.Close(); cerr != nil {
			return nil, cerr
		}
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return resp, err
}

// TestATimeoutAfterTheReviewPostsNoSecondReview: the answer never comes;
// the attempt times out and the retry finds the review.
func TestATimeoutAfterTheReviewPostsNoSecondReview(t *testing.T) {
	f := newFixture(t)
	slow := &slowAnswers{base: http.DefaultTransport, match: func(r *http.Request) bool {
		return r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/reviews")
	}}
	c := f.client(t, aliceToken, WithTransport(slow), WithRequestTimeout(300*time.Millisecond))
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	rev, err := c.SubmitReview(f.ctx, pr.Number, oneFinding(head))
	require.NoError(t, err)
	assert.True(t, slow.done.Load())
	assert.True(t, rev.Existing)
	assert.Len(t, f.srv.Reviews(owner, repoName, pr.Number), 1)
}

func TestReadsAreRetriedAfter5xxABoundedNumberOfTimes(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	f.featureBranch(t)
	pr := f.openPR(t, c)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}", Times: 2}))
	_, err := c.PR(f.ctx, pr.Number)
	require.NoError(t, err)
	assert.Len(t, f.recordedWaits(), 2)

	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Status: 503, Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}", Times: 4}))
	_, err = c.PR(f.ctx, pr.Number)
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 503, ae.Status)
	assert.Equal(t, "Service Unavailable", ae.Message)
	assert.Equal(t, "github: get pull request #1: 503 Service Unavailable: Service Unavailable", err.Error())
}

// TestASecondaryRateLimitWithRetryAfterIsWaitedOut really waits the 2
// seconds GitHub asks for, and says so.
func TestASecondaryRateLimitWithRetryAfterIsWaitedOut(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken, WithClock(time.Now, sleepCtx))
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.SecondaryRateLimit, Method: "POST", Path: reviewsPath, RetryAfter: 2 * time.Second}))
	start := time.Now()
	rev, err := c.SubmitReview(f.ctx, pr.Number, oneFinding(head))
	require.NoError(t, err)
	assert.False(t, rev.Existing)
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second)
	waits := f.recordedWaits()
	require.Len(t, waits, 1)
	assert.Equal(t, 2*time.Second, waits[0].d)
	assert.Contains(t, waits[0].why, "retry-after")
	assert.Len(t, f.srv.Reviews(owner, repoName, pr.Number), 1)
	f.requireClean(t, http.StatusForbidden)
}

func TestASecondaryRateLimitWithoutRetryAfterBacksOffFromAMinute(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.SecondaryRateLimit, Status: 429, Method: "POST", Path: reviewsPath, Times: 2}))
	_, err := c.SubmitReview(f.ctx, pr.Number, oneFinding(head))
	require.NoError(t, err)
	waits := f.recordedWaits()
	require.Len(t, waits, 2)
	assert.Equal(t, time.Minute, waits[0].d)
	assert.Equal(t, 2*time.Minute, waits[1].d)
	assert.Len(t, f.srv.Reviews(owner, repoName, pr.Number), 1)
}

func TestAPrimaryRateLimitWaitsUntilTheReset(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	f.featureBranch(t)
	pr := f.openPR(t, c)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.PrimaryRateLimit, Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}", ResetIn: 30 * time.Second}))
	_, err := c.PR(f.ctx, pr.Number)
	require.NoError(t, err)
	waits := f.recordedWaits()
	require.Len(t, waits, 1)
	assert.InDelta(t, 31*time.Second, waits[0].d, float64(2*time.Second))
	assert.Contains(t, waits[0].why, "primary rate limit")

	// GraphQL says so with HTTP 200 and a RATE_LIMITED error.
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.PrimaryRateLimit, Path: "/graphql", ResetIn: 10 * time.Second}))
	_, err = c.Threads(f.ctx, pr.Number)
	require.NoError(t, err)
	waits = f.recordedWaits()
	require.Len(t, waits, 2)
	assert.InDelta(t, 11*time.Second, waits[1].d, float64(2*time.Second))
}

// TestAWaitPastTheDeadlineFailsAtOnce: a rate limit that outlasts the
// caller's total timeout is an error now, not a sleep into the deadline.
func TestAWaitPastTheDeadlineFailsAtOnce(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.SecondaryRateLimit, Method: "POST", Path: reviewsPath}))
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	_, err := c.SubmitReview(ctx, pr.Number, oneFinding(head))
	var rl *RateLimitError
	require.ErrorAs(t, err, &rl)
	assert.Contains(t, rl.Message, "secondary rate limit")
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, err.Error(), "past the deadline")
	assert.Empty(t, f.recordedWaits())
	assert.Empty(t, f.srv.Reviews(owner, repoName, pr.Number))
}

func TestWritesAreSpaced(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken, WithMinWriteInterval(time.Second))
	head := f.featureBranch(t)
	require.NoError(t, c.SetStatus(f.ctx, head, StatusPending, "one", ""))
	require.NoError(t, c.SetStatus(f.ctx, head, StatusSuccess, "two", ""))
	f.mu.Lock()
	slept := append([]time.Duration(nil), f.slept...)
	f.mu.Unlock()
	require.Len(t, slept, 1, "the second write waits")
	assert.InDelta(t, time.Second, slept[0], float64(500*time.Millisecond))
	assert.Empty(t, f.recordedWaits(), "spacing is not narrated")
}

func TestPreflightFailuresSayWhatToDo(t *testing.T) {
	f := newFixture(t)
	check := func(t *testing.T, c *Client, problem Problem, words string) {
		t.Helper()
		_, err := c.Preflight(f.ctx)
		var pe *PreflightError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, problem, pe.Problem)
		assert.Contains(t, pe.Sentence, words)
		// One sentence as spawn prints every message: lower case, no
		// full stop (spawn's message follows "spawn: ").
		assert.False(t, strings.HasSuffix(pe.Sentence, "."), pe.Sentence)
		assert.Equal(t, strings.ToLower(pe.Sentence[:1]), pe.Sentence[:1], pe.Sentence)
		for _, tok := range []string{aliceToken, carolToken, "ghp_wrong_canary_0123456789"} {
			assert.NotContains(t, err.Error(), tok)
			assert.NotContains(t, fmt.Sprintf("%+v %#v", err, err), tok)
		}
	}
	t.Run("no token", func(t *testing.T) { check(t, f.client(t, ""), ProblemNoToken, "gh auth login") })
	t.Run("bad token", func(t *testing.T) {
		check(t, f.client(t, "ghp_wrong_canary_0123456789"), ProblemBadCredentials, "GITHUB_TOKEN")
	})
	t.Run("revoked token", func(t *testing.T) {
		require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.BadCredentials, Path: "/repos/{owner}/{repo}"}))
		check(t, f.client(t, aliceToken), ProblemBadCredentials, "401")
	})
	t.Run("read only", func(t *testing.T) { check(t, f.client(t, carolToken), ProblemCannotPush, "cannot push") })
	t.Run("no such repository", func(t *testing.T) {
		loc := f.location(t, aliceToken, "")
		loc.Repo = "nope"
		check(t, f.clientAt(t, loc), ProblemNoRepository, "acme/nope")
	})
	t.Run("unreachable", func(t *testing.T) {
		loc := f.location(t, aliceToken, "")
		loc.APIURL = "http://127.0.0.1:1"
		loc.GraphQLURL = GraphQLURLFor(loc.APIURL)
		check(t, f.clientAt(t, loc, WithMaxAttempts(2)), ProblemUnreachable, "did not answer")
	})
	t.Run("not GitHub", func(t *testing.T) {
		notGitHub := testServer(t, func(w http.ResponseWriter, r *http.Request) {
			_, err := w.Write([]byte("<html>hello</html>"))
			assert.NoError(t, err)
		})
		loc := f.location(t, aliceToken, "")
		loc.APIURL, loc.GraphQLURL = notGitHub, GraphQLURLFor(notGitHub)
		check(t, f.clientAt(t, loc), ProblemUnexpected, "did not answer as the GitHub API")
	})
}

// TestTokensAppearInNoError: a canary token in every place a token goes
// shows up in no error text.
func TestTokensAppearInNoError(t *testing.T) {
	const canary = "ghp_CANARY_do_not_leak_42"
	f := newFixture(t)
	var errs []error
	c := f.client(t, canary)
	_, err := c.Preflight(f.ctx)
	errs = append(errs, err)
	_, err = c.PR(f.ctx, 1)
	errs = append(errs, err)
	_, err = c.Threads(f.ctx, 1)
	errs = append(errs, err)
	errs = append(errs, c.Resolve(f.ctx, "PRRT_nope"))

	// A remote URL with the token in it: git's error hides it.
	testenv.Git(t, f.local, "remote", "add", "leaky", "http://x-access-token:"+canary+"@127.0.0.1:1/acme/app.git")
	_, err = Push(f.ctx, f.repo(), "leaky", "main")
	errs = append(errs, err)
	loc := f.location(t, canary, canary)
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", loc, loc, loc), canary)

	for _, err := range errs {
		require.Error(t, err)
		assert.NotContains(t, err.Error(), canary)
		assert.NotContains(t, fmt.Sprintf("%+v", err), canary)
	}
	var pe *PushError
	require.True(t, errors.As(errs[len(errs)-1], &pe))
}

// TestAUsedUpPrimaryLimitIsNotHitAgain: once an answer says the hourly
// limit is used up, the next call waits for the reset instead of sending,
// and a reset past the deadline is an error at once.
func TestAUsedUpPrimaryLimitIsNotHitAgain(t *testing.T) {
	f := newFixture(t)
	const daveToken = "ghp_dave_canary_0123456789"
	require.NoError(t, f.srv.AddUser("dave", daveToken, githubfake.PermissionWrite, githubfake.RateLimit(2)))
	c := f.client(t, daveToken)
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	for i := 0; i < 2; i++ {
		_, _, err := c.FindPR(ctx, "feature")
		require.NoError(t, err)
	}
	sent := len(f.srv.Requests())
	_, _, err := c.FindPR(ctx, "feature")
	var rl *RateLimitError
	require.ErrorAs(t, err, &rl)
	assert.WithinDuration(t, time.Now().Add(time.Hour), rl.Until, 5*time.Second)
	assert.Equal(t, sent, len(f.srv.Requests()), "nothing was sent")
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, err.Error(), "rate limit")

	// GraphQL has a limit of its own, which the used-up REST one does not
	// block; once it is used up too, GraphQL calls wait for its reset.
	for i := 0; i < 2; i++ {
		_, err = c.Threads(ctx, 1)
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, 0, ae.Status)
		assert.NotErrorAs(t, err, &rl)
	}
	sent = len(f.srv.Requests())
	_, err = c.Threads(ctx, 1)
	require.ErrorAs(t, err, &rl)
	assert.Equal(t, sent, len(f.srv.Requests()), "nothing was sent")
}

// inFlight counts the writes under way at once.
type inFlight struct {
	base    http.RoundTripper
	now, hi atomic.Int32
}

func (f *inFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		return f.base.RoundTrip(r)
	}
	n := f.now.Add(1)
	defer f.now.Add(-1)
	for {
		hi := f.hi.Load()
		if n <= hi || f.hi.CompareAndSwap(hi, n) {
			break
		}
	}
	return f.base.RoundTrip(r) // the fake's work on a review (git diff, validation) is the window
}

// TestWritesAreSerialised: two seats reviewing at once (two identities)
// never have two writes in flight.
func TestWritesAreSerialised(t *testing.T) {
	f := newFixture(t)
	counter := &inFlight{base: http.DefaultTransport}
	c := f.clientAt(t, f.location(t, aliceToken, bobToken), WithTransport(counter))
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	r, ok := c.Reviewer()
	require.True(t, ok)
	errs := make(chan error, 4)
	for i, cl := range []*Client{c, r, c, r} {
		go func() {
			in := oneFinding(head)
			in.Marker.Seat = fmt.Sprint("seat", i)
			_, err := cl.SubmitReview(f.ctx, pr.Number, in)
			errs <- err
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	assert.Len(t, f.srv.Reviews(owner, repoName, pr.Number), 4)
	assert.Equal(t, int32(1), counter.hi.Load())
}

// TestGraphQLMutationsAreRetriedAfter5xx: resolving and marking ready are
// idempotent, so a 502 after their effect is simply retried.
func TestGraphQLMutationsAreRetriedAfter5xx(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	_, err := c.SubmitReview(f.ctx, pr.Number, oneFinding(head))
	require.NoError(t, err)
	threads, err := c.Threads(f.ctx, pr.Number)
	require.NoError(t, err)
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Path: "/graphql", GraphQLField: "resolveReviewThread", AfterEffect: true}))
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Path: "/graphql", GraphQLField: "markPullRequestReadyForReview", AfterEffect: true}))
	require.NoError(t, f.srv.Inject(githubfake.Fault{Kind: githubfake.ServerError, Path: "/graphql", GraphQLField: "repository"}))
	require.NoError(t, c.Resolve(f.ctx, threads[0].ID))
	require.NoError(t, c.MarkReady(f.ctx, pr))
	threads, err = c.Threads(f.ctx, pr.Number)
	require.NoError(t, err)
	assert.True(t, threads[0].Resolved)
	got, _ := f.srv.PullRequest(owner, repoName, pr.Number)
	assert.False(t, got.Draft)
	assert.Len(t, f.recordedWaits(), 3)
}
