package spawn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// commitLeftovers records the commits the coder made itself since the last
// known commit, then commits whatever it left uncommitted as spawn: one
// status of the worktree, then add and commit only when it changed.
func (r *run) commitLeftovers(ctx context.Context, round int) error {
	subject, msg := commitMessage(r.rec.ID, r.opts.Task, round, r.addressed(round))
	saved, err := r.sb.Save(ctx, r.conf.helperJail(), r.red.String(msg))
	r.noteLeftovers(saved.Leftovers)
	cli := r.pre.seats.coder
	coder := agent{llm: cli.llm(), role: observability.RoleCoder, round: round, cli: cli.name()}
	if len(saved.Removed) > 0 {
		r.security(coder, observability.FindingSandboxBlocked, observability.SeverityHigh, r.sb.Path,
			fmt.Sprintf("the coder planted %s in its git store, which would have led git out of it; spawn removed them", strings.Join(saved.Removed, " and ")),
			"Read the run's branch before merging: an agent that plants git pointers was probably prompt-injected.")
	}
	if saved.HeadRef != "" && saved.HeadRef != "refs/heads/"+r.sb.Branch {
		r.security(coder, observability.FindingSandboxBlocked, observability.SeverityHigh, r.sb.Path,
			fmt.Sprintf("the coder pointed its git store's HEAD at %s instead of the run's branch; spawn published its commits on %s only, and nothing of yours moved", saved.HeadRef, r.sb.Branch),
			"Read the run's branch before merging: an agent that redirects its HEAD was probably prompt-injected.")
	}
	known := map[string]bool{}
	r.mu.Lock()
	for _, c := range r.rec.Commits {
		known[c.SHA] = true
	}
	r.mu.Unlock()
	for _, c := range saved.Own {
		if !known[c.SHA] && c.SHA != saved.Committed {
			r.emit(observability.Event{Kind: observability.EventCommit, Round: round, Commit: &observability.Commit{SHA: c.SHA, Message: c.Subject, Iteration: round, LLM: cli.llm()}})
		}
	}
	if saved.Committed != "" && saved.Published == saved.Committed {
		r.emit(observability.Event{Kind: observability.EventCommit, Round: round, Commit: &observability.Commit{SHA: saved.Committed, Message: r.red.String(subject), Iteration: round, LLM: observability.LLMSpawn}})
	}
	if err != nil {
		if errors.Is(err, sandbox.ErrGone) {
			return r.sandboxError(err, "")
		}
		r.security(coder, observability.FindingSandboxBlocked, observability.SeverityHigh, r.sb.Path,
			fmt.Sprintf("spawn could not save the coder's work from its sandbox onto %s: %v", r.sb.Branch, err),
			"The work is still in the worktree; look at it before anything else: a coder that breaks its own git store was probably prompt-injected.")
		return r.sandboxError(err, "cannot save the coder's work in "+r.sb.Path)
	}
	r.mu.Lock()
	r.saved = true
	r.mu.Unlock()
	return nil
}

// addressed are the findings the review before a fix round reported,
// which that round's coder turn was asked to address; none in round 1.
func (r *run) addressed(round int) []observability.Finding {
	r.record.mu.Lock()
	defer r.record.mu.Unlock()
	var out []observability.Finding
	seen := map[string]bool{}
	for _, fb := range r.rec.ReviewFeedback {
		for _, f := range fb.Findings {
			if fb.Iteration == round-1 && !seen[f.ID] {
				seen[f.ID] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// Head is the commit at the tip of the sandbox branch.
func (r *run) Head(ctx context.Context) (string, error) {
	sha, err := r.sb.Head(ctx)
	if err != nil {
		return "", r.sandboxError(err, "cannot read the sandbox's HEAD")
	}
	return sha, nil
}

// Diff is the change from..to on the sandbox branch.
func (r *run) Diff(ctx context.Context, from, to string) (string, error) {
	d, err := r.sb.Diff(ctx, from, to)
	if err != nil {
		return "", r.sandboxError(err, "cannot diff the sandbox branch")
	}
	return d, nil
}

// Reviewed puts a finished review round on the event stream.
func (r *run) Reviewed(round observability.Round) {
	r.emit(observability.Event{Kind: observability.EventReview, Round: round.Number, Review: &round})
}

// recordError is the record's first write error as an internal *fault.Error
// (the work is committed before it is reported), nil when the record is
// being written.
func (r *run) recordError() error {
	if err := r.record.Err(); err != nil {
		return fault.Errorf(fault.KindInternal, err, "%v; the work is committed on %s", err, r.sb.Branch)
	}
	return nil
}

// sandboxError is err as a *fault.Error: sandbox_gone when the worktree was
// deleted, internal otherwise.
func (r *run) sandboxError(err error, msg string) error {
	if errors.Is(err, sandbox.ErrGone) {
		return fault.Errorf(fault.KindSandboxGone, err, "%v", err)
	}
	return fault.Errorf(fault.KindInternal, err, "%s: %v", msg, err)
}
