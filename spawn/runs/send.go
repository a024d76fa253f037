package runs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/inbox"
)

// SendWait is how long `spawn send` waits, by default, to see its message
// delivered before it reports it queued.
const SendWait = 3 * time.Second

// Sent is what became of a message sent with Send.
type Sent struct {
	// Run is the run's id.
	Run string `json:"run"`
	// Delivered is true when the coder got the message within the wait.
	Delivered bool                  `json:"delivered"`
	Message   observability.Message `json:"message"`
}

// Send posts text to the inbox of the run ref names (an id, a unique
// prefix, or "last") and waits up to wait for the coder to get it. A run
// that is not live (finished, abandoned, or never started) is a usage
// *fault.Error: its coder will never read the message. A message still waiting
// when the run ends within the wait is withdrawn, and that is a usage
// *fault.Error too. Cancelling ctx ends the wait early; the message stays
// queued.
func (r *Repo) Send(ctx context.Context, ref, text string, wait time.Duration) (Sent, error) {
	if strings.TrimSpace(text) == "" {
		return Sent{}, fault.Errorf(fault.KindUsage, nil, "the message is empty; write what the coder should know, e.g. spawn send last \"use the existing logger\"")
	}
	e, err := r.Find(ref)
	if err != nil {
		return Sent{}, err
	}
	if e.State != StateRunning {
		return Sent{}, notLive(e)
	}
	in := e.Inbox()
	m, err := in.Post(text, time.Now())
	if err != nil {
		return Sent{}, fault.Errorf(fault.KindInternal, err, "cannot post the message to run %s: %v", e.ID, err)
	}
	sent := Sent{Run: e.ID, Message: m}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		got, err := in.Message(m.ID)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return sent, fault.Errorf(fault.KindInternal, err, "cannot read run %s's inbox: %v", e.ID, err)
		}
		if err == nil && got.DeliveredAt != nil {
			sent.Delivered, sent.Message = true, got
			return sent, nil
		}
		select {
		case <-ctx.Done():
			return sent, nil
		case <-deadline.C:
			return r.stillLive(e.ID, in, sent)
		case <-tick.C:
		}
	}
}

// stillLive checks, once the wait is over, that the run the queued
// message waits for is still live. When it ended meanwhile, the message is
// withdrawn (no coder would ever read it) and that is a usage *fault.Error;
// when the coder took it at the last moment, it is reported delivered.
func (r *Repo) stillLive(id string, in *inbox.Inbox, sent Sent) (Sent, error) {
	e, err := r.Registry.Find(id)
	if err != nil {
		return sent, fault.Errorf(fault.KindInternal, err, "cannot read the run registry: %v", err)
	}
	if e.State == StateRunning {
		return sent, nil
	}
	withdrawn, err := in.Withdraw(sent.Message.ID)
	if err != nil {
		return sent, fault.Errorf(fault.KindInternal, err, "run %s ended and its coder will not read the message, which could not be withdrawn: %v", id, err)
	}
	if withdrawn {
		return sent, notLive(e)
	}
	got, err := in.Message(sent.Message.ID)
	if err == nil && got.DeliveredAt != nil {
		sent.Delivered, sent.Message = true, got
	}
	return sent, nil
}

// notLive is the usage *fault.Error for a message to a run that is not running.
func notLive(e Entry) error {
	why := "is not running"
	switch e.State {
	case StateFinished:
		why = "has finished"
	case StateAbandoned:
		why = "was abandoned (its spawn process died)"
	}
	next := fmt.Sprintf("spawn resume %s continues it, then send again", e.ID)
	if rec, err := e.ReadRecord(); err == nil && e.State != StateAbandoned {
		if err := Resumable(rec); err != nil {
			next = "it has nothing left to continue; spawn run starts a new run"
		}
	}
	return fault.Errorf(fault.KindUsage, nil, "run %s %s, so no coder will read the message; spawn send reaches only a live run: %s", e.ID, why, next)
}
