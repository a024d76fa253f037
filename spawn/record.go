package spawn

import (
	"fmt"
	"slices"
	"sync"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
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

// save writes the record as it is now, and returns the error of that write.
func (r *recorder) save() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := observability.WriteFile(r.path, r.rec, r.red); err != nil {
		return fmt.Errorf("cannot write the record: %w", err)
	}
	return nil
}
