package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/watcher"
)

// progressLine renders what the agents do on stderr: a line per notable
// event (what the agent says, the tools it calls, denials, escalations,
// questions and answers) and, on a terminal, a live status line below them
// (phase, turn, files changed, cost, elapsed) that is erased at the end.
type progressLine struct {
	mu     sync.Mutex
	w      io.Writer
	live   bool // draw the status line (stderr is a terminal)
	role   string
	last   watcher.Progress
	start  time.Time
	shown  bool
	ticker *time.Ticker
	done   chan struct{}
}

func newProgressLine(w io.Writer, live bool) *progressLine {
	p := &progressLine{w: w, live: live, start: time.Now(), done: make(chan struct{})}
	if live {
		p.ticker = time.NewTicker(time.Second)
		go func() {
			for {
				select {
				case <-p.ticker.C:
					p.mu.Lock()
					p.draw()
					p.mu.Unlock()
				case <-p.done:
					return
				}
			}
		}()
	}
	return p
}

// Close erases the status line and stops redrawing it.
func (p *progressLine) Close() {
	if p.live {
		p.ticker.Stop()
		close(p.done)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
}

// Progress takes one watcher event.
func (p *progressLine) Progress(role string, ev watcher.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	// A reviewer's raw answer is JSON: its verdict is told instead.
	if line := describe(ev); line != "" && !(role == "reviewer" && ev.Kind == watcher.ProgressText) {
		fmt.Fprintf(p.w, "  %-8s %s\n", role, line)
	}
	p.role, p.last = role, ev
	p.draw()
}

func (p *progressLine) erase() {
	if p.live && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

func (p *progressLine) draw() {
	if !p.live || p.role == "" {
		return
	}
	p.erase()
	ev := p.last
	fmt.Fprintf(p.w, "spawn: %s · turn %d · %d files changed · $%.4f · %s",
		p.role, ev.Turns, ev.Files, ev.CostUSD, time.Since(p.start).Round(time.Second))
	p.shown = true
}

// describe is the line a person reads for an event, "" for none.
func describe(ev watcher.Progress) string {
	switch ev.Kind {
	case watcher.ProgressStarted:
		if ev.Detail != "" {
			return "resumed session " + ev.Detail
		}
		return "started"
	case watcher.ProgressText:
		return "says:   " + firstLine(ev.Detail)
	case watcher.ProgressTool:
		return "tool:   " + ev.Tool + " " + toolSummary(ev.Input)
	case watcher.ProgressDenial:
		if ev.Rule != "" {
			return fmt.Sprintf("denied: %s %s (escalatable: %s)", ev.Tool, toolSummary(ev.Input), ev.Rule)
		}
		return fmt.Sprintf("denied: %s %s", ev.Tool, toolSummary(ev.Input))
	case watcher.ProgressEscalation:
		return "granted " + ev.Rule + "; resuming the session"
	case watcher.ProgressQuestion:
		return fmt.Sprintf("asked:  %s (confidence %.2f)", firstLine(ev.Detail), ev.Confidence)
	case watcher.ProgressAnswer:
		return "answered: " + firstLine(ev.Detail)
	case watcher.ProgressRetry:
		return "retry:  " + ev.Detail
	case watcher.ProgressBudget:
		return "budget: " + ev.Detail + " reached; stopping"
	case watcher.ProgressLimit:
		return "limit:  " + ev.Detail
	case watcher.ProgressReview:
		return "review: " + ev.Detail
	case watcher.ProgressFinished:
		if ev.Detail != "exited" {
			return "stopped: " + ev.Detail
		}
	}
	return ""
}

// toolSummary picks the telling field of a tool's input.
func toolSummary(input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url"} {
		if v, ok := m[k].(string); ok {
			return firstLine(v)
		}
	}
	return ""
}
