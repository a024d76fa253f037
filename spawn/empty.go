package spawn

import (
	"context"
	"fmt"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

// neverStarted reports whether a run failed before the coder produced any
// change: an agent that could not log in, reach its model API or start
// at all, and not a single commit on the sandbox branch. Such a run's
// worktree and branch hold nothing; its record is what is worth keeping.
func neverStarted(err error, rec *observability.Record) bool {
	switch KindOf(err) {
	case fault.KindAuth, fault.KindModelAPI, fault.KindModelUnavailable, fault.KindUnreachable, fault.KindRateLimited, fault.KindAgentCrashed, fault.KindAgentFailed:
	default:
		return false
	}
	return len(rec.Commits) == 0
}

// removeEmptySandbox removes the worktree and branch of a run that never
// started (neverStarted), clears them from the record and says so in its
// notes. The error is an internal *fault.Error when they could not be removed.
func (r *run) removeEmptySandbox(ctx context.Context, cause error) error {
	if err := r.sb.Remove(ctx); err != nil {
		return fault.Errorf(fault.KindInternal, err, "cannot remove the empty sandbox %s: %v", r.sb.Path, err)
	}
	r.record.mu.Lock()
	r.rec.SandboxPath, r.rec.Branch = "", ""
	r.record.mu.Unlock()
	r.emit(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("the run failed before the coder changed anything (%s): its worktree %s and branch %s were removed; this record stays", KindOf(cause), r.sb.Path, r.sb.Branch)})
	return nil
}
