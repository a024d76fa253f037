package spawn

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// TestTheSinksSeeEveryEventInOrderBeforeTheStreamCloses: the record sees
// each event as it is emitted; the event log and the caller's sink, which
// see them on a goroutine of their own, have seen every one, in order,
// once close returns, even when they are slower than the events come.
// Events emitted after close reach them before emit returns.
func TestTheSinksSeeEveryEventInOrderBeforeTheStreamCloses(t *testing.T) {
	var record, slow []string
	var mu sync.Mutex
	s := newStream("run-1", time.Now,
		SinkFunc(func(e observability.Event) { record = append(record, e.Text) }),
		SinkFunc(func(e observability.Event) {
			mu.Lock()
			defer mu.Unlock()
			if len(slow)%500 == 0 {
				time.Sleep(time.Millisecond)
			}
			slow = append(slow, e.Text)
		}))
	const n = 3 * maxQueued
	var want []string
	for i := range n {
		want = append(want, strconv.Itoa(i))
		s.emit(observability.Event{Kind: observability.EventAgent, Agent: &observability.Progress{}, Text: want[i]})
		require.Len(t, record, i+1, "the record sees an event before emit returns")
	}
	s.close()
	mu.Lock()
	assert.Equal(t, want, slow)
	mu.Unlock()

	s.emit(observability.Event{Kind: observability.EventNote, Text: "after"})
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "after", slow[len(slow)-1], "once closed, emit hands the event over at once")
	assert.Len(t, slow, n+1)
}

// An event other than an agent's progress (a phase, a process, a commit:
// what a caller acts on) reaches every sink before emit returns, after
// every progress event emitted before it.
func TestTheSinksSeeARunsOtherEventsBeforeEmitReturns(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	s := newStream("run-1", time.Now, Discard, SinkFunc(func(e observability.Event) {
		if e.Kind == observability.EventAgent {
			time.Sleep(100 * time.Microsecond) // slower than the events come
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, e.Text)
	}))
	defer s.close()
	var want []string
	for round := range 3 {
		for i := range 200 {
			want = append(want, fmt.Sprintf("progress %d.%d", round, i))
			s.emit(observability.Event{Kind: observability.EventAgent, Agent: &observability.Progress{}, Text: want[len(want)-1]})
		}
		want = append(want, fmt.Sprintf("phase %d", round))
		s.emit(observability.Event{Kind: observability.EventPhase, Text: want[len(want)-1]})
		mu.Lock()
		assert.Equal(t, want, seen, "round %d: the phase and everything before it, in order", round)
		mu.Unlock()
	}
}

// TestASlowSinkHoldsTheEmitterBack: the events a sink has not seen yet
// are bounded; the emitter waits for room.
func TestASlowSinkHoldsTheEmitterBack(t *testing.T) {
	release := make(chan struct{})
	seen := make(chan struct{}, 1)
	s := newStream("run-1", time.Now, Discard, SinkFunc(func(observability.Event) {
		select {
		case seen <- struct{}{}:
		default:
		}
		<-release
	}))
	emitted := make(chan int)
	go func() {
		for i := range 3 * maxQueued {
			s.emit(observability.Event{Kind: observability.EventAgent, Agent: &observability.Progress{}})
			if i == 2*maxQueued {
				emitted <- i
			}
		}
		close(emitted)
	}()
	<-seen
	select {
	case i := <-emitted:
		t.Fatalf("emitted %d events while the sink took none", i)
	case <-time.After(100 * time.Millisecond):
	}
	held := s.later.pipe.Waiting()
	assert.LessOrEqual(t, held, maxQueued)
	close(release)
	for range emitted {
	}
	s.close()
}
