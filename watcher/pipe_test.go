package watcher

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/runners"
)

// The events a parser puts in the pipe are handled in order, each once,
// on one goroutine, however far the handler falls behind; close returns
// once the last was handled, and the pipe never holds more than maxPiped.
func TestEventPipeHandsEveryEventInOrder(t *testing.T) {
	var got []string
	most := 0
	var p *eventPipe
	p = newEventPipe(func(e runners.Event) {
		if len(got)%500 == 0 {
			time.Sleep(time.Millisecond) // the handler falls behind
		}
		got = append(got, e.Text)
		p.mu.Lock()
		most = max(most, len(p.q))
		p.mu.Unlock()
	})
	const n = 5000
	for i := range n {
		p.put(runners.Event{Kind: runners.KindText, Text: fmt.Sprint(i)})
	}
	p.close()
	require.Len(t, got, n)
	for i, text := range got {
		require.Equal(t, fmt.Sprint(i), text)
	}
	assert.LessOrEqual(t, most, maxPiped)
	assert.Positive(t, most, "the parser ran ahead of the handler")
}
