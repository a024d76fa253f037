package github

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// TestAReviewRoundClosesItsThreads is one round of GitHub mode against
// the fake: push, open the draft PR, one review with two inline comments
// and one finding outside the diff, a fix pushed, replies, threads read
// and resolved, the status, ready for review. GitHub answers no 4xx.
func TestAReviewRoundClosesItsThreads(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	acc, err := c.Preflight(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, Access{Login: "alice", DefaultBranch: "main", Private: true}, acc)

	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	assert.True(t, pr.Draft)
	assert.Equal(t, "main", pr.BaseRef, "the default branch")
	assert.Equal(t, head, pr.HeadSHA)
	assert.Equal(t, "alice", pr.Author)
	assert.False(t, pr.Fork)

	again, created, err := c.EnsurePR(f.ctx, NewPR{Head: "feature", Title: "Other", Body: "Other"})
	require.NoError(t, err)
	assert.False(t, created, "the open PR for the head is reused")
	assert.Equal(t, pr.Number, again.Number)

	pr, err = c.SetSummary(f.ctx, pr.Number, "Round 1: reviewing.")
	require.NoError(t, err)
	assert.Equal(t, "The task.\n\n"+SummaryStart+"\nRound 1: reviewing.\n"+SummaryEnd, pr.Body)
	require.NoError(t, c.SetStatus(f.ctx, head, StatusPending, "spawn is reviewing", ""))

	files, err := c.Files(f.ctx, pr.Number)
	require.NoError(t, err)
	diff, err := DiffFromFiles(files)
	require.NoError(t, err)
	unified, err := c.Diff(f.ctx, pr.Number)
	require.NoError(t, err)
	parsed, err := ParseDiff(unified)
	require.NoError(t, err)
	assert.Equal(t, diff, parsed, "list-files and the unified diff agree")

	placed := diff.Place([]Finding{
		{ID: "f-range", Path: "app.txt", StartLine: 4, Line: 6, Body: "Lines 4-6 need care."},
		{ID: "f-new", Path: "new.txt", Line: 2, Body: "Say two."},
		{ID: "f-out", Path: "app.txt", Line: 15, Body: "Line 15 is off."},
	})
	require.Len(t, placed.Inline, 2)
	require.Len(t, placed.Unplaced, 1)
	body := "Changes requested.\n\n- app.txt:15: Line 15 is off."
	marker := Marker{Run: "run1", Round: 1, Seat: "general"}
	rev, err := c.SubmitReview(f.ctx, pr.Number, ReviewRequest{Marker: marker, Event: EventComment, Body: body, CommitID: head, Comments: placed.Inline})
	require.NoError(t, err)
	assert.False(t, rev.Existing)
	assert.Equal(t, "COMMENTED", rev.State)
	assert.Contains(t, rev.URL, "#pullrequestreview-")
	require.Len(t, rev.Comments, 2)
	rangeID, ok := rev.CommentFor("f-range")
	require.True(t, ok)
	newID, ok := rev.CommentFor("f-new")
	require.True(t, ok)

	reviews := f.srv.Reviews(owner, repoName, pr.Number)
	require.Len(t, reviews, 1)
	assert.True(t, marker.In(reviews[0].Body))
	comments := f.srv.ReviewComments(owner, repoName, pr.Number)
	require.Len(t, comments, 2)
	assert.Equal(t, 4, comments[0].StartLine)
	assert.Equal(t, 6, comments[0].Line)
	assert.Equal(t, "RIGHT", comments[0].Side)

	// The same round again (a resumed run) posts nothing.
	again2, err := c.SubmitReview(f.ctx, pr.Number, ReviewRequest{Marker: marker, Body: body, CommitID: head, Comments: placed.Inline})
	require.NoError(t, err)
	assert.True(t, again2.Existing)
	assert.Equal(t, rev.ID, again2.ID)
	assert.Equal(t, rev.Comments, again2.Comments)

	// The coder fixes; spawn pushes and replies.
	replaceLines(t, f.local, "new.txt", 2)
	testenv.Git(t, f.local, "commit", "--quiet", "-am", "fix: say two")
	fix, err := Push(f.ctx, f.repo(), "origin", "feature")
	require.NoError(t, err)
	replyMarker := Marker{Run: "run1", Round: 1}
	reply, existing, err := c.Reply(f.ctx, pr.Number, newID, replyMarker, "Fixed in "+fix[:7]+": says two now.")
	require.NoError(t, err)
	assert.False(t, existing)
	assert.Equal(t, newID, reply.InReplyTo)
	assert.True(t, reply.Spawn())
	_, existing, err = c.Reply(f.ctx, pr.Number, newID, replyMarker, "Fixed again?")
	require.NoError(t, err)
	assert.True(t, existing, "the same reply is not posted twice")
	_, _, err = c.Reply(f.ctx, pr.Number, rangeID, replyMarker, "Declined: the range is fine.")
	require.NoError(t, err)

	threads, err := c.Threads(f.ctx, pr.Number)
	require.NoError(t, err)
	require.Len(t, threads, 2)
	th, ok := ThreadOf(threads, newID)
	require.True(t, ok)
	assert.Equal(t, "new.txt", th.Path)
	assert.True(t, th.ViewerCanResolve)
	assert.False(t, th.Resolved)
	require.Len(t, th.Comments, 2)
	assert.Equal(t, "alice", th.Author())
	assert.True(t, th.Spawn())
	assert.Equal(t, reply.ID, th.Comments[1].ID)
	_, ok = ThreadOf(threads, 1)
	assert.False(t, ok)

	require.NoError(t, c.Resolve(f.ctx, th.ID))
	require.NoError(t, c.Resolve(f.ctx, th.ID), "resolving twice is harmless")
	for _, ft := range f.srv.Threads(owner, repoName, pr.Number) {
		assert.Equal(t, ft.ID == th.ID, ft.Resolved, ft.ID)
	}
	open, err := c.OpenThreads(f.ctx, pr.Number)
	require.NoError(t, err)
	assert.Empty(t, open, "spawn's own threads are not open threads for spawn pr")

	require.NoError(t, c.SetStatus(f.ctx, fix, StatusSuccess, strings.Repeat("approved ", 30), "https://example.com/run1"))
	statuses := f.srv.Statuses(owner, repoName, fix)
	require.Len(t, statuses, 1)
	assert.Equal(t, StatusContext, statuses[0].Context)
	assert.Equal(t, "success", statuses[0].State)
	assert.Len(t, []rune(statuses[0].Description), 140)

	pr, err = c.PR(f.ctx, pr.Number)
	require.NoError(t, err)
	require.NoError(t, c.MarkReady(f.ctx, pr))
	got, _ := f.srv.PullRequest(owner, repoName, pr.Number)
	assert.False(t, got.Draft)
	pr.Draft = false
	require.NoError(t, c.MarkReady(f.ctx, pr), "a ready PR is left alone")

	f.requireClean(t)
	writes := f.writes()
	t.Logf("content-creating requests: %v", writes)
	all := map[string]int{}
	for _, r := range f.srv.Requests() {
		all[r.Operation]++
	}
	t.Logf("all requests: %v", all)
	assert.Equal(t, 1, writes["pulls/create-review"], "one review per round")
	assert.Equal(t, 2, writes["pulls/create-reply-for-review-comment"])
	assert.Equal(t, 1, writes["pulls/create"])
	assert.Equal(t, 1, writes["pulls/update"])
}

// TestAReviewerIdentityApproves: a second identity may approve spawn's PR,
// which the author itself may not.
func TestAReviewerIdentityApproves(t *testing.T) {
	f := newFixture(t)
	loc := f.location(t, aliceToken, bobToken)
	c := f.clientAt(t, loc)
	acc, err := c.Preflight(f.ctx)
	require.NoError(t, err)
	assert.True(t, acc.Reviewer)
	assert.Equal(t, "bob", acc.ReviewerLogin)
	head := f.featureBranch(t)
	pr := f.openPR(t, c)

	r, ok := c.Reviewer()
	require.True(t, ok)
	rev, err := r.SubmitReview(f.ctx, pr.Number, ReviewRequest{Marker: Marker{Run: "r", Round: 1, Seat: "s"}, Event: EventApprove, Body: "Approved.", CommitID: head})
	require.NoError(t, err)
	assert.Equal(t, "APPROVED", rev.State)
	assert.Equal(t, "bob", rev.Author)

	// The author's own approval is GitHub's 422, an *APIError with its message.
	_, err = c.SubmitReview(f.ctx, pr.Number, ReviewRequest{Marker: Marker{Run: "r", Round: 1, Seat: "self"}, Event: EventApprove, Body: "Self."})
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 422, ae.Status)
	assert.Contains(t, ae.Message, "Can not approve your own pull request")
	assert.Contains(t, err.Error(), "Can not approve your own pull request")

	// A reviewer token that is the main identity is reported, not fatal.
	same := f.clientAt(t, f.location(t, aliceToken, aliceToken))
	acc, err = same.Preflight(f.ctx)
	require.NoError(t, err)
	assert.False(t, acc.Reviewer)
	assert.Contains(t, acc.ReviewerProblem, "same identity")
	// A reviewer token GitHub refuses is reported, not fatal.
	bad := f.clientAt(t, f.location(t, aliceToken, "ghp_unknown_reviewer_token"))
	acc, err = bad.Preflight(f.ctx)
	require.NoError(t, err)
	assert.False(t, acc.Reviewer)
	assert.Contains(t, acc.ReviewerProblem, EnvReviewerToken)
}

// TestAnActionsTokenRepliesButCannotResolve: viewerCanResolve is false
// for Actions' token; Resolve says ErrCannotResolve and replies still work.
func TestAnActionsTokenRepliesButCannotResolve(t *testing.T) {
	f := newFixture(t, githubfake.AllowActionsPullRequests())
	bot := f.client(t, botToken)
	head := f.featureBranch(t)
	pr := f.openPR(t, bot)
	rev, err := bot.SubmitReview(f.ctx, pr.Number, ReviewRequest{Marker: Marker{Run: "r", Round: 1, Seat: "s"}, Body: "One finding.", CommitID: head,
		Comments: []InlineComment{{FindingID: "f1", Path: "app.txt", Line: 5, Body: "Five."}}})
	require.NoError(t, err)
	id, ok := rev.CommentFor("f1")
	require.True(t, ok)
	_, _, err = bot.Reply(f.ctx, pr.Number, id, Marker{Run: "r", Round: 2}, "Fixed.")
	require.NoError(t, err)
	threads, err := bot.Threads(f.ctx, pr.Number)
	require.NoError(t, err)
	require.Len(t, threads, 1)
	assert.False(t, threads[0].ViewerCanResolve)
	err = bot.Resolve(f.ctx, threads[0].ID)
	require.ErrorIs(t, err, ErrCannotResolve)
	assert.False(t, f.srv.Threads(owner, repoName, pr.Number)[0].Resolved)
	require.Empty(t, f.srv.Problems())
}

// TestThreadsReadEveryPage: 105 threads span two pages of reviewThreads,
// and a thread with 101 comments two pages of its comments.
func TestThreadsReadEveryPage(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	testenv.Git(t, f.local, "checkout", "--quiet", "-b", "feature")
	testenv.WriteFile(t, f.local, "big.txt", testenv.Numbered(120))
	testenv.Git(t, f.local, "add", ".")
	testenv.Git(t, f.local, "commit", "--quiet", "-m", "big")
	head, err := Push(f.ctx, f.repo(), "origin", "feature")
	require.NoError(t, err)
	pr := f.openPR(t, c)
	var findings []Finding
	for i := 1; i <= 105; i++ {
		findings = append(findings, Finding{ID: "f" + itoa(i), Path: "big.txt", Line: i, Body: "Line " + itoa(i) + "."})
	}
	files, err := c.Files(f.ctx, pr.Number)
	require.NoError(t, err)
	diff, err := DiffFromFiles(files)
	require.NoError(t, err)
	placed := diff.Place(findings)
	require.Len(t, placed.Inline, 105)
	rev, err := c.SubmitReview(f.ctx, pr.Number, ReviewRequest{Marker: Marker{Run: "r", Round: 1, Seat: "s"}, Body: "Many.", CommitID: head, Comments: placed.Inline})
	require.NoError(t, err)
	require.Len(t, rev.Comments, 105, "the review's comments span two pages")
	last, ok := rev.CommentFor("f105")
	require.True(t, ok)

	// 100 replies by bob make the last thread 101 comments long.
	bob := f.client(t, bobToken)
	for i := 1; i <= 100; i++ {
		req, err := bob.gh.NewRequest("POST", "repos/acme/app/pulls/"+itoa(pr.Number)+"/comments/"+fmtInt64(last)+"/replies", map[string]string{"body": "Reply " + itoa(i)})
		require.NoError(t, err)
		_, err = bob.gh.Do(f.ctx, req, nil)
		require.NoError(t, err)
	}
	threads, err := c.Threads(f.ctx, pr.Number)
	require.NoError(t, err)
	require.Len(t, threads, 105)
	th, ok := ThreadOf(threads, last)
	require.True(t, ok)
	assert.Len(t, th.Comments, 101)
	assert.Equal(t, 105, th.Line)
	f.requireClean(t)
}

// TestOpenThreadsAndTrust: spawn pr weighs the unresolved threads a person
// opened by the person's role.
func TestOpenThreadsAndTrust(t *testing.T) {
	f := newFixture(t, githubfake.Public())
	c := f.client(t, aliceToken)
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	for _, tok := range []string{bobToken, carolToken} {
		h := f.client(t, tok)
		_, err := h.SubmitReview(f.ctx, pr.Number, ReviewRequest{Marker: Marker{Run: "x", Round: 1, Seat: "s"}, Body: "Please fix.", CommitID: head,
			Comments: []InlineComment{{FindingID: "f", Path: "app.txt", Line: 30, Body: "Thirty."}}})
		require.NoError(t, err)
	}
	open, err := c.OpenThreads(f.ctx, pr.Number)
	require.NoError(t, err)
	assert.Empty(t, open, "threads carrying spawn's marker are spawn's")

	human := f.client(t, bobToken)
	req, err := human.gh.NewRequest("POST", "repos/acme/app/pulls/"+itoa(pr.Number)+"/reviews", map[string]any{
		"event": "COMMENT", "body": "Human review", "commit_id": head,
		"comments": []map[string]any{{"path": "new.txt", "line": 1, "side": "RIGHT", "body": "Rename this."}},
	})
	require.NoError(t, err)
	_, err = human.gh.Do(f.ctx, req, nil)
	require.NoError(t, err)
	open, err = c.OpenThreads(f.ctx, pr.Number)
	require.NoError(t, err)
	require.Len(t, open, 1)
	assert.Equal(t, "bob", open[0].Author())
	assert.Equal(t, "Rename this.", StripMarkers(open[0].Root().Body))

	for login, want := range map[string]Permission{"alice": PermissionWrite, "bob": PermissionMaintain, "carol": PermissionRead, "acme": PermissionNone, "nobody": PermissionNone} {
		got, err := c.Permission(f.ctx, login)
		require.NoError(t, err, login)
		assert.Equal(t, want, got, login)
		assert.Equal(t, want == PermissionWrite || want == PermissionMaintain, got.Trusted(), login)
	}
	require.Empty(t, f.srv.Problems())
}

func TestPRByRef(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	f.featureBranch(t)
	pr := f.openPR(t, c)
	for _, ref := range []string{itoa(pr.Number), "#" + itoa(pr.Number), pr.URL, pr.URL + "/files", "https://github.com/ACME/App/pull/" + itoa(pr.Number)} {
		got, err := c.PRByRef(f.ctx, ref)
		require.NoError(t, err, ref)
		assert.Equal(t, pr.Number, got.Number, ref)
		assert.Equal(t, "acme/app", got.HeadRepo)
	}
	for _, ref := range []string{"https://github.com/other/app/pull/1", "nope", "https://github.com/acme/app/issues/1"} {
		_, err := c.PRByRef(f.ctx, ref)
		var pe *PreflightError
		require.ErrorAs(t, err, &pe, ref)
		assert.Equal(t, ProblemOtherRepository, pe.Problem)
	}
	_, err := c.PR(f.ctx, 999)
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 404, ae.Status)
	assert.False(t, errors.Is(err, ErrCannotResolve))
}

func itoa(n int) string { return fmtInt(n) }

// TestARefusedAnchorFoldsTheCommentsIntoTheBody: comments placed on a
// stale diff get GitHub's 422; the review is posted with them in its body.
func TestARefusedAnchorFoldsTheCommentsIntoTheBody(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken)
	head := f.featureBranch(t)
	pr := f.openPR(t, c)
	in := oneFinding(head)
	in.Comments = append(in.Comments, InlineComment{FindingID: "f2", Path: "app.txt", StartLine: 14, Line: 15, Body: "Not in the diff."})
	rev, err := c.SubmitReview(f.ctx, pr.Number, in)
	require.NoError(t, err)
	assert.True(t, rev.Folded)
	assert.Empty(t, rev.Comments)
	reviews := f.srv.Reviews(owner, repoName, pr.Number)
	require.Len(t, reviews, 1)
	assert.Contains(t, reviews[0].Body, "Review.\n\n- `app.txt:5`: Five.\n- `app.txt:14-15`: Not in the diff.\n\n<!-- spawn:")
	f.requireClean(t, 422)
}

func TestFetchReadsThePushedHead(t *testing.T) {
	f := newFixture(t)
	head := f.featureBranch(t)
	other := testenv.Repo(t)
	testenv.Git(t, other, "remote", "add", "origin", f.srv.RemoteURL(owner, repoName))
	got, err := Fetch(f.ctx, git.Repo{Dir: other, Env: f.env}, "origin", "feature")
	require.NoError(t, err)
	assert.Equal(t, head, got)
	_, err = Fetch(f.ctx, git.Repo{Dir: other, Env: f.env}, "origin", "nope")
	var pe *PushError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "fetch nope from origin")
}

// TestActionsWithoutPermissionToOpenPRsSaysWhatToDo: the repository
// setting is off; GitHub's 403 comes with the remedy.
func TestActionsWithoutPermissionToOpenPRsSaysWhatToDo(t *testing.T) {
	f := newFixture(t)
	bot := f.client(t, botToken)
	acc, err := bot.Preflight(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, "main", acc.DefaultBranch)
	f.featureBranch(t)
	_, _, err = bot.EnsurePR(f.ctx, NewPR{Head: "feature", Title: "T", Body: "B"})
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 403, ae.Status)
	assert.Equal(t, "GitHub Actions is not permitted to create or approve pull requests.", ae.Message)
	assert.Contains(t, err.Error(), "Allow GitHub Actions to create and approve pull requests")
	assert.Empty(t, f.srv.PullRequests(owner, repoName))
}

// noDrafts answers a draft PR's creation as GitHub does where the plan has
// no drafts.
type noDrafts struct{ base http.RoundTripper }

func (n noDrafts) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		if strings.Contains(string(body), `"draft":true`) {
			msg := `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"Draft pull requests are not supported in this repository."}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`
			return &http.Response{StatusCode: 422, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(msg)), Request: r}, nil
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return n.base.RoundTrip(r)
}

func TestWithoutDraftsThePROpensReady(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, aliceToken, WithTransport(noDrafts{http.DefaultTransport}))
	f.featureBranch(t)
	pr, created, err := c.EnsurePR(f.ctx, NewPR{Head: "feature", Title: "T", Body: "B", Draft: true})
	require.NoError(t, err)
	assert.True(t, created)
	assert.False(t, pr.Draft)
	require.NoError(t, c.MarkReady(f.ctx, pr))
}
