package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// logsOptions is `spawn logs` after flag parsing.
type logsOptions struct {
	Repo   string
	Ref    string
	Follow bool
	// Interval is how often a followed run's event stream is polled; 0
	// means logsInterval.
	Interval time.Duration
}

// logsInterval is how often `spawn logs -f` looks for new events.
const logsInterval = 200 * time.Millisecond

func newLogsCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a run's narration: what its agents did, as spawn run tells it",
		ArgsUsage: runRefUsage,
		Description: "Replays the run's event stream (.spawn/runs/<id>/events.ndjson) on stdout, a\n" +
			"line per thing the agents did, as spawn run narrates it on stderr, with the\n" +
			"commits and how the run finished. With --follow (-f) it keeps printing what a\n" +
			"live run does until the run ends, like tail -f; Ctrl-C stops following (exit 0)\n" +
			"and leaves the run alone.\n\n" +
			"Example:\n   spawn logs last\n   spawn logs -f 20261123-0941",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			repoFlag(),
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing what a live run does until it ends"},
		},
		Action: func(c *cli.Context) error {
			ref, err := oneRunRef(c)
			if err != nil {
				return err
			}
			return runLogs(c.Context, d, &logsOptions{Repo: c.String("repo"), Ref: ref, Follow: c.Bool("follow")})
		},
	}
}

// runLogs is `spawn logs`. Following ends when the run's stream ends with
// its finished event, when the registry says the run is no longer live,
// or when ctx is cancelled (Ctrl-C), which is not an error.
func runLogs(ctx context.Context, d *deps, opts *logsOptions) (err error) {
	repo, e, err := d.lookupRun(ctx, opts.Repo, opts.Ref)
	if err != nil {
		return err
	}
	interval := opts.Interval
	if interval == 0 {
		interval = logsInterval
	}
	view := newLogView(d.io.Out)
	defer view.Close()
	tail := &eventTail{path: e.EventsPath()}
	defer func() { err = errors.Join(err, tail.Close()) }()
	bad := func(line int, derr error) {
		fmt.Fprintf(d.io.Err, "spawn: warning: line %d of %s is not an event: %v\n", line, tail.path, derr)
	}
	state := e.State
	for {
		n, err := tail.Read(view.Event, bad)
		if err != nil {
			return err
		}
		switch {
		case !opts.Follow:
			tail.Flush(view.Event)
			if tail.f == nil {
				fmt.Fprintf(d.io.Err, "note: run %s has no event log (%s)\n", e.ID, tail.path)
			}
			return nil
		case view.finished:
			return nil
		case state != runs.StateRunning:
			// The run ended between two polls (or before the first): what
			// it wrote before ending was read above, once more to be sure.
			if _, err := tail.Read(view.Event, bad); err != nil {
				return err
			}
			tail.Flush(view.Event)
			if state == runs.StateAbandoned && !view.finished {
				fmt.Fprintf(d.io.Err, "spawn: run %s stopped without finishing: its spawn process died; the next spawn command (spawn ls) repairs it\n", e.ID)
			}
			return nil
		}
		if n == 0 {
			// Quiet: is the run still live? (Asked only then: a busy log
			// is a live run.)
			now, err := repo.Registry.Find(e.ID)
			if err != nil {
				return fmt.Errorf("follow run %s: %w", e.ID, err)
			}
			if state = now.State; state != runs.StateRunning {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// logView renders a run's events as `spawn run` narrates them (through the
// same progressLine, without the status line), plus the two things the
// narration leaves to the summary: each commit, and how the run finished.
type logView struct {
	w        io.Writer
	narr     *progressLine
	finished bool // the last event shown is the run's finished event
}

func newLogView(w io.Writer) *logView {
	return &logView{w: w, narr: newProgressLine(w, false, true)}
}

// Event shows one event. An event missing what its kind needs (a log
// written by a different spawn) is passed over.
func (v *logView) Event(e observability.Event) {
	v.finished = e.Kind == observability.EventFinished
	switch e.Kind {
	case observability.EventAgent:
		if e.Agent == nil {
			return
		}
	case observability.EventReview:
		if e.Review == nil {
			return
		}
	case observability.EventCommit:
		// The narration before it is written first: the progress line
		// writes its lines a few ms later, together.
		v.narr.Flush()
		if e.Commit != nil {
			fmt.Fprintf(v.w, "  %-8s commit: %.12s %s\n", "spawn", e.Commit.SHA, firstLine(e.Commit.Message))
		}
		return
	case observability.EventFinished:
		v.narr.Flush()
		if o := e.Outcome; o != nil {
			line := fmt.Sprintf("finished: %s, verdict %s, exit %d", o.Status, o.Verdict, o.ExitCode)
			if o.Error != nil {
				line += fmt.Sprintf(" (%s: %s)", o.Error.Kind, firstLine(o.Error.Message))
			}
			fmt.Fprintf(v.w, "  %-8s %s\n", "spawn", line)
		}
		return
	}
	v.narr.Event(e)
}

// Close ends the view.
func (v *logView) Close() { v.narr.Close() }

// eventTail reads an event stream that another process may be appending
// to, a whole line at a time: a line without its newline yet is kept
// until the rest arrives. A stream that does not exist yet is empty.
type eventTail struct {
	path    string
	f       *os.File
	partial []byte // the start of a line whose newline was not read yet
	line    int    // lines read so far
	buf     []byte
}

// Read reads what was appended since the last call and hands each
// complete event to show, in order; a line that is not an event goes to
// bad with its line number. It returns the number of lines read.
func (t *eventTail) Read(show func(observability.Event), bad func(line int, err error)) (int, error) {
	if t.f == nil {
		f, err := os.Open(t.path)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read the run's log: %w", err)
		}
		t.f = f
	}
	if t.buf == nil {
		t.buf = make([]byte, 64<<10)
	}
	lines := 0
	for {
		n, err := t.f.Read(t.buf)
		data := t.buf[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				t.partial = append(t.partial, data...)
				break
			}
			line := data[:i]
			if len(t.partial) > 0 {
				line = append(t.partial, line...)
			}
			data = data[i+1:]
			t.line++
			lines++
			t.decode(line, show, bad)
			t.partial = t.partial[:0]
		}
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return lines, fmt.Errorf("read the run's log %s: %w", t.path, err)
		}
	}
}

// Flush shows the last line of the stream if it is a whole event without
// its newline; a line still being written is not shown.
func (t *eventTail) Flush(show func(observability.Event)) {
	if len(bytes.TrimSpace(t.partial)) == 0 {
		return
	}
	var e observability.Event
	if json.Unmarshal(t.partial, &e) == nil {
		show(e)
	}
	t.partial = t.partial[:0]
}

func (t *eventTail) decode(line []byte, show func(observability.Event), bad func(line int, err error)) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var e observability.Event
	if err := json.Unmarshal(line, &e); err != nil {
		bad(t.line, err)
		return
	}
	show(e)
}

// Close closes the stream.
func (t *eventTail) Close() error {
	if t.f == nil {
		return nil
	}
	if err := t.f.Close(); err != nil {
		return fmt.Errorf("close the run's log: %w", err)
	}
	return nil
}
