package cli

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

func TestParseProgress(t *testing.T) {
	for _, m := range progressModes() {
		got, err := parseProgress(string(m))
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	_, err := parseProgress("xml")
	assert.Equal(t, fault.KindUsage, spawn.KindOf(err))
	assert.Contains(t, err.Error(), "auto, human, json or none")
}

// TestJSONProgressWritesSchemaValidLines feeds the sink events of every
// shape a run emits and validates each line against the events schema.
func TestJSONProgressWritesSchemaValidLines(t *testing.T) {
	_, schema := compileSchemasForTest(t)

	at := time.Date(2026, 11, 23, 9, 31, 0, 0, time.UTC)
	var out bytes.Buffer
	d := &deps{io: IO{Err: &out}}
	sink := d.progressSink(progressJSON, true, false)
	events := []observability.Event{
		{Time: at, Run: "r1", Kind: observability.EventStarted, Record: observability.New("r1", "t", observability.ModeSolo, at)},
		{Time: at, Run: "r1", Kind: observability.EventPhase, Phase: observability.PhaseCoder, Round: 1},
		{Time: at, Run: "r1", Kind: observability.EventNote, Text: "a note"},
		{Time: at, Run: "r1", Kind: observability.EventAgent, Role: observability.RoleCoder, LLM: observability.LLMClaude, Round: 1, RunCostUSD: 0.01,
			Agent: &observability.Progress{Kind: observability.ProgressTool, Tool: "Write", Input: []byte(`{"file_path":"a"}`), Turns: 1, Process: 1}},
		{Time: at, Run: "r1", Kind: observability.EventCommit, Commit: &observability.Commit{SHA: "abc", Message: "m", Iteration: 1, LLM: observability.LLMSpawn}},
		{Time: at, Run: "r1", Kind: observability.EventFinished, Outcome: &observability.Outcome{Status: observability.StatusSucceeded, Verdict: observability.VerdictNone}},
	}
	for _, e := range events {
		sink.Event(e)
	}
	sink.Close()

	sc := bufio.NewScanner(&out)
	n := 0
	for sc.Scan() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
		require.NoError(t, err, "line %d is one JSON object", n+1)
		assert.NoError(t, schema.Validate(doc), "%s", sc.Bytes())
		n++
	}
	assert.Equal(t, len(events), n, "one line per event")
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(b []byte) (int, error) {
	w.n++
	return 0, errors.New("broken pipe")
}

func TestJSONProgressStopsAfterAFailedWrite(t *testing.T) {
	w := &failingWriter{}
	p := &jsonProgress{w: w}
	p.Event(observability.Event{Kind: observability.EventNote, Text: "one"})
	p.Event(observability.Event{Kind: observability.EventNote, Text: "two"})
	assert.Equal(t, 1, w.n, "no write after the reader went away")
	assert.ErrorContains(t, p.err, "broken pipe")
}
