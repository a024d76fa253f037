package pipe

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The values put in a pipe are handled in order, each once, on one
// goroutine, however far the handler falls behind; the pipe fills up to
// its bound and no further; Close returns once the last was handled.
func TestAPipeHandlesEveryValueInOrder(t *testing.T) {
	const bound, n = 16, 5000
	var got []int
	most := 0
	var p *Pipe[int]
	p = New(bound, func(v int) {
		if v%500 == 0 {
			// The handler falls behind until the producer has filled
			// the pipe and waits for room.
			for p.Waiting() < bound {
				runtime.Gosched()
			}
		}
		got = append(got, v)
		most = max(most, p.Waiting())
	})
	for i := range n {
		p.Put(i)
	}
	p.Close()
	require.Len(t, got, n)
	for i, v := range got {
		require.Equal(t, i, v)
	}
	assert.Equal(t, bound, most, "the pipe filled to its bound and no further")

	// Once closed, a value is handled before Put returns.
	p.Put(n + 1)
	assert.Equal(t, n+1, got[len(got)-1])
}

// Do runs in order among the values: after those put before it, before
// those put after it; and two callers of Do at once both get their turn
// without waiting for a value to come.
func TestDoComesInOrderAmongTheValues(t *testing.T) {
	var mu sync.Mutex
	var seen []int
	add := func(v int) {
		mu.Lock()
		seen = append(seen, v)
		mu.Unlock()
	}
	p := New(4, add)
	for i := range 10 {
		p.Put(i)
	}
	p.Do(func() { add(-1) })
	p.Put(10)
	p.Close()
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, 10}, seen)

	q := New(4, func(int) {})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 200 {
				q.Do(func() {})
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a Do waited for the handler after the other had returned")
	}
	q.Close()
}
