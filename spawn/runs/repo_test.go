package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

// A run whose spawn died (its record says running, no process holds its
// lock) is repaired by the next command: the work its coder left
// uncommitted is committed on its branch, its record is finished as
// interrupted with exit code 130, and its event stream ends with the
// finished event.
func TestRepairCommitsAnAbandonedRunsWorkAndFinishesItsRecord(t *testing.T) {
	repo := cleanRepo(t)
	run := newTestRun(t, repo, "20250101-000000-aaaa", "", time.Now())
	dir, err := repo.Registry.Acquire(run.ID)
	require.NoError(t, err)
	rec, err := dir.ReadRecord()
	require.NoError(t, err)
	rec.Status, rec.FinishedAt, rec.Error = observability.StatusRunning, nil, nil
	require.NoError(t, observability.WriteFile(dir.RecordPath(), rec, nil))
	require.NoError(t, dir.Close())
	require.NoError(t, os.WriteFile(filepath.Join(run.Worktree, "left.txt"), []byte("half done\n"), 0o644))
	e, err := repo.Find(run.ID)
	require.NoError(t, err)
	require.Equal(t, StateAbandoned, e.State)

	now := time.Date(2025, 1, 1, 0, 5, 0, 0, time.UTC)
	repaired, err := repo.Repair(context.Background(), func() time.Time { return now })
	require.NoError(t, err)
	require.Len(t, repaired, 1)
	rp := repaired[0]
	assert.Equal(t, run.ID, rp.ID)
	assert.Equal(t, run.Branch, rp.Branch)
	require.NotEmpty(t, rp.Saved, "the uncommitted work was committed")
	show, err := repo.Git.Run(context.Background(), "show", run.Branch+":left.txt")
	require.NoError(t, err)
	assert.Equal(t, "half done", show)

	rec, err = e.ReadRecord()
	require.NoError(t, err)
	assert.Equal(t, observability.StatusInterrupted, rec.Status)
	assert.Equal(t, fault.ExitInterrupted, rec.ExitCode)
	require.NotNil(t, rec.Error)
	assert.Equal(t, string(fault.KindInterrupted), rec.Error.Kind)
	assert.Equal(t, "the spawn process running it died before the run finished; the work it left is committed on "+run.Branch+"; `spawn resume "+run.ID+"` continues it", rec.Error.Message)
	require.NotEmpty(t, rec.Commits)
	assert.Equal(t, rp.Saved, rec.Commits[len(rec.Commits)-1].SHA)
	assert.Equal(t, observability.LLMSpawn, rec.Commits[len(rec.Commits)-1].LLM)

	events, err := os.ReadFile(e.EventsPath())
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSpace(events), []byte("\n"))
	var last observability.Event
	require.NoError(t, json.Unmarshal(lines[len(lines)-1], &last))
	assert.Equal(t, observability.EventFinished, last.Kind)
	require.NotNil(t, last.Outcome)
	assert.Equal(t, fault.ExitInterrupted, last.Outcome.ExitCode)

	// Nothing is left to repair: the next command lists the run finished.
	repaired, err = repo.Repair(context.Background(), time.Now)
	require.NoError(t, err)
	assert.Empty(t, repaired)
	entries, err := repo.List()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, StateFinished, entries[0].State)
}
