package cli

import (
	"fmt"
	"io"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

// progressMode is what a run prints on stderr while it runs: the value of
// --progress.
type progressMode string

// The progress modes.
const (
	// progressAuto narrates for a person unless --json or --quiet says
	// otherwise: the default.
	progressAuto progressMode = "auto"
	// progressHuman narrates for a person, even with --json.
	progressHuman progressMode = "human"
	// progressJSON writes every event as one JSON line (NDJSON), as
	// events.ndjson has it, and nothing else but spawn's final error line.
	progressJSON progressMode = "json"
	// progressNone writes nothing while the run runs (not even notes;
	// they are in the record).
	progressNone progressMode = "none"
	// progressActions narrates with each phase of the run in a GitHub
	// Actions log group (spawn action; not a --progress value).
	progressActions progressMode = "actions"
)

func progressModes() []progressMode {
	return []progressMode{progressAuto, progressHuman, progressJSON, progressNone}
}

// progressFlag is --progress, shared by spawn run and spawn resume.
func progressFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "progress", Value: string(progressAuto),
		Usage: "what to print on stderr while the run runs: auto (narration unless --json or --quiet), human, json (one event per line, NDJSON; see spawn schema --events) or none"}
}

// parseProgress returns the mode named s, or a usage error that lists the
// modes.
func parseProgress(s string) (progressMode, error) {
	for _, m := range progressModes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("--progress %q is not a progress mode; use auto, human, json or none", s)}
}

// runSink is a run's sink on stderr; Close flushes and stops it.
type runSink interface {
	spawn.Sink
	Close()
}

// progressSink returns the sink --progress asks for. json and quiet are
// the command's --json and --quiet, which auto follows: --json (the record
// alone on stdout) and --quiet keep notes and warnings but not the
// narration.
func (d *deps) progressSink(mode progressMode, json, quiet bool) runSink {
	switch mode {
	case progressJSON:
		return &jsonProgress{w: d.io.Err}
	case progressNone:
		return noProgress{}
	case progressHuman:
		return d.narration(true)
	case progressActions:
		return &groupedProgress{w: d.io.Err, narration: d.narration(true)}
	}
	return d.narration(!json && !quiet)
}

// jsonProgress writes each event as one line of JSON: the object
// events.ndjson holds, described by `spawn schema --events`. Each line is
// one write, so the redactor that stderr goes through sees whole values.
// When a write fails (the reader went away) the stream stops and the run
// goes on: everything is in events.ndjson and the record.
type jsonProgress struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// Event writes e as one line.
func (p *jsonProgress) Event(e observability.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return
	}
	b, err := e.AppendJSON(nil)
	if err != nil {
		p.err = fmt.Errorf("encode a %s event: %w", e.Kind, err)
		return
	}
	if _, err := p.w.Write(append(b, '\n')); err != nil {
		p.err = fmt.Errorf("write a %s event: %w", e.Kind, err)
	}
}

// Close does nothing: every line is written as it comes.
func (p *jsonProgress) Close() {}

// noProgress drops every event.
type noProgress struct{}

func (noProgress) Event(observability.Event) {}
func (noProgress) Close()                    {}

// groupedProgress is the narration with each phase of the run in a log
// group of its own (::group:: and ::endgroup::; Actions does not nest
// them).
type groupedProgress struct {
	w         io.Writer
	narration *progressLine
	open      bool
}

// Event opens a new group on each phase, then narrates e.
func (g *groupedProgress) Event(e observability.Event) {
	if e.Kind == observability.EventPhase {
		g.narration.Flush() // the last group's lines go in it
		if g.open {
			fmt.Fprintln(g.w, "::endgroup::")
		}
		fmt.Fprintf(g.w, "::group::spawn: %s\n", phaseTitle(e))
		g.open = true
	}
	g.narration.Event(e)
}

// Close ends the last group.
func (g *groupedProgress) Close() {
	g.narration.Close()
	if g.open {
		fmt.Fprintln(g.w, "::endgroup::")
		g.open = false
	}
}

// phaseTitle names a phase for a person.
func phaseTitle(e observability.Event) string {
	switch e.Phase {
	case observability.PhaseSandbox:
		return "sandbox"
	case observability.PhaseCoder:
		return "coder"
	case observability.PhaseReviewer:
		return fmt.Sprintf("review round %d", e.Round)
	case observability.PhaseFixing:
		return fmt.Sprintf("fix round %d", e.Round)
	case observability.PhaseFinish:
		return "finish"
	}
	return string(e.Phase)
}
