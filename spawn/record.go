package spawn

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// recorder is the Sink that keeps the record: it folds every event into
// the record and writes it atomically, secrets redacted. The first write
// error is kept (Err) and later events still change the record in memory,
// so the final state can be written once the cause is gone.
type recorder struct {
	mu   sync.Mutex
	rec  *observability.Record
	path string
	red  *observability.Redactor
	err  error
}

// Event folds e into the record and writes it.
func (r *recorder) Event(e observability.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !observability.Apply(r.rec, e) {
		return
	}
	if err := observability.WriteFile(r.path, r.rec, r.red); err != nil && r.err == nil {
		r.err = fmt.Errorf("cannot write the record: %w", err)
	}
}

// Err is the first error writing the record met, nil if none.
func (r *recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// hasMessage reports whether the record holds the message id.
func (r *recorder) hasMessage(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.rec.Messages, func(m observability.Message) bool { return m.ID == id })
}

// save writes the record as it is now, and returns the error of that write.
func (r *recorder) save() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := observability.WriteFile(r.path, r.rec, r.red); err != nil {
		return fmt.Errorf("cannot write the record: %w", err)
	}
	return nil
}

// eventLog is the Sink that appends every event to events.ndjson in the run
// directory, one JSON object a line, secrets redacted: `spawn logs` reads
// it. The first write error is kept (Err); later events are not written.
type eventLog struct {
	mu  sync.Mutex
	f   *os.File
	red *observability.Redactor
	err error
}

func openEventLog(path string, red *observability.Redactor) (*eventLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the event log: %w", err)
	}
	return &eventLog{f: f, red: red}, nil
}

// Event appends e.
func (l *eventLog) Event(e observability.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	e.Record = nil // the record has a file of its own
	b, err := json.Marshal(e)
	if err == nil {
		_, err = l.f.Write(append(l.red.Bytes(b), '\n'))
	}
	if err != nil {
		l.err = fmt.Errorf("write the event log %s: %w", l.f.Name(), err)
	}
}

// Close closes the file and returns the first error the log met.
func (l *eventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = fmt.Errorf("close the event log: %w", err)
	}
	return l.err
}

// appendEvent appends one event to the event log at path, for a process
// that writes a run's log without running it (repairing it).
func appendEvent(path string, red *observability.Redactor, e observability.Event) error {
	l, err := openEventLog(path, red)
	if err != nil {
		return err
	}
	l.Event(e)
	return l.Close()
}
