package spawn

import (
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/pipe"
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
// time even when agents report concurrently (parallel reviewers). The
// sinks see each event before emit returns (the record: the run reads it
// back); the sinks of later see an agent's progress soon after, on a
// goroutine of their own, and every other event before emit returns (see
// queued); close waits until they have seen every event.
type stream struct {
	mu    sync.Mutex
	run   string
	now   func() time.Time
	sinks []Sink
	later *queued // nil: there are no other sinks
}

// newStream is the stream of run: the record sees each event as it is
// emitted, then the others see it in turn, on their own goroutine.
func newStream(run string, now func() time.Time, record Sink, others ...Sink) *stream {
	return &stream{run: run, now: now, sinks: []Sink{record}, later: newQueued(others...)}
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
	if s.later != nil {
		s.later.Event(e)
	}
}

// add appends a sink: it sees the events emitted from now on, before
// emit returns.
func (s *stream) add(sink Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinks = append(s.sinks, sink)
}

// close returns once every sink has seen every event emitted before it;
// the events emitted after it reach them before emit returns.
func (s *stream) close() {
	if s.later != nil {
		s.later.close()
	}
}

// maxQueued bounds the events a queued holds that its sinks have not seen:
// an agent whose events come faster than the sinks take them waits.
const maxQueued = 1024

// queued hands events to its sinks, in order. An agent's progress events
// (EventAgent), which come by the thousand from a streaming agent, are
// handed over on a goroutine of their own (a pipe): writing events.ndjson
// (JSON and redaction for every event) and the narration cost as much as
// reading an agent's stream, and the two run side by side. Its memory is
// bounded: at most maxQueued events wait, and the emitter waits for room.
// Every other event (a phase, a process, a commit: a few a turn) the sinks
// see before emit returns, once they have seen every earlier one.
type queued struct {
	sinks []Sink
	pipe  *pipe.Pipe[observability.Event]
}

func newQueued(sinks ...Sink) *queued {
	q := &queued{sinks: sinks}
	q.pipe = pipe.New(maxQueued, q.hand)
	return q
}

// Event hands e to the sinks: an agent's progress event is queued, waiting
// for room; any other is handed over at once, after what was queued. Once
// closed, the sinks see e once they have seen what was queued.
func (q *queued) Event(e observability.Event) {
	if e.Kind == observability.EventAgent {
		q.pipe.Put(e)
		return
	}
	q.pipe.Do(func() { q.hand(e) })
}

// hand gives e to every sink.
func (q *queued) hand(e observability.Event) {
	for _, sink := range q.sinks {
		sink.Event(e)
	}
}

// close waits until the sinks have seen every event queued.
func (q *queued) close() { q.pipe.Close() }
