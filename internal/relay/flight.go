package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/peer"
)

// flight is one request through the relay, from its arrival to the
// count of its answer.
type flight struct {
	seq uint64
	// conn is the client's connection (nil when unknown); client is the
	// request's context, which the server cancels when its background
	// read finds the connection's end or a write to it fails.
	conn   net.Conn
	client context.Context
	// left is done once the relay knows the client went away, from the
	// server or from the connection itself (gone).
	left  context.Context
	leave context.CancelFunc
	// landed is closed once the answer was counted (Used returned), or
	// the request ended with nothing to count: count closes it.
	landed chan struct{}
	count  func()
}

// takeOff registers req as a flight, after every request that arrived
// before it. land, called once the answer was counted, unregisters it.
func (r *Relay) takeOff(req *http.Request) (f *flight, land func()) {
	f = &flight{client: req.Context(), landed: make(chan struct{})}
	f.count = sync.OnceFunc(func() { close(f.landed) })
	f.conn, _ = req.Context().Value(connKey{}).(net.Conn)
	f.left, f.leave = context.WithCancel(context.Background())
	unwatch := context.AfterFunc(f.client, f.leave)
	r.mu.Lock()
	r.seq++
	f.seq = r.seq
	r.flights[f] = struct{}{}
	r.mu.Unlock()
	return f, func() {
		unwatch()
		f.leave()
		r.mu.Lock()
		delete(r.flights, f)
		r.mu.Unlock()
		f.count()
	}
}

// cut makes every write to f's client fail from now on. It cannot fail
// but on a connection closed already, whose writes fail anyway.
func (f *flight) cut() {
	if f.conn != nil {
		f.conn.SetWriteDeadline(time.Unix(1, 0))
	}
}

// gone reports whether f's client has gone away: the server saw it go,
// or its connection says so now. The server alone does not see it soon
// enough: it learns on a goroutine of its own, in no order with the next
// connection's request, and not at all while the client's last bytes are
// unread (its background read stops at the first byte past a request).
// gone marks f left: its answer's drain limit starts.
func (f *flight) gone() bool {
	if f.left.Err() != nil {
		return true
	}
	if f.client.Err() != nil || f.conn != nil && peer.Closed(f.conn) {
		f.leave()
		return true
	}
	return false
}

// settle waits until no flight that arrived before f is uncounted while
// its client has gone away: a request is checked against the budget only
// once every such answer was counted. An answer whose client is still
// there is not waited for (a CLI's requests side by side). The wait is
// bounded: a flight found gone is drained at most drainLimit more. It
// returns ctx's error if ctx ends first (the client of f went away too),
// or the relay's once it is closed.
func (r *Relay) settle(ctx context.Context, f *flight) error {
	for {
		a := r.abandoned(f.seq)
		if a == nil {
			return nil
		}
		select {
		case <-a.landed:
		case <-ctx.Done():
			return ctx.Err()
		case <-r.closed.Done():
			return fmt.Errorf("relay: closing: %w", r.closed.Err())
		}
	}
}

// takeSlot takes one of g's slots for f, waiting while every one is
// taken. free gives it back; calling it again does nothing. It returns an
// error, taking nothing, if ctx ends first or f's client goes away (the
// server does not always say so: it is asked every goneEvery), once the
// relay is closed, or at once (errWaitingFull) when seatWaiters of g's
// requests wait already.
func (r *Relay) takeSlot(ctx context.Context, f *flight, g grant) (free func(), err error) {
	select {
	case g.slots <- struct{}{}:
		return sync.OnceFunc(func() { <-g.slots }), nil
	default:
	}
	select {
	case g.waiting <- struct{}{}:
		defer func() { <-g.waiting }()
	default:
		return nil, errWaitingFull
	}
	tick := time.NewTicker(goneEvery)
	defer tick.Stop()
	for {
		select {
		case g.slots <- struct{}{}:
			return sync.OnceFunc(func() { <-g.slots }), nil
		case <-ctx.Done():
			return nil, fmt.Errorf("relay: waiting for a slot: %w", ctx.Err())
		case <-f.left.Done():
			return nil, errors.New("relay: the client went away waiting for a slot")
		case <-r.closed.Done():
			return nil, fmt.Errorf("relay: closing: %w", r.closed.Err())
		case <-tick.C:
			f.gone() // marks f left if it is
		}
	}
}

// errWaitingFull means a seat's slots are taken and seatWaiters of its
// requests wait already.
var errWaitingFull = errors.New("relay: the seat's waiting room is full")

// goneEvery is how often a request waiting for a slot asks whether its
// client went away.
const goneEvery = 50 * time.Millisecond

// abandoned returns a flight that arrived before seq, is uncounted and
// whose client has gone away; nil when there is none.
func (r *Relay) abandoned(seq uint64) *flight {
	r.mu.Lock()
	var earlier []*flight
	for f := range r.flights {
		if f.seq < seq {
			earlier = append(earlier, f)
		}
	}
	r.mu.Unlock()
	for _, f := range earlier {
		if f.gone() {
			return f
		}
	}
	return nil
}

// connKey is the context key of a request's connection.
type connKey struct{}

// withConn is the server's ConnContext: each request's context holds its
// connection, for gone to ask.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}
