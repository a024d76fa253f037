package team

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// recordOf is the record a first part of a run left: its coder turns
// (session "coder-session") and review rounds as spawn records them, each
// finding's entry holding its last status.
func recordOf(t *testing.T, f *fakeRun, coded int, lastDone bool) *observability.Record {
	t.Helper()
	rec := observability.New("r1", "fix Add", observability.ModePingpong, time.Now())
	for n := 1; n <= coded; n++ {
		rec.CommandLines = append(rec.CommandLines, observability.CommandLine{Role: observability.RoleCoder, Iteration: n, Session: "coder-session"})
		if n < coded || lastDone {
			rec.CoderMessages = append(rec.CoderMessages, observability.CoderMessage{Iteration: n, Text: "coder turn done"})
		}
	}
	latest := map[string]observability.Finding{}
	for _, r := range f.rounds {
		for _, fd := range r.Findings {
			latest[fd.ID] = fd
		}
		rec.ReviewFeedback = append(rec.ReviewFeedback, r.Feedback...)
	}
	for i := range rec.ReviewFeedback {
		for j, fd := range rec.ReviewFeedback[i].Findings {
			rec.ReviewFeedback[i].Findings[j] = latest[fd.ID]
		}
	}
	return rec
}

func TestARunOutOfRoundsContinuesToApprovalInTheCodersSession(t *testing.T) {
	first := newFake(t, map[string][]string{"all": {
		say("request_changes", nil, highBug),
		say("request_changes", []string{highBug.ID}, lowNit),
	}})
	verdict, err := drive(t, Policy{Mode: observability.ModePingpong, MaxIterations: 2}, first)
	require.NoError(t, err)
	require.Equal(t, observability.VerdictChangesRequested, verdict)
	rec := recordOf(t, first, 2, true)

	from := ProgressOf(rec)
	assert.Equal(t, 2, from.Coded)
	assert.True(t, from.CodedDone)
	assert.Equal(t, 2, from.Reviewed)
	assert.Equal(t, "sha2", from.ReviewedCommit)
	assert.Equal(t, "coder-session", from.Coder)
	require.Len(t, from.Findings, 2)

	next := newFake(t, map[string][]string{"all": {say("approve", []string{lowNit.ID})}})
	next.head = first.head
	verdict, err = Continue(context.Background(), Policy{Mode: observability.ModePingpong, MaxIterations: 2}, "fix Add", "sha0", next, from, 3)
	require.NoError(t, err)
	assert.Equal(t, observability.VerdictApproved, verdict)
	require.Len(t, next.coderPrompts, 1, "one fix turn, then the review")
	assert.Equal(t, []string{"coder-session"}, next.coderResumes, "the coder's session is resumed")
	assert.Contains(t, next.coderPrompts[0], lowNit.Title, "the fix turn has the open finding")
	assert.NotContains(t, next.coderPrompts[0], highBug.Title, "and not the resolved one")
	require.Len(t, next.rounds, 1)
	assert.Equal(t, 3, next.rounds[0].Number, "the loop goes on from the round it stopped at")
	assert.Equal(t, "sha3", next.rounds[0].Feedback[0].Commit)
	assert.Equal(t, observability.FindingResolved, statuses(next.rounds[0])[lowNit.ID])
	assert.Equal(t, []string{""}, next.reviewResumes["all"], "the reviewer starts a new session")
	assert.Contains(t, next.reviewPrompts["all"][0], lowNit.Title, "and is shown the open findings")
}

func TestACutOffFixTurnRunsAgainInTheSameSession(t *testing.T) {
	first := newFake(t, map[string][]string{"all": {say("request_changes", nil, highBug)}})
	_, err := Drive(context.Background(), Policy{Mode: observability.ModePingpong, MaxIterations: 1}, "fix Add", "sha0", first)
	require.NoError(t, err)
	rec := recordOf(t, first, 2, false) // the fix turn of round 2 started, never finished

	from := ProgressOf(rec)
	require.Equal(t, 2, from.Coded)
	require.False(t, from.CodedDone)

	next := newFake(t, map[string][]string{"all": {say("approve", []string{highBug.ID})}})
	next.head = first.head
	verdict, err := Continue(context.Background(), pingpong3, "fix Add", "sha0", next, from, 3)
	require.NoError(t, err)
	assert.Equal(t, observability.VerdictApproved, verdict)
	require.Len(t, next.coderPrompts, 1)
	assert.Contains(t, next.coderPrompts[0], "cut off", "the coder is told its turn was cut off")
	assert.Contains(t, next.coderPrompts[0], highBug.Title, "and asked again for the fix")
	assert.Equal(t, []string{"coder-session"}, next.coderResumes)
	require.Len(t, next.rounds, 1)
	assert.Equal(t, 2, next.rounds[0].Number, "round 2's review was never done: it is now")
}

func TestAnApprovedRunHasNothingToContinue(t *testing.T) {
	first := newFake(t, map[string][]string{"all": {say("approve", nil)}})
	_, err := drive(t, pingpong3, first)
	require.NoError(t, err)
	from := ProgressOf(recordOf(t, first, 1, true))

	next := newFake(t, nil)
	_, err = Continue(context.Background(), pingpong3, "fix Add", "sha0", next, from, 3)
	require.ErrorIs(t, err, ErrNothingToContinue)
	assert.Empty(t, next.coderPrompts, "no turn ran")
	assert.Empty(t, next.rounds)
}

func TestAFinishedSoloRunHasNothingToContinueButACutOffOneDoes(t *testing.T) {
	done := Progress{Coded: 1, CodedDone: true, Coder: "s"}
	require.ErrorIs(t, Continuable(observability.ModeSolo, done), ErrNothingToContinue)

	next := newFake(t, nil)
	_, err := Continue(context.Background(), Policy{Mode: observability.ModeSolo}, "fix Add", "sha0", next, Progress{Coded: 1, Coder: "s"}, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"s"}, next.coderResumes)
	assert.Contains(t, next.coderPrompts[0], "fix Add")
}
