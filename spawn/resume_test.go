package spawn

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

func TestResumeOfARunOutOfRoundsContinuesToApprovalInTheSameSession(t *testing.T) {
	bug := finding("high", "technical_feasibility", "calc.go", 19, "Total starts from one")
	r := runTeam(t, observability.ModePingpong, modelserver.Scenario{
		Anthropic: []modelserver.Script{coderTurns(5)},
		Gemini: reviewRounds(
			answer("request_changes", nil, bug),
			answer("approve", []string{bug.ID}),
		),
	}, func(c *config.Config) { c.Team.MaxIterations = 1 })
	require.Equal(t, observability.VerdictChangesRequested, r.rec.Verdict)
	require.Equal(t, fault.ExitNotApproved, r.exitCode())
	first := *r.rec

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rec, err := Resume(ctx, ResumeOptions{Ref: "last", Config: r.cfg, RepoDir: r.repo, Env: r.env}, nil)
	require.NoError(t, err)
	assert.Equal(t, first.ID, rec.ID, "the same run goes on")
	assert.Equal(t, observability.VerdictApproved, rec.Verdict)
	assert.Equal(t, observability.StatusSucceeded, rec.Status)
	assert.Equal(t, 0, rec.ExitCode)

	// The record holds both parts: round 1 as it was, round 2 after it.
	require.Len(t, rec.ReviewFeedback, 2)
	assert.Equal(t, 1, rec.ReviewFeedback[0].Iteration)
	assert.Equal(t, 2, rec.ReviewFeedback[1].Iteration)
	assert.Equal(t, []string{bug.ID}, rec.ReviewFeedback[1].Resolved)
	require.Len(t, rec.Resumes, 1)
	assert.Equal(t, observability.VerdictChangesRequested, rec.Resumes[0].FromVerdict)
	assert.Equal(t, fault.ExitNotApproved, rec.Resumes[0].FromExitCode)
	assert.Equal(t, 2, rec.Resumes[0].Round)
	assert.Equal(t, first.CommandLines, rec.CommandLines[:len(first.CommandLines)], "nothing recorded before is rewritten")
	assert.Equal(t, first.Commits, rec.Commits[:len(first.Commits)])

	// The coder's fix ran in its resumed session: claude --resume with the
	// first part's session id, and the model saw one session throughout.
	var coder []observability.CommandLine
	for _, c := range rec.CommandLines {
		if c.Role == observability.RoleCoder {
			coder = append(coder, c)
		}
	}
	require.Len(t, coder, 2)
	require.NotEmpty(t, coder[0].Session)
	assert.Equal(t, coder[0].Session, coder[1].Session)
	assert.Contains(t, coder[1].Argv, "--resume")
	sessions := map[string]bool{}
	for _, req := range r.srv.Requests() {
		if req.API == modelserver.APIAnthropic && req.Main {
			sessions[req.SessionID] = true
		}
	}
	assert.Equal(t, map[string]bool{coder[0].Session: true}, sessions, "every coder request is in the one session")

	// The fix is on the branch.
	assert.Contains(t, testenv.Git(t, r.repo, "show", rec.Branch+":calc.go"), "t := 0")

	// An approved run has nothing left to resume: exit 2, nothing changes.
	again, err := Resume(ctx, ResumeOptions{Ref: rec.ID[:10], Config: r.cfg, RepoDir: r.repo, Env: r.env}, nil)
	require.Error(t, err)
	assert.Equal(t, fault.ExitUsage, ExitCode(err, again.Verdict))
	assert.Contains(t, err.Error(), "approved")
}
