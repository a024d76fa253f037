package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// A run with many rounds, findings and commits still fits a host's
// context: the result is trimmed under maxResultBytes, keeps the most
// severe open findings and says what it left out; transcripts and the
// reviewers' raw answers are never in it.
func TestResultIsTrimmedToFitAHostsContext(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	rec := observability.New("20261123-090000-aaaa", strings.Repeat("a long task. ", 1000), observability.ModePingpong, t0)
	rec.Branch = "spawn/x"
	for round := 1; round <= 10; round++ {
		fb := observability.ReviewFeedback{Iteration: round, RawResponse: "RAW " + strings.Repeat("x", 50_000)}
		for i := range 40 {
			sev := observability.Severity("low")
			if i == 0 {
				sev = "critical"
			}
			status := observability.FindingResolved
			if round == 10 {
				status = observability.FindingOpen
			}
			fb.Findings = append(fb.Findings, observability.Finding{ID: fmt.Sprintf("r%d-f%d", round, i), Severity: sev, File: "a.go", Line: i,
				Title: strings.Repeat("title ", 60), Detail: strings.Repeat("detail ", 400), Suggestion: strings.Repeat("fix ", 200), Status: status})
		}
		rec.ReviewFeedback = append(rec.ReviewFeedback, fb)
	}
	for i := range 500 {
		rec.Commits = append(rec.Commits, observability.Commit{SHA: fmt.Sprintf("%040d", i), Message: strings.Repeat("subject ", 50) + "\n\nbody", Iteration: 1})
	}
	res := trim(resultOf(rec, "/r/.spawn/runs/x/record.json", t0.Add(time.Hour)))
	b, err := json.Marshal(res)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), maxResultBytes)
	assert.NotContains(t, string(b), "RAW ")
	assert.Contains(t, res.Omitted, "the record has everything")
	require.NotEmpty(t, res.OpenFindings)
	assert.Equal(t, "critical", res.OpenFindings[0].Severity, "the most severe finding stays")
	assert.Equal(t, 10, res.Rounds)
	assert.Equal(t, fmt.Sprintf("%040d", 499), res.Commits[len(res.Commits)-1].SHA, "the newest commits stay")
	t.Logf("a 10-round, 400-finding, 500-commit run: %d bytes (~%d tokens); %s", len(b), len(b)/4, res.Omitted)
}

func TestSmallResultIsWhole(t *testing.T) {
	rec := observability.New("id", "task", observability.ModeSolo, time.Now())
	res := trim(resultOf(rec, "/r", time.Now()))
	assert.Empty(t, res.Omitted)
	assert.NotNil(t, res.Commits)
	assert.NotNil(t, res.OpenFindings)
}

// The result names the run's cassette, beside its record, so a host can
// hand it on with spawn replay; a run without one names none.
func TestResultNamesTheCassette(t *testing.T) {
	rec := observability.New("20261123-090000-aaaa", "task", observability.ModePingpong, time.Now())
	assert.Empty(t, resultOf(rec, "/r/.spawn/runs/20261123-090000-aaaa/record.json", time.Now()).Cassette)
	rec.Cassette = &observability.Cassette{Path: "cassette.jsonl.gz", Bytes: 1000, Exchanges: 7}
	res := resultOf(rec, "/r/.spawn/runs/20261123-090000-aaaa/record.json", time.Now())
	assert.Equal(t, "/r/.spawn/runs/20261123-090000-aaaa/cassette.jsonl.gz", res.Cassette)
}
