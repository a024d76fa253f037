package spawn

import (
	"fmt"
	"slices"
	"sync"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// recorder is the Sink that keeps the record: it folds every event into
// the record and writes it atomically, secrets redacted, in the
// background: an event's emitter does not wait for the disk, and of
// changes that come while a write runs, the next write takes them all. The
// first write error is kept (Err, which waits for the writes under way)
// and later events still change the record in memory, so the final state
// can be written once the cause is gone.
//
// The record's fields are changed and read under mu (the writer encodes
// it there).
type recorder struct {
	mu   sync.Mutex
	rec  *observability.Record
	path string
	red  *observability.Redactor
	err  error

	changed bool       // the record changed since the last write began
	writing bool       // a writer goroutine runs
	written *sync.Cond // on mu: signalled when the writer stops
}

func newRecorder(rec *observability.Record, path string, red *observability.Redactor) *recorder {
	r := &recorder{rec: rec, path: path, red: red}
	r.written = sync.NewCond(&r.mu)
	return r
}

// Event folds e into the record and has it written.
func (r *recorder) Event(e observability.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !observability.Apply(r.rec, e) {
		return
	}
	r.changed = true
	if !r.writing {
		r.writing = true
		go r.write()
	}
}

// write writes the record until it no longer changes.
func (r *recorder) write() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.changed {
		r.changed = false
		b, err := observability.Encode(r.rec, r.red)
		if err == nil {
			r.mu.Unlock()
			err = observability.WriteEncoded(r.path, b)
			r.mu.Lock()
		}
		if err != nil && r.err == nil {
			r.err = fmt.Errorf("cannot write the record: %w", err)
		}
	}
	r.writing = false
	r.written.Broadcast()
}

// wait waits, with mu held, until no write runs.
func (r *recorder) wait() {
	for r.writing {
		r.written.Wait()
	}
}

// Err is the first error writing the record met, nil if none, once the
// writes under way have ended.
func (r *recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wait()
	return r.err
}

// hasMessage reports whether the record holds the message id.
func (r *recorder) hasMessage(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.rec.Messages, func(m observability.Message) bool { return m.ID == id })
}

// sessionTotal is the running total of the session id's tokens that its
// CLI printed last, as the record's command lines keep it: what the
// session's next process is charged from. Zero for "", for a session whose
// CLI reports each process's own use, or one the record does not know.
func (r *recorder) sessionTotal(id string) runners.Usage {
	if id == "" {
		return runners.Usage{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range slices.Backward(r.rec.CommandLines) {
		if c.Session == id && c.SessionTokens != nil {
			return runners.Usage{InputTokens: c.SessionTokens.Input, CachedTokens: c.SessionTokens.Cached, OutputTokens: c.SessionTokens.Output}
		}
	}
	return runners.Usage{}
}

// save writes the record as it is now, once the writes under way have
// ended, and returns the error of that write.
func (r *recorder) save() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wait()
	if err := observability.WriteFile(r.path, r.rec, r.red); err != nil {
		return fmt.Errorf("cannot write the record: %w", err)
	}
	r.changed = false
	return nil
}
