package watcher

import (
	"sync"

	"github.com/infinite-improbability-drive/spawn/runners"
)

// eventPipe hands an agent's events from the goroutine that parses its
// stream to one that handles them (Options.OnEvent: the session's
// tracker, the run's events), in order: the two run side by side, as
// parsing and handling each cost as much as the other. The handler takes
// what waits all at once and wakes the parser only when the pipe was
// full, so that a stream of events costs few wakeups; at most maxPiped
// events wait.
type eventPipe struct {
	handle func(runners.Event)

	mu     sync.Mutex
	ready  sync.Cond // events wait, or closed
	room   sync.Cond // the pipe has room again
	q      []runners.Event
	closed bool
	done   chan struct{} // the handler returned: every event was handled
}

// maxPiped bounds the events an eventPipe holds that are not handled yet.
const maxPiped = 256

// newEventPipe starts the goroutine that calls handle with each event put
// in the pipe, in order, until the pipe is closed and empty.
func newEventPipe(handle func(runners.Event)) *eventPipe {
	p := &eventPipe{handle: handle, done: make(chan struct{})}
	p.ready.L, p.room.L = &p.mu, &p.mu
	go p.run()
	return p
}

// put queues e, waiting for room.
func (p *eventPipe) put(e runners.Event) {
	p.mu.Lock()
	for len(p.q) >= maxPiped {
		p.room.Wait()
	}
	p.q = append(p.q, e)
	if len(p.q) == 1 {
		p.ready.Signal()
	}
	p.mu.Unlock()
}

// close returns once every event put was handled.
func (p *eventPipe) close() {
	p.mu.Lock()
	p.closed = true
	p.ready.Signal()
	p.mu.Unlock()
	<-p.done
}

func (p *eventPipe) run() {
	defer close(p.done)
	var spare []runners.Event
	for {
		p.mu.Lock()
		for len(p.q) == 0 && !p.closed {
			p.ready.Wait()
		}
		batch := p.q
		p.q = spare[:0]
		p.room.Broadcast()
		p.mu.Unlock()
		if len(batch) == 0 {
			return // closed, and every event handled
		}
		for _, e := range batch {
			p.handle(e)
		}
		clear(batch) // keep no event past its handling
		spare = batch
	}
}
