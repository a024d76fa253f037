package proc

import (
	"context"
	"time"
)

// Trace is told what spawn waited for: each command Run ran to its end,
// and each request to a process of spawn's own that answers many (the
// sandbox's git helper, see Waited). It is how a benchmark splits a run's
// own time between the processes it needs and spawn's own code, as
// net/http/httptrace is for a request. A context carries it (WithTrace);
// without one, nothing is told.
type Trace struct {
	// Waited is called once what was waited for has ended: what names it
	// (a command's path, or the helper's name), start and end are when
	// the wait began and ended. It may be called from several goroutines
	// at once.
	Waited func(what string, start, end time.Time)
}

type traceKey struct{}

// WithTrace returns ctx carrying t: the commands Run runs with it, and
// what is reported with Waited, are told to t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// Waited tells the trace ctx carries, if any, that spawn waited for what
// from start until now.
func Waited(ctx context.Context, what string, start time.Time) {
	if t, ok := ctx.Value(traceKey{}).(*Trace); ok && t.Waited != nil {
		t.Waited(what, start, time.Now())
	}
}
