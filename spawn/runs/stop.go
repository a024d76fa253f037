package runs

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrNotLive: the run to stop has no live process (it ended, or its
// process is on another host).
var ErrNotLive = errors.New("run is not live")

// NotLiveError says why a run cannot be stopped. It matches ErrNotLive.
type NotLiveError struct {
	ID    string
	State State
	// Holder is the process that held the run, when it is known: gone,
	// or on another host.
	Holder *Holder
}

// Error says, in one sentence, why the run cannot be stopped.
func (e *NotLiveError) Error() string {
	switch {
	case e.State == StateRunning && e.Holder != nil:
		return fmt.Sprintf("run %s is held by spawn %s, which this host cannot signal; stop it there", e.ID, e.Holder)
	case e.State == StateRunning:
		return fmt.Sprintf("run %s is live, but its lock does not say which process holds it; stop it in its terminal (Ctrl-C)", e.ID)
	case e.State == StateFinished:
		return fmt.Sprintf("run %s has already ended; spawn show %s has its outcome", e.ID, e.ID)
	}
	return fmt.Sprintf("run %s is not running (it is %s); spawn show %s says more", e.ID, e.State, e.ID)
}

// Unwrap returns ErrNotLive.
func (e *NotLiveError) Unwrap() error { return ErrNotLive }

// Stop asks the spawn process that holds live run e to stop the run the
// way Ctrl-C does: SIGTERM, upon which spawn stops the agents (SIGTERM to
// their process trees, a grace period, SIGKILL), commits their work on the
// run's branch and finishes the record as interrupted (exit code 130).
// With force it also sends SIGINT, the second interrupt, upon which the
// agents are killed at once; their work is still committed. A holder
// already stopping takes force as that second interrupt.
//
// Stop only signals: it returns at once, and the caller waits for the run
// to end (its State leaves StateRunning). A run with no live holder on
// this host is a *NotLiveError; a signal that cannot be sent is an error
// naming the process.
func (e Entry) Stop(force bool) error {
	if e.State != StateRunning || e.Holder == nil {
		return &NotLiveError{ID: e.ID, State: e.State, Holder: e.Holder}
	}
	alive, err := e.Holder.Alive()
	if err != nil {
		return fmt.Errorf("cannot tell whether run %s's spawn process (%s) lives: %w", e.ID, e.Holder, err)
	}
	if !alive {
		return &NotLiveError{ID: e.ID, State: e.State, Holder: e.Holder}
	}
	sigs := []syscall.Signal{syscall.SIGTERM}
	if force {
		// Two different signals: two of the same, sent at once, may
		// reach the process as one.
		sigs = append(sigs, syscall.SIGINT)
	}
	for _, sig := range sigs {
		if err := syscall.Kill(e.Holder.PID, sig); err != nil {
			return fmt.Errorf("cannot stop run %s (signal %v to pid %d): %w", e.ID, sig, e.Holder.PID, err)
		}
	}
	return nil
}
