package runs

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// EventLog appends every event to a run's event stream (events.ndjson in
// its directory), one JSON object a line, secrets redacted: `spawn logs`
// reads it. An event is written within flushAfter: while an agent
// streams, events come by the thousand a second, and the log writes them
// together, whole lines only, instead of one system call each. The first
// write error is kept, and Close returns it; later events are not written.
type EventLog struct {
	mu    sync.Mutex
	f     *os.File
	red   *observability.Redactor
	buf   []byte      // events not written yet, whole lines
	line  []byte      // the event being written, reused
	timer *time.Timer // writes buf out, flushAfter after its first event
	armed bool        // timer will fire
	err   error
}

// How long an event may wait in an EventLog, and how many bytes.
const (
	flushAfter = 5 * time.Millisecond
	flushSize  = 64 << 10
)

// maxKept bounds the buffers an EventLog keeps from one event to the
// next: one event of megabytes (the final text of an agent that said a
// lot) does not hold its megabytes for the rest of the run.
const maxKept = 4 * flushSize

// OpenEventLog opens the event stream at path (Paths.EventsPath) to
// append to it, creating it when it does not exist.
func OpenEventLog(path string, red *observability.Redactor) (*EventLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the event log: %w", err)
	}
	return &EventLog{f: f, red: red}, nil
}

// Event appends e: at once when the log holds flushSize bytes, else
// within flushAfter.
func (l *EventLog) Event(e observability.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	e.Record = nil // the record has a file of its own
	var err error
	if l.line, err = e.AppendJSON(l.line[:0]); err != nil {
		l.err = fmt.Errorf("write the event log %s: %w", l.f.Name(), err)
		return
	}
	l.buf = append(append(l.buf, l.red.Bytes(l.line)...), '\n')
	if cap(l.line) > maxKept {
		l.line = nil // a rare huge event (an agent's final text): its buffer is not kept
	}
	switch {
	case len(l.buf) >= flushSize:
		l.flush()
	case !l.armed:
		l.armed = true
		if l.timer == nil {
			l.timer = time.AfterFunc(flushAfter, l.flushed)
		} else {
			l.timer.Reset(flushAfter)
		}
	}
}

// flushed is the timer's: it writes out what waits.
func (l *EventLog) flushed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = false
	l.flush()
}

// flush writes out what waits, with l.mu held.
func (l *EventLog) flush() {
	if len(l.buf) == 0 || l.err != nil {
		return
	}
	if _, err := l.f.Write(l.buf); err != nil {
		l.err = fmt.Errorf("write the event log %s: %w", l.f.Name(), err)
	}
	l.buf = l.buf[:0]
	if cap(l.buf) > maxKept {
		l.buf = nil
	}
}

// Close writes out what waits, closes the file and returns the first
// error the log met.
func (l *EventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
		l.armed = false
	}
	l.flush()
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = fmt.Errorf("close the event log: %w", err)
	}
	return l.err
}

// appendEvent appends one event to the event log at path, for a process
// that writes a run's log without running it (repairing it).
func appendEvent(path string, red *observability.Redactor, e observability.Event) error {
	l, err := OpenEventLog(path, red)
	if err != nil {
		return err
	}
	l.Event(e)
	return l.Close()
}
