package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// Status is what a run is doing: spawn_status's answer.
type Status struct {
	ID    string `json:"id"`
	State string `json:"state" jsonschema:"running, finished, abandoned (its spawn died) or broken"`
	// Done says the run has ended: spawn_result has its outcome.
	Done           bool    `json:"done" jsonschema:"the run has ended; spawn_result has its outcome"`
	Task           string  `json:"task,omitempty" jsonschema:"the task's first line"`
	Mode           string  `json:"mode,omitempty"`
	Branch         string  `json:"branch,omitempty"`
	Phase          string  `json:"phase" jsonschema:"starting, sandbox, coder, reviewer, fix, finish..."`
	Round          int     `json:"round" jsonschema:"the review round"`
	Seat           string  `json:"seat,omitempty" jsonschema:"the reviewer seat of a reviewer phase"`
	Turn           int     `json:"turn" jsonschema:"the coder's turn in its current session"`
	CostUSD        float64 `json:"cost_usd" jsonschema:"the run's cost so far, in US dollars"`
	ElapsedSeconds int64   `json:"elapsed_seconds"`
	LastAction     string  `json:"last_action,omitempty" jsonschema:"the last tool call of an agent, e.g. Edit main.go"`
	Verdict        string  `json:"verdict,omitempty" jsonschema:"once done: the run's verdict"`
	ExitCode       *int    `json:"exit_code,omitempty" jsonschema:"once done: spawn run's exit code"`
	// Events are the last few events of the run, as spawn logs shows them.
	Events []string `json:"events" jsonschema:"the run's last few events, as spawn logs shows them"`
}

// line is the status as one line, for a progress notification.
func (st Status) line() string {
	msg := fmt.Sprintf("run %s: %s, round %d, coder turn %d, $%.4f, %s elapsed", st.ID, st.Phase, st.Round, st.Turn, st.CostUSD, time.Duration(st.ElapsedSeconds)*time.Second)
	if st.LastAction != "" {
		msg += "; last: " + st.LastAction
	}
	return msg
}

// statusEvents is how many events a status carries.
const statusEvents = 8

// readStatus reads what run e is doing from its event stream and record
// summary.
func (s *server) readStatus(e runs.Entry, now time.Time) (Status, error) {
	st := Status{ID: e.ID, State: string(e.State), Done: e.State != runs.StateRunning, Phase: "starting", Events: []string{}}
	if sum := e.Summary; sum != nil {
		st.Task, st.Mode, st.Branch = clip(firstLine(sum.Task), 200), string(sum.Mode), sum.Branch
		end := now
		if sum.FinishedAt != nil {
			end = *sum.FinishedAt
		}
		st.ElapsedSeconds = int64(end.Sub(sum.StartedAt).Seconds())
		if st.Done {
			code := sum.ExitCode
			st.Verdict, st.ExitCode = string(sum.Verdict), &code
		}
	}
	live, err := runs.ReadLive(e.Paths)
	if err != nil {
		return st, err
	}
	if live.Phase != "" {
		st.Phase = string(live.Phase)
	}
	st.Round, st.Seat, st.Turn, st.CostUSD = live.Round, live.Seat, live.Turns, live.CostUSD
	if s.opts.LastAction != nil {
		st.LastAction = s.opts.LastAction(live)
	} else {
		st.LastAction = live.Tool
	}
	events, err := tailEvents(e.EventsPath(), statusEvents)
	if err != nil {
		return st, fmt.Errorf("read the events of run %s: %w", e.ID, err)
	}
	st.Events = s.render(events)
	return st, nil
}

// render renders events as lines of at most 300 characters.
func (s *server) render(events []observability.Event) []string {
	var lines []string
	if s.opts.RenderEvents != nil {
		lines = s.opts.RenderEvents(events)
	} else {
		for _, e := range events {
			lines = append(lines, strings.TrimSpace(string(e.Kind)+" "+string(e.Phase)+" "+e.Text))
		}
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, clip(l, 300))
		}
	}
	return out
}

// tailWindow is how much of the end of an event stream tailEvents reads.
const tailWindow = 64 << 10

// tailEvents returns the last n events of the event stream at path (fewer
// when the last 64 KiB hold fewer whole lines); none when there is no
// stream yet. Lines that are not events are skipped.
func tailEvents(path string, n int) (_ []observability.Event, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	start := max(0, fi.Size()-tailWindow)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if start > 0 {
		buf = buf[bytes.IndexByte(buf, '\n')+1:]
	}
	buf = buf[:bytes.LastIndexByte(buf, '\n')+1] // a last line still being written is left out
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	var events []observability.Event
	for i := len(lines) - 1; i >= 0 && len(events) < n; i-- {
		var e observability.Event
		if len(lines[i]) == 0 || json.Unmarshal(lines[i], &e) != nil {
			continue
		}
		events = append(events, e)
	}
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	return events, nil
}

// firstLine is the first non-empty line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}

// clip cuts s to at most n runes, marking the cut with "...".
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}
