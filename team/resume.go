package team

import (
	"context"
	"errors"
	"fmt"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
)

// Progress is how far a run's loop got, as its record tells: the input
// of Continue.
type Progress struct {
	// Coded is the last round whose coder turn started; 0 when none did.
	Coded int
	// CodedDone says that turn finished: the coder gave a final message.
	CodedDone bool
	// CoderText is the coder's last final message.
	CoderText string
	// Coder is the coder's session, to resume; "" when it reported none.
	Coder string
	// Reviewed is the last review round that finished; 0 when none did.
	Reviewed int
	// ReviewedCommit is the commit that round reviewed; "" when unknown.
	ReviewedCommit string
	// Verdict is the last finished round's verdict, "" when none finished.
	Verdict observability.ReviewVerdict
	// Findings are every finding reported so far, in the order first
	// reported, with their last status; Rounds says in which round each
	// was first reported.
	Findings []observability.Finding
	Rounds   map[string]int
}

// ProgressOf reads a run's progress from its record.
func ProgressOf(rec *observability.Record) Progress {
	p := Progress{Rounds: map[string]int{}}
	for _, c := range rec.CommandLines {
		if c.Role != observability.RoleCoder {
			continue
		}
		if c.Iteration > p.Coded {
			p.Coded, p.CodedDone = c.Iteration, false
		}
		if c.Session != "" {
			p.Coder = c.Session
		}
	}
	for _, m := range rec.CoderMessages {
		if m.Iteration == p.Coded {
			p.CodedDone, p.CoderText = true, m.Text
		}
	}
	for _, fb := range rec.ReviewFeedback {
		if fb.Iteration > p.Reviewed {
			p.Reviewed, p.ReviewedCommit, p.Verdict = fb.Iteration, fb.Commit, fb.Verdict
		} else if fb.Iteration == p.Reviewed && fb.Verdict != observability.ReviewApprove {
			p.Verdict = fb.Verdict // a round approves only when every seat does
		}
		for _, f := range fb.Findings {
			if _, ok := p.Rounds[f.ID]; !ok {
				p.Rounds[f.ID] = fb.Iteration
				p.Findings = append(p.Findings, f)
			}
		}
	}
	// The findings' statuses are the last round's: the record keeps each
	// finding's current status in every entry that reported it.
	latest := map[string]observability.Finding{}
	for _, fb := range rec.ReviewFeedback {
		for _, f := range fb.Findings {
			latest[f.ID] = f
		}
	}
	for i, f := range p.Findings {
		p.Findings[i] = latest[f.ID]
	}
	return p
}

// ErrNothingToContinue means the run ended where a continuation has
// nothing to do: approved, or a solo run that finished.
var ErrNothingToContinue = errors.New("nothing to continue")

// Continue goes on with a run's loop from where its progress says it
// stopped, up to review round lastRound, and returns the run's verdict:
//
//   - a coder turn that was cut off runs again, in the coder's session
//     (prompts.Continue), then its review;
//   - a coder turn that finished but was never reviewed is reviewed;
//   - a review round that ended the loop without an approval is followed
//     by a fix turn for its open findings, then the next review.
//
// Reviewer seats start new sessions: a full review of the change with the
// open findings. It fails with ErrNothingToContinue, before any turn, when
// the run was approved or is a solo run whose coder turn finished.
func Continue(ctx context.Context, p Policy, task, base string, run Run, from Progress, lastRound int) (observability.Verdict, error) {
	if err := Continuable(p.Mode, from); err != nil {
		return observability.VerdictNone, err
	}
	if p.Mode == observability.ModeSolo {
		_, err := run.Code(ctx, CoderTurn{Round: max(from.Coded, 1), Prompt: prompts.Continue(task), Resume: from.Coder})
		return observability.VerdictNone, err
	}
	l := newLoop(p, task, base, run)
	l.maxRounds = lastRound
	l.coder = Reply{Session: from.Coder, Text: from.CoderText}
	if from.ReviewedCommit != "" {
		l.reviewed = from.ReviewedCommit
	}
	for _, f := range from.Findings {
		l.findings[f.ID] = &tracked{finding: prompts.Finding{ID: f.ID, Severity: f.Severity, Domain: f.Domain, File: f.File, Line: f.Line,
			Title: f.Title, Detail: f.Detail, Suggestion: f.Suggestion}, status: f.Status, round: from.Rounds[f.ID]}
		l.order = append(l.order, f.ID)
	}
	switch {
	case from.Coded == 0:
		// The run stopped before the coder's first turn started.
		return l.drive(ctx)
	case from.Reviewed >= from.Coded && len(l.openFindings(nil)) > 0:
		if err := l.fix(ctx, from.Reviewed, false); err != nil {
			return observability.VerdictNone, err
		}
		return l.rounds(ctx, from.Reviewed+1)
	case from.Reviewed >= from.Coded:
		// A review that failed, with nothing open: review again.
		return l.rounds(ctx, from.Reviewed+1)
	case from.CodedDone:
		if from.Coded > 1 {
			l.replies = prompts.ParseCoderReplies(from.CoderText, findingIDs(l.openFindings(nil)))
			l.said = prompts.Attribute(from.CoderText, l.openFindings(nil))
		}
		return l.rounds(ctx, from.Coded)
	case from.Coded == 1:
		if err := l.code(ctx, 1, prompts.Continue(prompts.Task(task))); err != nil {
			return observability.VerdictNone, err
		}
		return l.rounds(ctx, 1)
	}
	// A fix turn was cut off: its findings are the ones still open.
	if err := l.fix(ctx, from.Coded-1, true); err != nil {
		return observability.VerdictNone, err
	}
	return l.rounds(ctx, from.Coded)
}

// Continuable says whether Continue has anything to do for a run of mode
// with progress from: nil, or an error matching ErrNothingToContinue that
// says why not.
func Continuable(mode observability.Mode, from Progress) error {
	switch {
	case mode == observability.ModeSolo && from.CodedDone:
		return fmt.Errorf("%w: the coder's turn finished and a solo run has no review to go on with", ErrNothingToContinue)
	case mode != observability.ModeSolo && from.Reviewed >= from.Coded && from.Reviewed > 0 && from.Verdict == observability.ReviewApprove:
		return fmt.Errorf("%w: the reviewers approved the work", ErrNothingToContinue)
	}
	return nil
}
