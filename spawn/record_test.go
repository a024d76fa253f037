package spawn

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// readRecord reads the record file at path.
func readRecord(t *testing.T, path string) observability.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var rec observability.Record
	require.NoError(t, json.Unmarshal(data, &rec))
	return rec
}

// Events from many goroutines are all in the record on disk once Err has
// returned, secrets redacted; the emitters never waited for the disk.
func TestTheRecordOnDiskHoldsEveryEventOnceErrReturns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.json")
	r := newRecorder(observability.New("run-1", "task", observability.ModeSolo, time.Now()), path, observability.RedactorOf("sk-secret-0123456789"))
	require.NoError(t, r.save())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				r.Event(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("note %d-%d with sk-secret-0123456789", g, i)})
			}
		})
	}
	wg.Wait()
	require.NoError(t, r.Err())
	rec := readRecord(t, path)
	require.Len(t, rec.Notes, 200)
	for _, n := range rec.Notes {
		assert.NotContains(t, n, "sk-secret-0123456789")
	}
	// An event that changes nothing starts no write.
	r.Event(observability.Event{Kind: observability.EventAgent, Agent: &observability.Progress{Kind: observability.ProgressStarted}})
	require.NoError(t, r.Err())
}

// A record that cannot be written is an error Err returns after the event
// that tried; once the cause is gone, the next write holds everything.
func TestARecordWriteErrorIsKeptAndTheNextWriteHoldsEverything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path := filepath.Join(dir, "record.json")
	r := newRecorder(observability.New("run-1", "task", observability.ModeSolo, time.Now()), path, nil)
	require.NoError(t, r.save())
	require.NoError(t, os.RemoveAll(dir))
	r.Event(observability.Event{Kind: observability.EventNote, Text: "lost on disk, kept in memory"})
	err := r.Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot write the record")
	require.NoError(t, os.Mkdir(dir, 0o755))
	r.Event(observability.Event{Kind: observability.EventNote, Text: "second"})
	assert.Error(t, r.Err(), "the first error stays")
	assert.Equal(t, []string{"lost on disk, kept in memory", "second"}, readRecord(t, path).Notes)
	require.NoError(t, r.save())
}
