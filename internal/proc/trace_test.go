package proc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunTellsTheTrace: each command Run runs with a traced context is
// told once it ended, failed or not, with the span it was waited for;
// without a trace, nothing is told.
func TestRunTellsTheTrace(t *testing.T) {
	var mu sync.Mutex
	type wait struct {
		what       string
		start, end time.Time
	}
	var waits []wait
	ctx := WithTrace(context.Background(), &Trace{Waited: func(what string, start, end time.Time) {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, wait{what, start, end})
	}})
	before := time.Now()
	_, err := Run(ctx, Cmd{Path: "sh", Args: []string{"-c", "sleep 0.05"}, Env: env()})
	require.NoError(t, err)
	_, err = Run(ctx, Cmd{Path: "sh", Args: []string{"-c", "exit 3"}, Env: env()})
	require.Error(t, err)
	_, err = Run(context.Background(), Cmd{Path: "sh", Args: []string{"-c", "true"}, Env: env()})
	require.NoError(t, err)
	Waited(ctx, "helper", before)

	require.Len(t, waits, 3)
	assert.Equal(t, []string{"sh", "sh", "helper"}, []string{waits[0].what, waits[1].what, waits[2].what})
	assert.GreaterOrEqual(t, waits[0].end.Sub(waits[0].start), 50*time.Millisecond, "the span covers the command's run")
	assert.False(t, waits[0].start.Before(before))
	assert.Equal(t, before, waits[2].start)
}
