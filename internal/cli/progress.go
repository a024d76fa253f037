package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// progressLine is the terminal's Sink of a run's events: on stderr, a line
// per notable event (notes, what the agent says, the tools it calls,
// denials, escalations, questions and answers, review verdicts) and, on a
// terminal, a live status line below them (phase, turn, files changed,
// cost, elapsed) that is erased at the end. What it prints reaches stderr
// within narrateAfter, the lines of that time in one write: an agent that
// streams makes thousands of events a second. A narration that cannot be
// written is dropped and the run goes on: events.ndjson has it all.
type progressLine struct {
	mu      sync.Mutex
	out     io.Writer    // stderr
	w       bytes.Buffer // what waits for out
	timer   *time.Timer  // writes w out, narrateAfter after it was first written to
	armed   bool
	live    bool // draw the status line (stderr is a terminal)
	narrate bool // print what the agents do (notes are always printed)
	role    string
	sandbox []byte // the worktree's path and a slash, taken out of tool lines
	last    observability.Progress
	cost    float64 // the run's running total: coder and reviewers; it never goes down
	start   time.Time
	shown   bool
	ticker  *time.Ticker
	done    chan struct{}
}

// narrateAfter is how long a line of the narration may wait to be written.
const narrateAfter = 5 * time.Millisecond

func newProgressLine(w io.Writer, live, narrate bool) *progressLine {
	p := &progressLine{out: w, live: live && narrate, narrate: narrate, start: time.Now(), done: make(chan struct{})}
	if live {
		p.ticker = time.NewTicker(time.Second)
		go func() {
			for {
				select {
				case <-p.ticker.C:
					p.mu.Lock()
					p.draw()
					p.flush()
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
	if p.timer != nil {
		p.timer.Stop()
	}
	p.erase()
	p.flush()
}

// Flush writes out what waits.
func (p *progressLine) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush()
}

// flush writes out what waits, with p.mu held.
func (p *progressLine) flush() {
	if p.w.Len() > 0 {
		_, _ = p.out.Write(p.w.Bytes()) // dropped: see progressLine
		p.w.Reset()
	}
}

// later has what waits written out within narrateAfter, with p.mu held.
func (p *progressLine) later() {
	switch {
	case p.w.Len() == 0 || p.armed:
	case p.timer == nil:
		p.armed = true
		p.timer = time.AfterFunc(narrateAfter, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.armed = false
			p.flush()
		})
	default:
		p.armed = true
		p.timer.Reset(narrateAfter)
	}
}

// Event takes one event of the run.
func (p *progressLine) Event(e observability.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	switch {
	case e.Kind == observability.EventNote:
		fmt.Fprintf(&p.w, "note: %s\n", e.Text)
	case e.Kind == observability.EventWarning:
		fmt.Fprintf(&p.w, "warning: %s\n", e.Text)
	case e.Kind == observability.EventPhase && e.Phase == observability.PhaseSandbox:
		p.sandbox = nil
		if e.Text != "" {
			p.sandbox = []byte(e.Text + "/")
		}
	case e.Kind == observability.EventResumed:
		from := string(e.Resume.FromStatus)
		if e.Resume.FromVerdict != "" && e.Resume.FromVerdict != "none" {
			from = string(e.Resume.FromVerdict)
		}
		fmt.Fprintf(&p.w, "note: resuming run %s in round %d (it ended %s)\n", e.Run, e.Resume.Round, strings.ReplaceAll(from, "_", " "))
	case e.Kind == observability.EventMessage:
		fmt.Fprintf(&p.w, "  %-8s message from you delivered (%s): %s\n", "coder", e.Message.How, firstLine(e.Message.Text))
	case !p.narrate:
	case e.Kind == observability.EventAgent:
		ev := *e.Agent
		role := string(e.Role)
		// A reviewer's raw answer is JSON: its verdict is told instead.
		if len(p.sandbox) > 0 && bytes.Contains(ev.Input, p.sandbox) {
			// Paths inside the worktree read as the repository's own.
			ev.Input = bytes.ReplaceAll(ev.Input, p.sandbox, nil)
		}
		if line := describe(ev); line != "" && !(e.Role == "reviewer" && ev.Kind == observability.ProgressText) {
			p.agentLine(role, line)
		}
		p.role, p.last = role, ev
		p.cost = max(p.cost, e.RunCostUSD, ev.CostUSD)
	case e.Kind == observability.EventReview:
		for _, f := range e.Review.Feedback {
			fmt.Fprintf(&p.w, "  %-8s review: round %d, %s: %s, %s, %d resolved\n", "reviewer", e.Round, f.Domain, f.Verdict,
				text.Plural(len(f.Findings), "finding"), len(f.Resolved)+len(f.ResolvedByApproval))
		}
		if e.Review.Note != "" {
			fmt.Fprintf(&p.w, "  %-8s %s\n", "spawn", e.Review.Note)
		}
	}
	p.draw()
	p.later()
}

// agentLine writes what an agent did, as fmt's "  %-8s %s\n" of role
// and line: an agent that streams does thousands of things a second.
func (p *progressLine) agentLine(role, line string) {
	p.w.WriteString("  ")
	p.w.WriteString(role)
	for n := utf8.RuneCountInString(role); n < 8; n++ {
		p.w.WriteByte(' ')
	}
	p.w.WriteByte(' ')
	p.w.WriteString(line)
	p.w.WriteByte('\n')
}

func (p *progressLine) erase() {
	if p.live && p.shown {
		fmt.Fprint(&p.w, "\r\033[K")
		p.shown = false
	}
}

func (p *progressLine) draw() {
	if !p.live || p.role == "" {
		return
	}
	p.erase()
	ev := p.last
	fmt.Fprintf(&p.w, "spawn: %s · turn %d · %d files changed · $%.4f · %s",
		p.role, ev.Turns, ev.Files, p.cost, time.Since(p.start).Round(time.Second))
	p.shown = true
}

// describe is the line a person reads for an event, "" for none.
func describe(ev observability.Progress) string {
	switch ev.Kind {
	case observability.ProgressStarted:
		if ev.Detail != "" {
			return "resumed session " + ev.Detail
		}
		return "started"
	case observability.ProgressText:
		return "says:   " + firstLine(ev.Detail)
	case observability.ProgressTool:
		return "tool:   " + ev.Tool + " " + toolSummary(ev.Input)
	case observability.ProgressDenial:
		if ev.Rule != "" {
			return fmt.Sprintf("denied: %s %s (it did not run; escalatable: %s)", ev.Tool, toolSummary(ev.Input), ev.Rule)
		}
		return fmt.Sprintf("denied: %s %s (it did not run)", ev.Tool, toolSummary(ev.Input))
	case observability.ProgressEscalation:
		return "granted " + ev.Rule + "; resuming the session"
	case observability.ProgressQuestion:
		return fmt.Sprintf("asked:  %s (confidence %.2f)", firstLine(ev.Detail), ev.Confidence)
	case observability.ProgressAnswer:
		return "answered: " + firstLine(ev.Detail)
	case observability.ProgressRetry:
		return "retry:  " + ev.Detail
	case observability.ProgressBudget:
		return "budget: " + ev.Detail + " reached; stopping"
	case observability.ProgressLimit:
		return "limit:  " + ev.Detail
	case observability.ProgressFinished:
		if ev.Detail != "exited" {
			return "stopped: " + ev.Detail
		}
	}
	return ""
}

// toolSummary picks the telling field of a tool's input (see
// runners.InputSummary): its first line, or the paths of a change of
// several files.
func toolSummary(input json.RawMessage) string {
	summary, isValue := runners.InputSummary(input)
	if isValue {
		return firstLine(summary)
	}
	return summary
}
