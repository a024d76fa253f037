// Package pipe hands values from the goroutines that make them to one that
// handles them, in order: the two run side by side. It is how an agent's
// stream is parsed on one goroutine while its events are handled on
// another, and how spawn's events reach the sinks that write them.
package pipe

import "sync"

// Pipe holds the values put in it until its goroutine hands them to its
// handler, in the order they were put. The goroutine takes what waits all
// at once, and a producer is woken only when the pipe was full, so that a
// stream of values costs few wakeups. At most its bound wait: Put waits
// for room.
type Pipe[T any] struct {
	handle func(T)
	bound  int

	mu    sync.Mutex
	ready sync.Cond // values wait, or closed
	room  sync.Cond // room again, or the handler is free
	q     []T
	// busy: the handler runs, on the pipe's goroutine (a batch) or on a
	// caller's (Do); either waits for the other.
	busy   bool
	closed bool
	done   chan struct{} // the goroutine returned: every value put was handled
}

// New starts the goroutine that hands each value put in the pipe to
// handle, until the pipe is closed and empty. At most bound values wait.
func New[T any](bound int, handle func(T)) *Pipe[T] {
	p := &Pipe[T]{handle: handle, bound: bound, done: make(chan struct{})}
	p.ready.L, p.room.L = &p.mu, &p.mu
	go p.run()
	return p
}

// Put queues v, waiting while the pipe is full. Once the pipe is closed,
// v is handled on the caller's goroutine, after every value put before.
func (p *Pipe[T]) Put(v T) {
	p.mu.Lock()
	for len(p.q) >= p.bound && !p.closed {
		p.room.Wait()
	}
	if p.closed {
		p.mu.Unlock()
		<-p.done
		p.handle(v)
		return
	}
	p.q = append(p.q, v)
	if len(p.q) == 1 {
		// The goroutine waits only on an empty pipe (or for Do, which
		// wakes it when done).
		p.ready.Signal()
	}
	p.mu.Unlock()
}

// Do runs f on the caller's goroutine once every value put before has
// been handled, and holds the handling of the values put meanwhile until
// f returns: f comes in order among them.
func (p *Pipe[T]) Do(f func()) {
	p.mu.Lock()
	for (len(p.q) > 0 || p.busy) && !p.closed {
		p.room.Wait()
	}
	if p.closed {
		p.mu.Unlock()
		<-p.done
		f()
		return
	}
	p.busy = true
	p.mu.Unlock()
	f()
	p.mu.Lock()
	p.busy = false
	p.ready.Signal()
	p.room.Broadcast() // another Do may wait for the handler
	p.mu.Unlock()
}

// Waiting is how many values wait to be handled.
func (p *Pipe[T]) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.q)
}

// Close returns once every value put was handled.
func (p *Pipe[T]) Close() {
	p.mu.Lock()
	p.closed = true
	p.ready.Signal()
	p.room.Broadcast()
	p.mu.Unlock()
	<-p.done
}

func (p *Pipe[T]) run() {
	defer close(p.done)
	var spare []T
	for {
		p.mu.Lock()
		for (len(p.q) == 0 || p.busy) && !p.closed {
			p.ready.Wait()
		}
		batch := p.q
		p.q = spare[:0]
		p.busy = len(batch) > 0
		p.room.Broadcast()
		p.mu.Unlock()
		if len(batch) == 0 {
			return // closed, and every value handled
		}
		for i := range batch {
			p.handle(batch[i])
		}
		clear(batch) // keep no value past its handling
		spare = batch
		p.mu.Lock()
		p.busy = false
		p.room.Broadcast()
		p.mu.Unlock()
	}
}
