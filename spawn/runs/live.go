package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// Live is what a run is doing now, as the end of its event stream
// (events.ndjson) says: `spawn ps` and the like read it while another
// process runs the run.
type Live struct {
	// Phase is the phase the run entered last; "" before its first phase
	// event (the run is starting).
	Phase observability.Phase `json:"phase"`
	// Round is the review round of that phase (0 for the sandbox phase).
	Round int `json:"round"`
	// Seat is the reviewer seat of a reviewer phase.
	Seat string `json:"seat,omitempty"`
	// Turns is the coder's turn count in its current session, from the
	// last progress event of the coder.
	Turns int `json:"turns"`
	// CostUSD is the run's cost so far, coder and reviewers together: the
	// highest running total the events carry.
	CostUSD float64 `json:"cost_usd"`
	// Role, Tool and Input are the last tool call an agent made: the agent
	// that made it, the tool's name and its input as the agent gave it.
	// Tool is "" when no tool call was found.
	Role  observability.Role `json:"role,omitempty"`
	Tool  string             `json:"tool,omitempty"`
	Input json.RawMessage    `json:"input,omitempty"`
	// Sandbox is the run's worktree, when the events read hold the sandbox
	// phase (paths in Input start with it).
	Sandbox string `json:"sandbox,omitempty"`
	// Finished says the stream ends with the run's finished event: the
	// run has ended, whatever its lock says. (A finished event followed by
	// more is a run that was resumed.)
	Finished bool `json:"finished"`
	// Updated is the time of the last event; zero when there is none.
	Updated time.Time `json:"updated"`
}

// The window ReadLive reads, from the end of the event stream.
const (
	liveWindow    = 64 << 10
	maxLiveWindow = 4 << 20
)

// ReadLive reads what the run at paths is doing from the end of its event
// stream. It reads the last 64 KiB of events.ndjson; when that window
// holds no phase event, no tool call or no cost (an agent's Write of a
// large file makes one event line bigger than the window), it reads a
// window four times larger, up to 4 MiB, never past the file's start.
// Lines cut by the window's start and a last line still being written are
// skipped, as is a line that is not an event. A run with no event stream
// yet (it is starting) is a zero Live and no error. ReadLive only reads:
// it is safe while another process appends to the stream.
func ReadLive(paths Paths) (Live, error) {
	f, err := os.Open(paths.EventsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return Live{}, nil
	}
	if err != nil {
		return Live{}, fmt.Errorf("read the live state of run %s: %w", paths.ID, err)
	}
	live, err := readLive(f)
	if cerr := f.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return Live{}, fmt.Errorf("read the live state of run %s: %w", paths.ID, err)
	}
	return live, nil
}

// readLive is ReadLive over an open event stream.
func readLive(f *os.File) (Live, error) {
	fi, err := f.Stat()
	if err != nil {
		return Live{}, err
	}
	size := fi.Size()
	var buf []byte
	for window := int64(liveWindow); ; window *= 4 {
		start := max(0, size-window)
		n := size - start
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return Live{}, err
		}
		live, complete := scanLive(buf, start > 0)
		if complete || start == 0 || window >= maxLiveWindow {
			return live, nil
		}
	}
}

// scanLive reads the events in data, the end of an event stream; cut says
// that data starts inside the stream, so its first line may be part of
// one. complete reports whether the window held everything Live is made
// of: a phase, a tool call and a cost.
func scanLive(data []byte, cut bool) (live Live, complete bool) {
	if cut {
		// The first line is the end of one that started before the
		// window (or, by chance, a whole one: losing it is harmless).
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return Live{}, false
		}
		data = data[i+1:]
	}
	// The last line is complete only with its newline: without it, the
	// run is still writing it.
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var sawPhase, sawTool, sawCost, sawTurns bool
	// From the last event back: the first of each kind found is the latest.
	for len(data) > 0 {
		data = data[:len(data)-1] // the newline
		line := data[bytes.LastIndexByte(data, '\n')+1:]
		data = data[:len(data)-len(line)]
		var e observability.Event
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &e) != nil {
			continue
		}
		if live.Updated.IsZero() {
			live.Updated, live.Finished = e.Time, e.Kind == observability.EventFinished
		}
		switch e.Kind {
		case observability.EventPhase:
			if e.Phase == observability.PhaseSandbox && live.Sandbox == "" {
				live.Sandbox = e.Text
			}
			if !sawPhase {
				live.Phase, live.Round, live.Seat, sawPhase = e.Phase, e.Round, e.Seat, true
			}
		case observability.EventAgent:
			if e.Agent == nil {
				continue
			}
			if !sawTurns && e.Role == observability.RoleCoder {
				live.Turns, sawTurns = e.Agent.Turns, true
			}
			if !sawTool && e.Agent.Kind == observability.ProgressTool {
				live.Role, live.Tool, live.Input, sawTool = e.Role, e.Agent.Tool, e.Agent.Input, true
			}
		}
		if e.RunCostUSD > live.CostUSD {
			live.CostUSD, sawCost = e.RunCostUSD, true
		}
	}
	return live, sawPhase && sawTool && sawCost
}
