package spawn

import (
	"context"
	"errors"
	"time"

	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// Stop stops the live run e the way Ctrl-C does (runs.Entry.Stop: the
// agents stopped, their work committed, the record interrupted); force
// kills the agents at once. It only signals. A run that is not live is a
// usage *Error saying so; a signal that cannot be sent is an internal one.
func (r *Repo) Stop(e runs.Entry, force bool) error {
	err := e.Stop(force)
	var notLive *runs.NotLiveError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &notLive):
		return errorf(KindUsage, err, "%v", err)
	}
	return errorf(KindInternal, err, "%v", err)
}

// Await waits until run e is no longer running or ctx ends, reading the
// registry every poll. Before each wait it calls each, when not nil, with
// the run as last seen; an error from each ends the wait. Await returns
// the run as last seen, with ctx's error when ctx ended first.
func (r *Repo) Await(ctx context.Context, e runs.Entry, poll time.Duration, each func(runs.Entry) error) (runs.Entry, error) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for e.State == runs.StateRunning {
		if each != nil {
			if err := each(e); err != nil {
				return e, err
			}
		}
		select {
		case <-ctx.Done():
			return e, ctx.Err()
		case <-tick.C:
		}
		next, err := r.Find(e.ID)
		if err != nil {
			return e, err
		}
		e = next
	}
	return e, nil
}
