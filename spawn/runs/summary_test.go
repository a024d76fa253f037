package runs_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/runstest"
)

// summaryOf is what DecodeSummary must find, taken from the whole record.
func summaryOf(rec *observability.Record) *runs.Summary {
	s := &runs.Summary{
		ID: rec.ID, Task: rec.Task, Mode: rec.Mode, Status: rec.Status, Verdict: rec.Verdict,
		ExitCode: rec.ExitCode, Branch: rec.Branch, StartedAt: rec.StartedAt, FinishedAt: rec.FinishedAt,
		PRURL: rec.PRURL, Error: rec.Error, CostUSD: rec.Usage.CostUSD,
	}
	for _, fb := range rec.ReviewFeedback {
		s.Rounds = max(s.Rounds, fb.Iteration)
	}
	return s
}

func TestSummaryIsWhatTheWholeRecordSays(t *testing.T) {
	at := time.Date(2025, 2, 3, 4, 5, 6, 7, time.UTC)
	realistic := runstest.Record("20250203-040506-abcd", at, observability.StatusSucceeded)
	odd := runstest.Record("20250203-040506-abce", at, observability.StatusFailed)
	odd.Task = "quote \" backslash \\ brace } bracket ] newline \n unicode é 🚀 <html>"
	pr := "https://github.com/o/r/pull/7"
	odd.PRURL = &pr
	odd.Error = &observability.Error{Kind: "agent_crashed", Message: `claude said "}]"`}
	odd.ReviewFeedback[0].RawResponse = `{"a": ["}", "\\", "\""]}`
	odd.ReviewFeedback[1].Iteration = 5
	bare := observability.New("20250203-040506-abcf", "", observability.ModeSolo, at)

	for _, rec := range []*observability.Record{realistic, odd, bare} {
		b, err := observability.Encode(rec, nil)
		require.NoError(t, err)
		got, err := runs.DecodeSummary(b)
		require.NoError(t, err, rec.ID)
		var whole observability.Record
		require.NoError(t, json.Unmarshal(b, &whole))
		assert.Equal(t, summaryOf(&whole), got, rec.ID)

		// Compact JSON reads the same as indented.
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, b))
		got, err = runs.DecodeSummary(compact.Bytes())
		require.NoError(t, err, rec.ID)
		assert.Equal(t, summaryOf(&whole), got, rec.ID)
	}
	assert.Equal(t, 5, summaryOf(odd).Rounds)
}
