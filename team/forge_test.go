package team

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
)

// forgeRun is a fake run in github mode: the scripted agents, and a log of
// what the forge was told, in order.
type forgeRun struct {
	*fakeRun
	calls []string
	fail  string // the call that fails, e.g. "AfterReview 1"
}

func (f *forgeRun) log(call string) error {
	f.calls = append(f.calls, call)
	if call == f.fail {
		return fmt.Errorf("github said no to %s", call)
	}
	return nil
}

func (f *forgeRun) AfterCode(_ context.Context, round int, said []prompts.Attribution) error {
	call := fmt.Sprintf("AfterCode %d", round)
	for _, a := range said {
		call += fmt.Sprintf(" %s=%s(%s: %s)", a.FindingID[:4], a.Action, a.By, a.Words)
	}
	return f.log(call)
}

func (f *forgeRun) BeforeReview(_ context.Context, round int, head string) error {
	return f.log(fmt.Sprintf("BeforeReview %d %s", round, head))
}

func (f *forgeRun) AfterReview(_ context.Context, r observability.Round) error {
	return f.log(fmt.Sprintf("AfterReview %d", r.Number))
}

func (f *forgeRun) AfterLoop(_ context.Context, verdict observability.Verdict) error {
	return f.log(fmt.Sprintf("AfterLoop %s", verdict))
}

func TestGitHubModeIsPingpongToldToTheForgeStepByStep(t *testing.T) {
	f := &forgeRun{fakeRun: newFake(t, map[string][]string{"all": {
		say("request_changes", nil, highBug),
		say("approve", []string{highBug.ID}),
	}})}
	f.says = map[int]string{1: highBug.ID + ": fixed - Add adds now"}
	verdict, err := Drive(context.Background(), Policy{Mode: observability.ModeGitHub, MaxIterations: 3}, "fix Add", "sha0", f)
	require.NoError(t, err)
	assert.Equal(t, observability.VerdictApproved, verdict)
	id := highBug.ID[:4]
	assert.Equal(t, []string{
		"AfterCode 1",
		"BeforeReview 1 sha1",
		"AfterReview 1",
		"AfterCode 2 " + id + "=fixed(contract: Add adds now)",
		"BeforeReview 2 sha2",
		"AfterReview 2",
		"AfterLoop approved",
	}, f.calls)
	assert.Len(t, f.rounds, 2, "the record gets every round as in pingpong")
}

func TestAForgeFailureEndsTheLoop(t *testing.T) {
	f := &forgeRun{fakeRun: newFake(t, map[string][]string{"all": {say("request_changes", nil, highBug)}}), fail: "AfterReview 1"}
	verdict, err := Drive(context.Background(), Policy{Mode: observability.ModeGitHub, MaxIterations: 3}, "fix Add", "sha0", f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "github said no to AfterReview 1")
	assert.Equal(t, observability.VerdictNone, verdict)
	assert.Len(t, f.coderPrompts, 1, "no fix turn after the failure")
}

func TestGitHubModeNeedsAForge(t *testing.T) {
	_, err := Drive(context.Background(), Policy{Mode: observability.ModeGitHub, MaxIterations: 3}, "fix Add", "sha0", newFake(t, nil))
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrNothingToContinue))
}

// A coder that answers in prose, not the reply contract, still has its
// words handed to the forge for the finding its prose names.
func TestTheForgeHearsACodersProse(t *testing.T) {
	f := &forgeRun{fakeRun: newFake(t, map[string][]string{"all": {
		say("request_changes", nil, highBug, lowNit),
		say("approve", []string{highBug.ID, lowNit.ID}),
	}})}
	f.says = map[int]string{1: "Fixed both: Add subtracts no more (it adds), and the name is clearer now."}
	verdict, err := Drive(context.Background(), Policy{Mode: observability.ModeGitHub, MaxIterations: 3}, "fix Add", "sha0", f)
	require.NoError(t, err)
	assert.Equal(t, observability.VerdictApproved, verdict)
	assert.Contains(t, f.calls, "AfterCode 2 "+highBug.ID[:4]+"=(title: Fixed both: Add subtracts no more (it adds), and the name is clearer now)",
		"the prose names one finding by its title; the other is not named")
}
