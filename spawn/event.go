package spawn

import (
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// Sink receives a run's events, one at a time and in order: a run never
// calls Event concurrently. Event must not block for long; it must not
// change the event.
type Sink interface {
	Event(observability.Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(observability.Event)

// Event calls f(e).
func (f SinkFunc) Event(e observability.Event) { f(e) }

// Discard is a Sink that drops every event.
var Discard Sink = SinkFunc(func(observability.Event) {})

// stream stamps events and hands them to every sink in turn, one event at a
// time even when agents report concurrently (parallel reviewers).
type stream struct {
	mu    sync.Mutex
	run   string
	now   func() time.Time
	sinks []Sink
}

func (s *stream) emit(e observability.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = s.now().UTC()
	}
	if e.Run == "" {
		e.Run = s.run
	}
	for _, sink := range s.sinks {
		sink.Event(e)
	}
}

// add appends a sink: it sees the events emitted from now on.
func (s *stream) add(sink Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinks = append(s.sinks, sink)
}
