package forge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/team/github"
)

// given is what spawn reads of env about GitHub (config.ReadEnvironment),
// as Open is given it.
func given(env []string) github.Given { return github.Given(config.ReadEnvironment(env).GitHub) }

const botToken = "ghp_canary_forge_test_8c2f41d9e7"

// fakeRun is the run a hub publishes, without agents: its events, kept,
// and its branch's commits, read with git.
type fakeRun struct {
	repo git.Repo

	mu     sync.Mutex
	events []observability.Event
}

func (f *fakeRun) Emit(e observability.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

func (f *fakeRun) Commits(ctx context.Context, from, to, file string) ([]string, error) {
	args := []string{"log", "--format=%H", from + ".." + to}
	if file != "" {
		args = append(args, "--", file)
	}
	out, err := f.repo.Run(ctx, args...)
	return strings.Fields(out), err
}

func (f *fakeRun) Progress() Progress { return Progress{CostUSD: 0.25} }

// steps are the run's github events, each one's step.
func (f *fakeRun) steps() []observability.GitHubStep {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []observability.GitHubStep
	for _, e := range f.events {
		if e.Kind == observability.EventGitHub {
			out = append(out, *e.GitHub)
		}
	}
	return out
}

// commit writes calc.go on the branch checked out in repo, commits it, and
// returns the commit.
func commit(t *testing.T, repo, src, msg string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "calc.go"), []byte(src), 0o644))
	testenv.Git(t, repo, "add", "calc.go")
	testenv.Git(t, repo, "commit", "--quiet", "-m", msg)
	return testenv.Git(t, repo, "rev-parse", "HEAD")
}

// The forge on its own, told each step of a two-round github-mode run as
// the team loop tells it: it pushes the branch and opens the pull request,
// posts round 1's finding inline, and once round 2 confirms the fix it
// replies naming the fixing commit and the round, then resolves the
// thread; the statuses follow the verdicts.
func TestTheForgeOpensAPullRequestAndResolvesAThreadOnceAReviewConfirmsTheFix(t *testing.T) {
	ctx := t.Context()
	gh := githubfake.New(t)
	require.NoError(t, gh.AddUser("spawn-bot", botToken, githubfake.PermissionWrite))
	repo := testenv.Repo(t)
	require.NoError(t, gh.AddRepo("acme", "calc", "main", githubfake.SeedFrom(repo)))
	testenv.Git(t, repo, "remote", "add", "origin", gh.RemoteURL("acme", "calc"))
	testenv.Git(t, repo, "fetch", "--quiet", "origin")
	base := testenv.Git(t, repo, "rev-parse", "HEAD")
	testenv.Git(t, repo, "checkout", "--quiet", "-b", "spawn/run1/total")
	head1 := commit(t, repo, "package calc\n\nfunc Total(xs []int) int {\n\tt := 1\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n}\n", "add Total")

	env := testenv.Env(t, "GITHUB_REPOSITORY=acme/calc", "GITHUB_API_URL="+gh.URL(), "GITHUB_TOKEN="+botToken)
	h, err := Open(ctx, Settings{Remote: "origin"}, repo, "main", env, given(env))
	require.NoError(t, err)
	run := &fakeRun{repo: git.Repo{Dir: repo, Env: env}}
	h.Attach(run, Work{ID: "run1", Task: "add the total function", Redactor: observability.NewRedactor(env),
		Repo: run.repo, Branch: "spawn/run1/total", Base: base})

	// Round 1: the coder's work is pushed, the pull request opened, the
	// finding posted on its line.
	require.NoError(t, h.AfterCode(ctx, 1, nil))
	prs := gh.PullRequests("acme", "calc")
	require.Len(t, prs, 1)
	pr := prs[0]
	assert.Equal(t, "add the total function", pr.Title)
	assert.Equal(t, "spawn/run1/total", pr.Head)
	assert.Equal(t, "main", pr.Base)
	assert.Equal(t, head1, pr.HeadSHA)
	assert.Contains(t, pr.Body, "**spawn** run `run1`: round 1's work is pushed; the review comes next.")
	require.NoError(t, h.BeforeReview(ctx, 1, head1))
	bug := observability.Finding{ID: "f-total-one", Severity: observability.SeverityHigh, Domain: "correctness", File: "calc.go", Line: 4,
		Title: "Total starts at one", Detail: "t must start at 0; cc @octocat", Status: observability.FindingOpen}
	require.NoError(t, h.AfterReview(ctx, observability.Round{Number: 1, Findings: []observability.Finding{bug},
		Feedback: []observability.ReviewFeedback{{Iteration: 1, Domain: "all", Verdict: observability.ReviewRequestChanges, Summary: "one bug", Findings: []observability.Finding{bug}}}}))
	threads := gh.Threads("acme", "calc", pr.Number)
	require.Len(t, threads, 1)
	assert.Equal(t, "calc.go", threads[0].Path)
	assert.Equal(t, 4, threads[0].Line)
	assert.False(t, threads[0].Resolved)
	root := threads[0].CommentIDs[0]
	first := gh.ReviewComments("acme", "calc", pr.Number)[0]
	assert.Contains(t, first.Body, "cc @\u200boctocat", "a reviewer's words ping no one")

	// Round 2: the fix is pushed, the review confirms it: the thread gets
	// its reply, then is resolved.
	head2 := commit(t, repo, "package calc\n\nfunc Total(xs []int) int {\n\tt := 0\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n}\n", "start at zero")
	said := []prompts.Attribution{{FindingID: bug.ID, Action: observability.CoderFixed, Words: "t starts at 0 now"}}
	require.NoError(t, h.AfterCode(ctx, 2, said))
	require.NoError(t, h.BeforeReview(ctx, 2, head2))
	fixed := bug
	fixed.Status = observability.FindingResolved
	require.NoError(t, h.AfterReview(ctx, observability.Round{Number: 2, Findings: []observability.Finding{fixed},
		Feedback: []observability.ReviewFeedback{{Iteration: 2, Domain: "all", Verdict: observability.ReviewApprove, Summary: "fixed", Resolved: []string{bug.ID}}}}))
	require.NoError(t, h.AfterLoop(ctx, observability.VerdictApproved))

	threads = gh.Threads("acme", "calc", pr.Number)
	require.Len(t, threads, 1)
	assert.True(t, threads[0].Resolved)
	var replies []string
	for _, c := range gh.ReviewComments("acme", "calc", pr.Number) {
		if c.InReplyTo == root {
			replies = append(replies, c.Body)
		}
	}
	require.Len(t, replies, 1)
	assert.Contains(t, replies[0], "Fixed in "+head2[:12]+": verified by review round 2 (at "+head2[:12]+").")
	assert.Contains(t, replies[0], "The coder: t starts at 0 now")

	var states []string
	for _, s := range gh.Statuses("acme", "calc", head1) {
		states = append(states, s.State)
	}
	assert.Equal(t, []string{"pending", "failure"}, states)
	states = nil
	for _, s := range gh.Statuses("acme", "calc", head2) {
		states = append(states, s.State)
	}
	assert.Equal(t, []string{"pending", "success"}, states)
	got, _ := gh.PullRequest("acme", "calc", pr.Number)
	assert.Contains(t, got.Body, "the run ended: approved")
	assert.Contains(t, got.Body, "cost so far: $0.2500")

	// The run's record hears every step: the pushes, the pull request,
	// the review, the resolved thread.
	var pushed []string
	var resolved []observability.ResolvedComment
	for _, s := range run.steps() {
		if s.Pushed != "" {
			pushed = append(pushed, s.Pushed)
		}
		if s.Resolved != nil {
			resolved = append(resolved, *s.Resolved)
		}
	}
	assert.Equal(t, []string{head1, head2}, pushed)
	require.Len(t, resolved, 1)
	assert.True(t, resolved[0].Resolved)
	assert.Equal(t, bug.ID, resolved[0].FindingID)
	assert.Equal(t, observability.ResolvedByVerification, resolved[0].ResolvedBy)
	assert.Empty(t, gh.Problems())
}

// A push of a change to CI configuration is refused before anything
// reaches GitHub: the error names the file and what to do, and no pull
// request is opened.
func TestTheForgeRefusesToPushAWorkflow(t *testing.T) {
	ctx := t.Context()
	gh := githubfake.New(t)
	require.NoError(t, gh.AddUser("spawn-bot", botToken, githubfake.PermissionWrite))
	repo := testenv.Repo(t)
	require.NoError(t, gh.AddRepo("acme", "calc", "main", githubfake.SeedFrom(repo)))
	testenv.Git(t, repo, "remote", "add", "origin", gh.RemoteURL("acme", "calc"))
	base := testenv.Git(t, repo, "rev-parse", "HEAD")
	testenv.Git(t, repo, "checkout", "--quiet", "-b", "spawn/run2/ci")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".github", "workflows"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".github", "workflows", "x.yml"), []byte("on: push\n"), 0o644))
	testenv.Git(t, repo, "add", "-A")
	testenv.Git(t, repo, "commit", "--quiet", "-m", "ci")

	env := testenv.Env(t, "GITHUB_REPOSITORY=acme/calc", "GITHUB_API_URL="+gh.URL(), "GITHUB_TOKEN="+botToken)
	h, err := Open(ctx, Settings{Remote: "origin"}, repo, "main", env, given(env))
	require.NoError(t, err)
	run := &fakeRun{repo: git.Repo{Dir: repo, Env: env}}
	h.Attach(run, Work{ID: "run2", Task: "ci", Redactor: observability.NewRedactor(env), Repo: run.repo, Branch: "spawn/run2/ci", Base: base})
	err = h.AfterCode(ctx, 1, nil)
	var fe *Error
	require.ErrorAs(t, err, &fe)
	var ce *CIChangeError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{".github/workflows/x.yml"}, ce.Paths)
	assert.Contains(t, err.Error(), "set [github] allow_ci_changes = true")
	assert.Empty(t, gh.PullRequests("acme", "calc"))
	assert.NotContains(t, testenv.Git(t, repo, "ls-remote", "origin"), "spawn/run2/ci")
}
