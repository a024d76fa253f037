package spawn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/team"
)

// A 429 whose reset is further away than this is a usage limit (an
// account's quota, for hours), not a rate limit the CLI retries.
const usageLimitMin = time.Minute

// usageLimit is the error of a turn that ended at its account's usage
// limit, or nil when the turn's failure f is not one: the CLI said so, or
// the relay saw the provider refuse the seat with a reset more than
// usageLimitMin away (q, seen). The reset is the provider's when the relay
// saw it (to the second), else the CLI's (codex says a minute: the end of
// it is taken); the error says when it is and that resume goes on.
func (r *run) usageLimit(who agent, f runners.Failure, q quota, seen bool) error {
	reset := f.ResetAt
	said := f.Message
	if seen && !q.resetAt.IsZero() {
		reset = q.resetAt // the provider's time, to the second; a CLI's words round it to the minute
	}
	if said == "" {
		said = q.message
	}
	if f.Kind != runners.FailureUsageLimit && (!seen || q.resetAt.Sub(q.seen) <= usageLimitMin) {
		return nil
	}
	when := "the provider did not say when it resets"
	if !reset.IsZero() {
		when = fmt.Sprintf("it resets at %s (in %s)", reset.UTC().Format("2006-01-02 15:04 UTC"), max(time.Until(reset), 0).Round(time.Minute))
	}
	if said != "" {
		said = " (" + oneLine(said) + ")"
	}
	e := fault.Errorf(fault.KindUsageLimit, nil, "%s reached its account's usage limit%s; %s; the work is committed on %s, and spawn resume %s goes on from here once it has reset (or set wait_for_quota in [spawn] to wait for it)",
		who.cli, said, when, r.sb.Branch, r.dir.ID)
	e.ResetAt = reset
	return e
}

// waitForQuota runs turn, and when it ends at a usage limit that resets
// within what is left of wait_for_quota, says so, waits for the reset and
// runs it again with next (the turn to resume with what the ended one
// replied); until a turn ends otherwise or the wait would exceed the
// bound. Waiting ends early, with the limit's error, when ctx ends.
func (r *run) waitForQuota(ctx context.Context, who string, turn func() (team.Reply, error), next func(team.Reply)) (team.Reply, error) {
	left := r.opts.Config.Spawn.WaitForQuota
	for {
		reply, err := turn()
		var se *fault.Error
		if left <= 0 || !errors.As(err, &se) || se.Kind != fault.KindUsageLimit || se.ResetAt.IsZero() {
			return reply, err
		}
		wait := time.Until(se.ResetAt) + time.Second
		if wait > left {
			r.emit(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("%s's usage limit resets in %s, later than wait_for_quota allows (%s left): the run stops here", who, wait.Round(time.Second), left.Round(time.Second))})
			return reply, err
		}
		r.emit(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("%s reached its usage limit; waiting %s for it to reset at %s (wait_for_quota)", who, wait.Round(time.Second), se.ResetAt.UTC().Format("15:04:05 UTC"))})
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return reply, errors.Join(fault.Errorf(fault.KindInterrupted, ctx.Err(), "interrupted while waiting for %s's usage limit to reset; the work is committed on %s", who, r.sb.Branch), err)
		case <-timer.C:
		}
		left -= wait
		r.emit(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("%s's usage limit has reset; going on", who)})
		next(reply)
	}
}
