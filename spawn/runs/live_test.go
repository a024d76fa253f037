package runs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// liveRun is a run directory whose events.ndjson holds events, one a
// line, as a run writes them; raw is appended as it is.
func liveRun(t *testing.T, raw string, events ...observability.Event) Paths {
	t.Helper()
	p := Paths{ID: "20260101-000000-abcd", Dir: t.TempDir()}
	var b strings.Builder
	for _, e := range events {
		line, err := json.Marshal(e)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteString(raw)
	require.NoError(t, os.WriteFile(p.EventsPath(), []byte(b.String()), 0o644))
	return p
}

var liveT0 = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

func coderTool(at time.Duration, turns int, cost float64, tool, input string) observability.Event {
	return observability.Event{Time: liveT0.Add(at), Kind: observability.EventAgent, Role: observability.RoleCoder, LLM: observability.LLMClaude, RunCostUSD: cost,
		Agent: &observability.Progress{Kind: observability.ProgressTool, Turns: turns, CostUSD: cost, Tool: tool, Input: json.RawMessage(input)}}
}

func coderText(at time.Duration, turns int, cost float64, text string) observability.Event {
	return observability.Event{Time: liveT0.Add(at), Kind: observability.EventAgent, Role: observability.RoleCoder, LLM: observability.LLMClaude, RunCostUSD: cost,
		Agent: &observability.Progress{Kind: observability.ProgressText, Turns: turns, CostUSD: cost, Detail: text}}
}

func TestReadLiveSaysThePhaseTurnCostAndLastAction(t *testing.T) {
	p := liveRun(t, "",
		observability.Event{Time: liveT0, Kind: observability.EventStarted},
		observability.Event{Time: liveT0, Kind: observability.EventPhase, Phase: observability.PhaseSandbox, Text: "/repo/.spawn/worktrees/x"},
		observability.Event{Time: liveT0, Kind: observability.EventPhase, Phase: observability.PhaseCoder, Round: 1},
		coderTool(time.Second, 1, 0.01, "Read", `{"file_path":"/repo/.spawn/worktrees/x/main.go"}`),
		coderTool(2*time.Second, 2, 0.02, "Edit", `{"file_path":"/repo/.spawn/worktrees/x/main.go"}`),
		coderText(3*time.Second, 3, 0.03, "Done."),
	)
	live, err := ReadLive(p)
	require.NoError(t, err)
	assert.Equal(t, observability.PhaseCoder, live.Phase)
	assert.Equal(t, 1, live.Round)
	assert.Equal(t, 3, live.Turns)
	assert.InDelta(t, 0.03, live.CostUSD, 1e-9)
	assert.Equal(t, observability.RoleCoder, live.Role)
	assert.Equal(t, "Edit", live.Tool)
	assert.JSONEq(t, `{"file_path":"/repo/.spawn/worktrees/x/main.go"}`, string(live.Input))
	assert.Equal(t, "/repo/.spawn/worktrees/x", live.Sandbox)
	assert.False(t, live.Finished)
	assert.Equal(t, liveT0.Add(3*time.Second), live.Updated)
}

// While the reviewer works, the turn is still the coder's, the cost is
// the run's total (which never goes down), and the last action the
// reviewer's.
func TestReadLiveDuringAReview(t *testing.T) {
	p := liveRun(t, "",
		observability.Event{Time: liveT0, Kind: observability.EventPhase, Phase: observability.PhaseCoder, Round: 1},
		coderTool(time.Second, 4, 0.05, "Write", `{"file_path":"a.go"}`),
		observability.Event{Time: liveT0.Add(2 * time.Second), Kind: observability.EventSession, Role: observability.RoleCoder, RunCostUSD: 0.06},
		observability.Event{Time: liveT0.Add(3 * time.Second), Kind: observability.EventPhase, Phase: observability.PhaseReviewer, Round: 1, Seat: "all"},
		observability.Event{Time: liveT0.Add(4 * time.Second), Kind: observability.EventAgent, Role: observability.RoleReviewer, RunCostUSD: 0.07,
			Agent: &observability.Progress{Kind: observability.ProgressTool, Turns: 1, Tool: "read_file", Input: json.RawMessage(`{"path":"a.go"}`)}},
	)
	live, err := ReadLive(p)
	require.NoError(t, err)
	assert.Equal(t, observability.PhaseReviewer, live.Phase)
	assert.Equal(t, "all", live.Seat)
	assert.Equal(t, 4, live.Turns)
	assert.InDelta(t, 0.07, live.CostUSD, 1e-9)
	assert.Equal(t, observability.RoleReviewer, live.Role)
	assert.Equal(t, "read_file", live.Tool)
}

// The run is writing its last line: ReadLive reads up to the last whole
// line, and skips a line that is not an event.
func TestReadLiveSkipsAPartialLastLineAndJunk(t *testing.T) {
	p := liveRun(t, `{"time":"2026-01-01T09:00:09Z","kind":"agent","role":"coder","agent":{"kind":"tool","tool":"Ba`,
		observability.Event{Time: liveT0, Kind: observability.EventPhase, Phase: observability.PhaseFixing, Round: 2},
		coderTool(time.Second, 7, 0.2, "Bash", `{"command":"go test ./..."}`),
	)
	f, err := os.OpenFile(p.EventsPath(), os.O_RDWR, 0)
	require.NoError(t, err)
	content, err := os.ReadFile(p.EventsPath())
	require.NoError(t, err)
	// A line of junk between the events.
	i := strings.Index(string(content), "\n") + 1
	_, err = f.WriteAt([]byte(string(content[:i])+"not json\n"+string(content[i:])), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	live, err := ReadLive(p)
	require.NoError(t, err)
	assert.Equal(t, observability.PhaseFixing, live.Phase)
	assert.Equal(t, 2, live.Round)
	assert.Equal(t, "Bash", live.Tool)
	assert.JSONEq(t, `{"command":"go test ./..."}`, string(live.Input))
	assert.Equal(t, 7, live.Turns)
}

// A Write of a large file is an event line bigger than the 64 KiB window:
// ReadLive reads further back rather than lose the last action; the many
// events before it are not read at all.
func TestReadLiveFindsALastActionBiggerThanItsWindow(t *testing.T) {
	var events []observability.Event
	events = append(events, observability.Event{Time: liveT0, Kind: observability.EventPhase, Phase: observability.PhaseCoder, Round: 1})
	for i := range 2000 {
		events = append(events, coderText(time.Second, i, 0.01, "thinking about it"))
	}
	content := strings.Repeat("x", 200<<10)
	input, err := json.Marshal(map[string]string{"file_path": "big.txt", "content": content})
	require.NoError(t, err)
	events = append(events, coderTool(2*time.Second, 2001, 0.5, "Write", string(input)),
		observability.Event{Time: liveT0.Add(3 * time.Second), Kind: observability.EventCommit, Commit: &observability.Commit{SHA: "abc"}})
	p := liveRun(t, "", events...)
	fi, err := os.Stat(p.EventsPath())
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(maxLiveWindow)/16, "the stream is much bigger than the first window")

	live, err := ReadLive(p)
	require.NoError(t, err)
	assert.Equal(t, "Write", live.Tool)
	assert.Equal(t, 2001, live.Turns)
	assert.Equal(t, observability.PhaseCoder, live.Phase)
	assert.InDelta(t, 0.5, live.CostUSD, 1e-9)
}

func TestReadLiveOfARunThatHasNotStartedOrHasEnded(t *testing.T) {
	p := Paths{ID: "20260101-000000-abcd", Dir: filepath.Join(t.TempDir(), "new")}
	live, err := ReadLive(p)
	require.NoError(t, err, "no event stream yet is a run starting")
	assert.Equal(t, Live{}, live)

	p = liveRun(t, "",
		observability.Event{Time: liveT0, Kind: observability.EventPhase, Phase: observability.PhaseCoder, Round: 1},
		observability.Event{Time: liveT0, Kind: observability.EventPhase, Phase: observability.PhaseFinish},
		observability.Event{Time: liveT0.Add(time.Second), Kind: observability.EventFinished, Outcome: &observability.Outcome{Status: observability.StatusSucceeded}},
	)
	live, err = ReadLive(p)
	require.NoError(t, err)
	assert.True(t, live.Finished)
	assert.Equal(t, observability.PhaseFinish, live.Phase)
	assert.Empty(t, live.Tool)

	// Resumed: the finished event is not the stream's last any more.
	appendLine(t, p, observability.Event{Time: liveT0.Add(time.Minute), Kind: observability.EventPhase, Phase: observability.PhaseFixing, Round: 2})
	live, err = ReadLive(p)
	require.NoError(t, err)
	assert.False(t, live.Finished)
	assert.Equal(t, observability.PhaseFixing, live.Phase)
}

func appendLine(t *testing.T, p Paths, e observability.Event) {
	t.Helper()
	line, err := json.Marshal(e)
	require.NoError(t, err)
	f, err := os.OpenFile(p.EventsPath(), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(append(line, '\n'))
	require.NoError(t, errors.Join(err, f.Close()))
}

func TestReadLiveOfAnUnreadableStreamSaysWhichRun(t *testing.T) {
	p := Paths{ID: "20260101-000000-abcd", Dir: t.TempDir()}
	require.NoError(t, os.Mkdir(p.EventsPath(), 0o755)) // a directory: reading it fails
	_, err := ReadLive(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "20260101-000000-abcd")
}
