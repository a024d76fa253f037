package runs

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// EventLog appends every event to a run's event stream (events.ndjson in
// its directory), one JSON object a line, secrets redacted: `spawn logs`
// reads it. The first write error is kept, and Close returns it; later
// events are not written.
type EventLog struct {
	mu  sync.Mutex
	f   *os.File
	red *observability.Redactor
	err error
}

// OpenEventLog opens the event stream at path (Paths.EventsPath) to
// append to it, creating it when it does not exist.
func OpenEventLog(path string, red *observability.Redactor) (*EventLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the event log: %w", err)
	}
	return &EventLog{f: f, red: red}, nil
}

// Event appends e.
func (l *EventLog) Event(e observability.Event) {
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
func (l *EventLog) Close() error {
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
	l, err := OpenEventLog(path, red)
	if err != nil {
		return err
	}
	l.Event(e)
	return l.Close()
}
