package runs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// A person following a run (spawn logs -f, spawn ps) sees each event
// within milliseconds, redacted; a firehose of events lands whole and in
// order, in far fewer writes than events.
func TestTheEventLogShowsEveryEventSoonWholeAndInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	red := observability.NewRedactor([]string{"ANTHROPIC_API_KEY=sk-ant-secret-0123456789"})
	l, err := OpenEventLog(path, red)
	require.NoError(t, err)

	l.Event(observability.Event{Kind: observability.EventNote, Text: "the key sk-ant-secret-0123456789"})
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && bytes.Count(b, []byte("\n")) == 1
	}, 5*time.Second, time.Millisecond, "an event waits in the log")

	for i := range 5000 {
		l.Event(observability.Event{Kind: observability.EventNote, Text: strings.Repeat("x", i%100)})
	}
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "sk-ant-secret")
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 5001)
	for i, line := range lines[1:] {
		var e observability.Event
		require.NoError(t, json.Unmarshal([]byte(line), &e), "line %d", i+2)
		require.Equal(t, strings.Repeat("x", i%100), e.Text, "line %d", i+2)
	}
}

// An event of megabytes (an agent's final text) is written whole, and the
// log keeps no buffer of its size for the rest of the run.
func TestTheEventLogKeepsNoBufferOfAHugeEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := OpenEventLog(path, observability.NewRedactor(nil))
	require.NoError(t, err)
	big := strings.Repeat("said a lot. ", 200_000)
	l.Event(observability.Event{Kind: observability.EventNote, Text: big})
	l.Event(observability.Event{Kind: observability.EventNote, Text: "after"})
	l.mu.Lock()
	assert.LessOrEqual(t, cap(l.buf), maxKept)
	assert.LessOrEqual(t, cap(l.line), maxKept)
	l.mu.Unlock()
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 2)
	var e observability.Event
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &e))
	assert.Equal(t, big, e.Text)
}
