package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name, or rewrites the file
// with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), got, "the golden file %s differs; run with -update if the change is intended", path)
}

// finishedRecord is a run of the given mode that ended with status,
// verdict and exit code, with one commit of the coder's.
func finishedRecord(mode observability.Mode, status observability.Status, verdict observability.Verdict, code int) *observability.Record {
	start := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	rec := observability.New("20261123-070000-ab12", "Fix the failing test in calc.go\n\nIt fails since yesterday.", mode, start)
	rec.Repo, rec.Base, rec.Branch = "/home/ana/calc", "0123456789abcdef0123456789abcdef01234567", "spawn/fix-the-failing-test-20261123-070000-ab12"
	rec.SandboxPath = "/home/ana/calc/.spawn/worktrees/20261123-070000-ab12"
	rec.Commits = []observability.Commit{{SHA: "fedcba9876543210fedcba9876543210fedcba98", Message: "spawn: Fix the failing test in calc.go", Iteration: 1, LLM: observability.LLMSpawn}}
	rec.Usage = observability.Usage{CostUSD: 0.0421, InputTokens: 12000, OutputTokens: 900, Turns: 7, ByAgent: []observability.AgentUsage{
		{LLM: observability.LLMClaude, Role: observability.RoleCoder, Iteration: 1, CostUSD: 0.03, InputTokens: 8000, OutputTokens: 600, Turns: 4},
		{LLM: observability.LLMGemini, Role: observability.RoleReviewer, Iteration: 1, Seat: "all", CostUSD: 0.0121, InputTokens: 4000, OutputTokens: 300, Turns: 1},
		{LLM: observability.LLMClaude, Role: observability.RoleCoder, Iteration: 2, CostUSD: 0, InputTokens: 0, OutputTokens: 0, Turns: 2},
	}}
	rec.CoderMessages = []observability.CoderMessage{{Iteration: 1, Text: "Fixed Add: it subtracted.\n\nThe tests pass now."}}
	rec.Finish(status, code, start.Add(2*time.Minute+3*time.Second))
	rec.Verdict = verdict
	return rec
}

func reviewRound(round int, verdict observability.ReviewVerdict, findings ...observability.Finding) observability.ReviewFeedback {
	return observability.ReviewFeedback{Iteration: round, Reviewer: observability.LLMGemini, Domain: "all", Verdict: verdict, Findings: findings}
}

// A person reading the end of someone else's run sees the outcome in
// words, every finding still open with its severity, place and title, what
// the coder declined and why, grants and denials, the coder's last
// message, the cost per agent, and next steps that are true for that
// outcome.
func TestSummaryTellsWhatToActOn(t *testing.T) {
	negatives := observability.Finding{ID: "f1", Severity: observability.SeverityMedium, Domain: "general_polish", File: "calc_test.go", Line: 5, Title: "No test with negative numbers", Status: observability.FindingResolved}
	overflow := observability.Finding{ID: "f2", Severity: observability.SeverityHigh, Domain: "technical_feasibility", File: "calc.go", Line: 12, Title: "Add overflows on large inputs", Status: observability.FindingOpen}
	naming := observability.Finding{ID: "f3", Severity: observability.SeverityLow, Domain: "general_polish", File: "calc.go", Title: "Rename Add to Sum", Status: observability.FindingOpen}

	approved := finishedRecord(observability.ModePingpong, observability.StatusSucceeded, observability.VerdictApproved, 0)
	approved.ReviewFeedback = []observability.ReviewFeedback{reviewRound(1, observability.ReviewRequestChanges, negatives), reviewRound(2, observability.ReviewApprove)}
	approved.ReviewFeedback[1].ResolvedByApproval = []string{"f1"}

	changes := finishedRecord(observability.ModePingpong, observability.StatusSucceeded, observability.VerdictChangesRequested, 3)
	changes.ReviewFeedback = []observability.ReviewFeedback{reviewRound(1, observability.ReviewRequestChanges, overflow, naming), reviewRound(2, observability.ReviewRequestChanges, overflow, naming)}
	changes.CoderReplies = []observability.CoderReply{{Iteration: 2, FindingID: "f2", Action: observability.CoderFixed, Reason: "checked"}, {Iteration: 2, FindingID: "f3", Action: observability.CoderDeclined, Reason: "Add is public API; renaming it breaks callers"}}
	changes.PermissionsGranted = []observability.PermissionGrant{{LLM: observability.LLMClaude, Iteration: 1, Tool: "Bash", Rule: "Bash(go test:*)"}}
	changes.PermissionsRequested = []observability.PermissionRequest{{LLM: observability.LLMClaude, Iteration: 1, Tool: "Bash", Input: json.RawMessage(`{"command":"curl https://example.com"}`)}}

	reviewFailed := finishedRecord(observability.ModePingpong, observability.StatusSucceeded, observability.VerdictReviewFailed, 3)
	reviewFailed.ReviewFeedback = []observability.ReviewFeedback{{Iteration: 1, Reviewer: observability.LLMGemini, Domain: "all", Verdict: observability.ReviewFailed, ParseError: "no JSON object in the answer"}}

	crashed := finishedRecord(observability.ModePingpong, observability.StatusFailed, observability.VerdictNone, 4)
	crashed.Error = &observability.Error{Kind: "auth", Message: "the model API refused gemini's credentials; set GEMINI_API_KEY or log in to gemini, then run again"}

	solo := finishedRecord(observability.ModeSolo, observability.StatusSucceeded, observability.VerdictNone, 0)

	nothing := finishedRecord(observability.ModeSolo, observability.StatusSucceeded, observability.VerdictNone, 0)
	nothing.Commits = nil

	neverStarted := finishedRecord(observability.ModePingpong, observability.StatusFailed, observability.VerdictNone, 4)
	neverStarted.Branch, neverStarted.SandboxPath, neverStarted.Commits, neverStarted.CoderMessages = "", "", nil, nil
	neverStarted.Error = &observability.Error{Kind: "model_api", Message: "claude could not reach the model API (API Error: Unable to connect to API (ConnectionRefused)); check the API base URL (ANTHROPIC_BASE_URL for claude, GOOGLE_GEMINI_BASE_URL for gemini) or the network, then run again"}
	neverStarted.Notes = []string{"the run failed before the coder changed anything (model_api): its worktree and branch were removed; this record stays"}

	for name, rec := range map[string]*observability.Record{
		"never-started": neverStarted,
		"approved":      approved, "changes-requested": changes, "review-failed": reviewFailed,
		"crashed": crashed, "solo": solo, "nothing-changed": nothing,
	} {
		t.Run(name, func(t *testing.T) {
			golden(t, "summary-"+name+".txt", summary(rec))
		})
	}
}

// The first line names the outcome, never "succeeded" for a run whose
// work was not approved.
func TestSummaryFirstLineNamesTheOutcome(t *testing.T) {
	for verdict, want := range map[observability.Verdict]string{
		observability.VerdictChangesRequested: "changes requested (exit 3)",
		observability.VerdictNotConverged:     "not converged (exit 3)",
		observability.VerdictReviewFailed:     "review failed (exit 3)",
	} {
		got := firstLine(summary(finishedRecord(observability.ModePingpong, observability.StatusSucceeded, verdict, 3)))
		assert.Contains(t, got, want)
		assert.NotContains(t, got, "succeeded")
	}
}

// A github or pr run's summary (spawn show's) names the pull request and
// each of its threads: its state, where, whose, and spawn's last word in
// it or why spawn left it alone.
func TestSummaryShowsThePullRequestAndItsThreads(t *testing.T) {
	reply := func(kind observability.ReplyKind, round int, body string) observability.ThreadReply {
		return observability.ThreadReply{CommentID: 100 + int64(round), Kind: kind, Round: round, Commits: []string{"fedcba9876543210fedcba9876543210fedcba98"}, Body: body}
	}
	github := finishedRecord(observability.ModeGitHub, observability.StatusSucceeded, observability.VerdictApproved, 0)
	url := "https://github.com/acme/calc/pull/3"
	github.PRURL = &url
	github.PullRequest = &observability.PullRequest{Number: 3, URL: url, Head: github.Branch, Base: "main", HeadSHA: "0123456789ab", Author: "spawn-bot"}
	github.GitHubThreads = []observability.GitHubThread{
		{ID: "PRRT_1", CommentID: 11, Author: "spawn-bot", Path: "calc.go", Line: 19, FindingID: "f1", State: observability.ThreadResolved,
			Replies: []observability.ThreadReply{reply(observability.ReplyFixed, 2, "Fixed in fedcba98: verified by review round 2 (at fedcba98).\n\nThe coder: the sum starts from zero")}},
		{ID: "PRRT_2", CommentID: 12, Author: "spawn-bot", Path: "calc.go", Line: 17, FindingID: "f2", State: observability.ThreadFixed,
			Replies: []observability.ThreadReply{reply(observability.ReplyFixed, 2, "Fixed in fedcba98: verified by review round 2 (at fedcba98)."),
				reply(observability.ReplyCannotResolve, 2, "spawn's token cannot resolve review threads: please resolve this one.")}},
	}

	pr := finishedRecord(observability.ModePR, observability.StatusSucceeded, observability.VerdictChangesRequested, 3)
	pr.Task = "Address the review of pull request #1: Add Total"
	url1 := "https://github.com/acme/calc/pull/1"
	pr.PRURL = &url1
	pr.PullRequest = &observability.PullRequest{Number: 1, URL: url1, Head: "feature", Base: "main", HeadSHA: "0123456789ab", Author: "alice"}
	pr.ReviewFeedback = []observability.ReviewFeedback{reviewRound(1, observability.ReviewRequestChanges, observability.Finding{ID: "a1", Severity: observability.SeverityMedium,
		Domain: "general_polish", File: "calc.go", Line: 5, Title: "Explain the sum", Detail: "no comment yet", Status: observability.FindingOpen})}
	pr.GitHubThreads = []observability.GitHubThread{
		{ID: "PRRT_1", CommentID: 1, Author: "bob", Path: "calc.go", Line: 19, FindingID: "b1", State: observability.ThreadFixed,
			Replies: []observability.ThreadReply{reply(observability.ReplyFixed, 1, "Fixed in fedcba98: confirmed by spawn's reviewer in check round 1 (at fedcba98).")}},
		{ID: "PRRT_2", CommentID: 2, Author: "carol", Path: "calc.go", Line: 5, FindingID: "a1", State: observability.ThreadOpen,
			Replies: []observability.ThreadReply{reply(observability.ReplyStillOpen, 1, "Still open after spawn's check round 1 (at fedcba98): no comment yet")}},
		{ID: "PRRT_3", CommentID: 3, Author: "eve", Path: "calc.go", Line: 17, State: observability.ThreadSkipped, Skipped: observability.SkipUntrusted},
		{ID: "PRRT_4", CommentID: 4, Author: "bob", Path: "README.md", State: observability.ThreadSkipped, Skipped: observability.SkipOutdated},
	}
	for name, rec := range map[string]*observability.Record{"github": github, "pr": pr} {
		t.Run(name, func(t *testing.T) {
			golden(t, "summary-"+name+".txt", summary(rec))
		})
	}
}
