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

func TestOneReviewWithInlineCommentsAndARefusedAnchor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.featureBranch(t)
	f.openPR(t)
	bob := f.client(t, bobToken)

	// # one review, two inline comments on diff lines (one multi-line)
	review, resp, err := bob.PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Body:  github.String("Round 1"),
		Event: github.String("REQUEST_CHANGES"),
		Comments: []*github.DraftReviewComment{
			{Path: github.String("app.txt"), Line: github.Int(5), Side: github.String("RIGHT"), Body: github.String("why 5?")},
			{Path: github.String("app.txt"), StartLine: github.Int(29), Line: github.Int(31), Side: github.String("RIGHT"), Body: github.String("and 29-31")},
		},
	})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "create-review answers 200, not 201")
	assert.Equal(t, "CHANGES_REQUESTED", review.GetState())
	assert.Equal(t, head, review.GetCommitID())
	assert.False(t, review.GetSubmittedAt().IsZero())
	assert.True(t, strings.HasPrefix(review.GetNodeID(), "PRR_"))

	comments, _, err := bob.PullRequests.ListReviewComments(f.ctx, owner, repoName, 1, review.GetID(), nil)
	require.NoError(t, err)
	require.Len(t, comments, 2)
	c5, c31 := comments[0], comments[1]
	assert.Equal(t, 5, c5.GetLine())
	assert.Equal(t, "RIGHT", c5.GetSide())
	assert.Equal(t, 5, c5.GetPosition(), "position counts lines below the first @@")
	assert.Equal(t, "@@ -2,7 +2,7 @@ line 1\n line 2\n line 3\n line 4\n-line 5\n+changed 5", c5.GetDiffHunk())
	assert.Nil(t, c5.StartLine)
	assert.Equal(t, 31, c31.GetLine())
	assert.Equal(t, 29, c31.GetStartLine())
	assert.Equal(t, "RIGHT", c31.GetStartSide())
	assert.Equal(t, 15, c31.GetPosition(), "the second hunk's header counts as a position")
	assert.Equal(t, review.GetID(), c31.GetPullRequestReviewID())
	assert.Equal(t, head, c31.GetOriginalCommitID())

	// # a review with one comment outside the diff is refused whole
	before := len(f.srv.ReviewComments(owner, repoName, 1))
	_, _, err = bob.PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Body:  github.String("Round 2"),
		Event: github.String("COMMENT"),
		Comments: []*github.DraftReviewComment{
			{Path: github.String("app.txt"), Line: github.Int(6), Body: github.String("fine")},
			{Path: github.String("app.txt"), Line: github.Int(18), Body: github.String("outside")},
		},
	})
	er := apiError(t, err, http.StatusUnprocessableEntity)
	assert.Equal(t, "Unprocessable Entity", er.Message)
	assert.Equal(t, "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request", er.DocumentationURL)
	r := f.do(t, bobToken, http.MethodPost, "/repos/acme/app/pulls/1/reviews", map[string]any{
		"body": "Round 2", "event": "COMMENT",
		"comments": []any{map[string]any{"path": "app.txt", "line": 18, "body": "outside"}},
	})
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	assert.Equal(t, []any{"Pull request review thread line must be part of the diff and Pull request review thread diff hunk can't be blank"},
		r.json(t)["errors"])
	assert.Equal(t, "422", r.json(t)["status"])
	assert.Len(t, f.srv.ReviewComments(owner, repoName, 1), before, "a refused review creates no comment")
	assert.Len(t, f.srv.Reviews(owner, repoName, 1), 1, "a refused review creates no review")

	// # the other refusals, with GitHub's sentences
	cases := []struct {
		name    string
		comment map[string]any
		want    string
	}{
		{"start line outside, line outside", map[string]any{"path": "app.txt", "start_line": 17, "line": 18, "body": "x"},
			"Pull request review thread line must be part of the diff, Pull request review thread start line must be part of the same hunk as the line., and Pull request review thread diff hunk can't be blank"},
		{"spanning two hunks", map[string]any{"path": "app.txt", "start_line": 5, "line": 30, "body": "x"},
			"Pull request review thread start line must be part of the same hunk as the line."},
		{"start equals line", map[string]any{"path": "app.txt", "start_line": 5, "line": 5, "body": "x"},
			"Pull request review thread start line must precede the end line."},
		{"path not in the pull request", map[string]any{"path": "README.md", "line": 1, "body": "x"},
			"Pull request review thread path is invalid and Pull request review thread diff hunk can't be blank"},
		{"the deleted line, on the left side", map[string]any{"path": "app.txt", "line": 5, "side": "LEFT", "body": "x"}, ""},
		{"from the left to the right side", map[string]any{"path": "app.txt", "start_line": 5, "start_side": "LEFT", "line": 6, "side": "RIGHT", "body": "x"}, ""},
		{"the deprecated position", map[string]any{"path": "app.txt", "position": 5, "body": "x"}, ""},
		{"a position on a hunk header", map[string]any{"path": "app.txt", "position": 9, "body": "x"},
			"Pull request review thread position is invalid and Pull request review thread diff hunk can't be blank"},
		{"the left side of an added file", map[string]any{"path": "new.txt", "line": 1, "side": "LEFT", "body": "x"},
			"Pull request review thread line must be part of the diff and Pull request review thread diff hunk can't be blank"},
	}
	for _, tc := range cases {
		r := f.do(t, bobToken, http.MethodPost, "/repos/acme/app/pulls/1/reviews", map[string]any{
			"body": tc.name, "event": "COMMENT", "comments": []any{tc.comment},
		})
		if tc.want == "" {
			assert.Equal(t, http.StatusOK, r.status, "%s: %s", tc.name, r.body)
			continue
		}
		assert.Equal(t, http.StatusUnprocessableEntity, r.status, tc.name)
		assert.Equal(t, []any{tc.want}, r.json(t)["errors"], tc.name)
	}

	// # a comment on a whole file has no line
	r = f.do(t, bobToken, http.MethodPost, "/repos/acme/app/pulls/1/comments", map[string]any{
		"body": "whole file", "commit_id": head, "path": "new.txt", "subject_type": "file",
	})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	assert.Equal(t, "file", r.json(t)["subject_type"])
	assert.NotContains(t, r.json(t), "line")

	// # a single comment outside the diff: the full validation-error shape
	r = f.do(t, bobToken, http.MethodPost, "/repos/acme/app/pulls/1/comments", map[string]any{
		"body": "x", "commit_id": head, "path": "app.txt", "line": 18, "side": "RIGHT",
	})
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	body := r.json(t)
	assert.Equal(t, "Validation Failed", body["message"])
	assert.Equal(t, []any{
		map[string]any{"resource": "PullRequestReviewComment", "code": "custom", "field": "pull_request_review_thread.line",
			"message": "pull_request_review_thread.line must be part of the diff"},
		map[string]any{"resource": "PullRequestReviewComment", "code": "missing_field", "field": "pull_request_review_thread.diff_hunk"},
	}, body["errors"])
}

func TestAuthorCannotApproveOrRequestChangesOnTheirOwnPullRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.featureBranch(t)
	f.openPR(t)
	alice := f.client(t, aliceToken)

	_, _, err := alice.PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Body: github.String("lgtm"), Event: github.String("APPROVE"),
	})
	er := apiError(t, err, http.StatusUnprocessableEntity)
	assert.Equal(t, "Unprocessable Entity", er.Message)
	r := f.do(t, aliceToken, http.MethodPost, "/repos/acme/app/pulls/1/reviews", map[string]any{"body": "x", "event": "APPROVE"})
	assert.Equal(t, []any{"Can not approve your own pull request"}, r.json(t)["errors"])
	r = f.do(t, aliceToken, http.MethodPost, "/repos/acme/app/pulls/1/reviews", map[string]any{"body": "x", "event": "REQUEST_CHANGES"})
	assert.Equal(t, []any{"Can not request changes on your own pull request"}, r.json(t)["errors"])
	assert.Empty(t, f.srv.Reviews(owner, repoName, 1))

	// A COMMENT review by the author is allowed.
	_, _, err = alice.PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Body: github.String("note"), Event: github.String("COMMENT"),
	})
	require.NoError(t, err)

	// Another user approves; the Actions token may not without the setting.
	_, _, err = f.client(t, botToken).PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Body: github.String("ok"), Event: github.String("APPROVE"),
	})
	er = apiError(t, err, http.StatusUnprocessableEntity)
	r = f.do(t, botToken, http.MethodPost, "/repos/acme/app/pulls/1/reviews", map[string]any{"body": "x", "event": "APPROVE"})
	assert.Equal(t, []any{"GitHub Actions is not permitted to approve pull requests."}, r.json(t)["errors"])
	review, _, err := f.client(t, bobToken).PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Body: github.String("lgtm"), Event: github.String("APPROVE"),
	})
	require.NoError(t, err)
	assert.Equal(t, "APPROVED", review.GetState())
	assert.Equal(t, "COLLABORATOR", review.GetAuthorAssociation())
}

func TestPendingReviewIsItsAuthorsUntilSubmitted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.featureBranch(t)
	f.openPR(t)
	bob := f.client(t, bobToken)

	pending, _, err := bob.PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Comments: []*github.DraftReviewComment{{Path: github.String("new.txt"), Line: github.Int(2), Body: github.String("two?")}},
	})
	require.NoError(t, err)
	assert.Equal(t, "PENDING", pending.GetState())
	assert.Nil(t, pending.SubmittedAt)

	_, _, err = bob.PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{})
	apiError(t, err, http.StatusUnprocessableEntity)
	r := f.do(t, bobToken, http.MethodPost, "/repos/acme/app/pulls/1/reviews", map[string]any{})
	assert.Equal(t, []any{"User can only have one pending review per pull request"}, r.json(t)["errors"])

	alice := f.client(t, aliceToken)
	reviews, _, err := alice.PullRequests.ListReviews(f.ctx, owner, repoName, 1, nil)
	require.NoError(t, err)
	assert.Empty(t, reviews, "a pending review is hidden from others")
	comments, _, err := alice.PullRequests.ListComments(f.ctx, owner, repoName, 1, nil)
	require.NoError(t, err)
	assert.Empty(t, comments)

	submitted, _, err := bob.PullRequests.SubmitReview(f.ctx, owner, repoName, 1, pending.GetID(), &github.PullRequestReviewRequest{
		Event: github.String("COMMENT"), Body: github.String("done"),
	})
	require.NoError(t, err)
	assert.Equal(t, "COMMENTED", submitted.GetState())
	comments, _, err = alice.PullRequests.ListComments(f.ctx, owner, repoName, 1, nil)
	require.NoError(t, err)
	assert.Len(t, comments, 1)
	_, _, err = bob.PullRequests.SubmitReview(f.ctx, owner, repoName, 1, pending.GetID(), &github.PullRequestReviewRequest{
		Event: github.String("COMMENT"),
	})
	apiError(t, err, http.StatusUnprocessableEntity)
}

func TestRepliesJoinTheThreadOfATopLevelComment(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.featureBranch(t)
	f.openPR(t)
	bob := f.client(t, bobToken)
	alice := f.client(t, aliceToken)

	root, resp, err := bob.PullRequests.CreateComment(f.ctx, owner, repoName, 1, &github.PullRequestComment{
		Body: github.String("rename this"), CommitID: github.String(head), Path: github.String("new.txt"),
		Line: github.Int(1), Side: github.String("RIGHT"),
	})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, root.GetURL(), resp.Header.Get("Location"))
	assert.True(t, strings.HasSuffix(root.GetHTMLURL(), "/acme/app/pull/1#discussion_r"+itoa(root.GetID())), root.GetHTMLURL())

	// # a reply with in_reply_to (what go-github sends), and one whose other
	// fields are ignored
	reply, resp, err := alice.PullRequests.CreateCommentInReplyTo(f.ctx, owner, repoName, 1, "Fixed in abc1234", root.GetID())
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, root.GetID(), reply.GetInReplyTo())
	assert.Equal(t, "new.txt", reply.GetPath())
	assert.Equal(t, 1, reply.GetLine())
	assert.Equal(t, root.GetDiffHunk(), reply.GetDiffHunk())
	r := f.do(t, aliceToken, http.MethodPost, "/repos/acme/app/pulls/1/comments", map[string]any{
		"body": "and more", "in_reply_to": root.GetID(), "commit_id": head, "path": "ignored.txt",
	})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	assert.Equal(t, "new.txt", r.json(t)["path"], "everything but body is ignored in a reply")
	r = f.do(t, bobToken, http.MethodPost, "/repos/acme/app/pulls/1/comments/"+itoa(root.GetID())+"/replies", map[string]any{"body": "thanks"})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	assert.Equal(t, float64(root.GetID()), r.json(t)["in_reply_to_id"])
	assert.NotEmpty(t, r.header.Get("Location"))
	r = f.do(t, bobToken, http.MethodPost, "/repos/acme/app/pulls/1/comments/999999/replies", map[string]any{"body": "x"})
	assert.Equal(t, http.StatusNotFound, r.status)

	// # a reply to a reply and a reply to nothing are refused
	_, _, err = alice.PullRequests.CreateCommentInReplyTo(f.ctx, owner, repoName, 1, "nested", reply.GetID())
	apiError(t, err, http.StatusUnprocessableEntity)
	_, _, err = alice.PullRequests.CreateCommentInReplyTo(f.ctx, owner, repoName, 1, "nowhere", 999999)
	apiError(t, err, http.StatusNotFound)

	// Each comment made outside a review gets a COMMENTED review of its own.
	reviews := f.srv.Reviews(owner, repoName, 1)
	require.Len(t, reviews, 4)
	for _, rv := range reviews {
		assert.Equal(t, "COMMENTED", rv.State)
	}
	threads := f.srv.Threads(owner, repoName, 1)
	require.Len(t, threads, 1)
	assert.Len(t, threads[0].CommentIDs, 4)

	// # editing a comment, and the issue-comment conversation
	edited, _, err := alice.PullRequests.EditComment(f.ctx, owner, repoName, reply.GetID(), &github.PullRequestComment{Body: github.String("Fixed in def5678")})
	require.NoError(t, err)
	assert.Equal(t, "Fixed in def5678", edited.GetBody())
	_, _, err = bob.PullRequests.EditComment(f.ctx, owner, repoName, reply.GetID(), &github.PullRequestComment{Body: github.String("mine now")})
	require.NoError(t, err, "a maintainer may edit others' comments")
	_, _, err = f.client(t, carolToken).PullRequests.EditComment(f.ctx, owner, repoName, reply.GetID(), &github.PullRequestComment{Body: github.String("no")})
	apiError(t, err, http.StatusForbidden)

	ic, resp, err := alice.Issues.CreateComment(f.ctx, owner, repoName, 1, &github.IssueComment{Body: github.String("summary")})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.True(t, strings.HasPrefix(ic.GetNodeID(), "IC_"))
	ics, _, err := bob.Issues.ListComments(f.ctx, owner, repoName, 1, nil)
	require.NoError(t, err)
	require.Len(t, ics, 1)
	assert.Equal(t, "summary", ics[0].GetBody())
	_, _, err = alice.Issues.EditComment(f.ctx, owner, repoName, ic.GetID(), &github.IssueComment{Body: github.String("summary v2")})
	require.NoError(t, err)
	assert.Equal(t, "summary v2", f.srv.IssueComments(owner, repoName, 1)[0].Body)
	_, _, err = alice.Issues.CreateComment(f.ctx, owner, repoName, 7, &github.IssueComment{Body: github.String("x")})
	apiError(t, err, http.StatusNotFound)
}

func TestACommentOnAChangedLineBecomesOutdated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := f.featureBranch(t)
	f.openPR(t)
	bob := f.client(t, bobToken)
	_, _, err := bob.PullRequests.CreateReview(f.ctx, owner, repoName, 1, &github.PullRequestReviewRequest{
		Event: github.String("COMMENT"), Body: github.String("r1"),
		Comments: []*github.DraftReviewComment{
			{Path: github.String("app.txt"), Line: github.Int(5), Body: github.String("on 5")},
			{Path: github.String("app.txt"), Line: github.Int(30), Body: github.String("on 30")},
		},
	})
	require.NoError(t, err)

	// # the coder rewrites line 5 and inserts two lines above line 30
	replaceLines(t, f.local, 5)
	data := strings.Replace(readFile(t, f.local, "app.txt"), "line 20\n", "line 20\nextra a\nextra b\n", 1)
	data = strings.Replace(data, "changed 5\n", "changed again 5\n", 1)
	testenv.WriteFile(t, f.local, "app.txt", data)
	git(t, f.local, "commit", "--quiet", "-am", "address review")
	f.push(t, "feature")
	newHead := git(t, f.local, "rev-parse", "HEAD")

	comments, _, err := bob.PullRequests.ListComments(f.ctx, owner, repoName, 1, nil)
	require.NoError(t, err)
	require.Len(t, comments, 2)
	on5, on30 := comments[0], comments[1]
	assert.Nil(t, on5.Line, "the commented line changed: outdated, no line")
	assert.Nil(t, on5.Position)
	assert.Equal(t, 5, on5.GetOriginalLine())
	assert.Equal(t, head, on5.GetCommitID())
	assert.Equal(t, 32, on30.GetLine(), "two lines inserted above move the comment down")
	assert.Equal(t, 30, on30.GetOriginalLine())
	assert.Equal(t, newHead, on30.GetCommitID())

	_, body := f.graphql(t, bobToken, threadsQuery, map[string]any{"owner": owner, "name": repoName, "number": 1, "first": 10})
	nodes := dig(t, body, "data", "repository", "pullRequest", "reviewThreads", "nodes").([]any)
	require.Len(t, nodes, 2)
	assert.Equal(t, true, dig(t, nodes[0], "isOutdated"))
	assert.Nil(t, dig(t, nodes[0], "line"))
	assert.Equal(t, false, dig(t, nodes[1], "isOutdated"))
	assert.Equal(t, "32", dig(t, nodes[1], "line").(interface{ String() string }).String())
}
