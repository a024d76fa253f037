package spawn

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// recorder is the Sink that keeps the record: it folds every event into
// the record and writes it atomically, secrets redacted. The first write
// error is kept (Err) and later events still change the record in memory,
// so the final state can be written once the cause is gone.
type recorder struct {
	mu   sync.Mutex
	rec  *observability.Record
	path string
	red  *observability.Redactor
	err  error
}

// Event folds e into the record and writes it.
func (r *recorder) Event(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !apply(r.rec, e) {
		return
	}
	if err := observability.WriteFile(r.path, r.rec, r.red); err != nil && r.err == nil {
		r.err = fmt.Errorf("cannot write the record: %w", err)
	}
}

// Err is the first error writing the record met, nil if none.
func (r *recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// hasMessage reports whether the record holds the message id.
func (r *recorder) hasMessage(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.rec.Messages, func(m observability.Message) bool { return m.ID == id })
}

// save writes the record as it is now, and returns the error of that write.
func (r *recorder) save() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := observability.WriteFile(r.path, r.rec, r.red); err != nil {
		return fmt.Errorf("cannot write the record: %w", err)
	}
	return nil
}

// apply folds one event into rec and reports whether rec changed.
func apply(rec *observability.Record, e Event) bool {
	switch e.Kind {
	case EventNote, EventWarning:
		rec.Notes = append(rec.Notes, e.Text)
	case EventSecurity:
		rec.SecurityFindings = append(rec.SecurityFindings, *e.Security)
	case EventProcess:
		rec.CommandLines = append(rec.CommandLines, *e.Process)
		if e.Usage != nil {
			rec.Usage.InputTokens += e.Usage.InputTokens
			rec.Usage.OutputTokens += e.Usage.OutputTokens
		}
	case EventSession:
		rec.Usage.Turns += e.Usage.Turns
		rec.Usage.CostUSD += e.Usage.CostUSD
		if e.AgentUsage != nil {
			rec.Usage.ByAgent = append(rec.Usage.ByAgent, *e.AgentUsage)
		}
		if e.Role == observability.RoleCoder && e.Text != "" {
			rec.CoderMessages = append(rec.CoderMessages, observability.CoderMessage{Iteration: e.Round, Text: e.Text})
		}
	case EventCommit:
		rec.Commits = append(rec.Commits, *e.Commit)
	case EventGitHub:
		applyGitHub(rec, e.GitHub)
	case EventMessage:
		rec.Messages = append(rec.Messages, *e.Message)
	case EventResumed:
		rec.Resumes = append(rec.Resumes, *e.Resume)
		rec.Status, rec.Verdict, rec.ExitCode, rec.Error, rec.FinishedAt = observability.StatusRunning, observability.VerdictNone, 0, nil, nil
	case EventReview:
		applyReview(rec, e)
	case EventAgent:
		return applyAgent(rec, e)
	case EventFinished:
		o := e.Outcome
		rec.Verdict, rec.Error = o.Verdict, o.Error
		rec.Finish(o.Status, o.ExitCode, e.Time)
	default:
		return false
	}
	return true
}

func applyReview(rec *observability.Record, e Event) {
	r := e.Review
	rec.ReviewFeedback = append(rec.ReviewFeedback, r.Feedback...)
	rec.CoderReplies = append(rec.CoderReplies, r.CoderReplies...)
	state := map[string]observability.Finding{}
	for _, f := range r.Findings {
		state[f.ID] = f
	}
	for i := range rec.ReviewFeedback {
		for j, f := range rec.ReviewFeedback[i].Findings {
			if now, ok := state[f.ID]; ok {
				rec.ReviewFeedback[i].Findings[j] = now
			}
		}
	}
	// The reviewers' findings are replaced by the round's; spawn's own stay.
	var kept []observability.SecurityFinding
	for _, f := range rec.SecurityFindings {
		if f.Kind != observability.FindingReview {
			kept = append(kept, f)
		}
	}
	for _, f := range r.Security {
		f.Kind = observability.FindingReview
		kept = append(kept, f)
	}
	rec.SecurityFindings = kept
	if r.Note != "" {
		rec.Notes = append(rec.Notes, r.Note)
	}
}

func applyAgent(rec *observability.Record, e Event) bool {
	p := e.Agent
	switch p.Kind {
	case watcher.ProgressDenial:
		rec.PermissionsRequested = append(rec.PermissionsRequested, observability.PermissionRequest{
			LLM: e.LLM, Iteration: e.Round, Tool: p.Tool, Input: p.Input, Rule: p.Rule,
		})
	case watcher.ProgressEscalation:
		rec.PermissionsGranted = append(rec.PermissionsGranted, observability.PermissionGrant{
			LLM: e.LLM, Iteration: e.Round, Tool: p.Tool, Rule: p.Rule,
		})
	case watcher.ProgressQuestion:
		rec.Questions = append(rec.Questions, observability.Question{
			LLM: e.LLM, Iteration: e.Round, Question: p.Detail, Confidence: p.Confidence,
		})
	case watcher.ProgressAnswer:
		// The answer is to the last question this agent asked in this round.
		for i := len(rec.Questions) - 1; i >= 0; i-- {
			if q := &rec.Questions[i]; q.LLM == e.LLM && q.Iteration == e.Round {
				q.Answer = p.Detail
				break
			}
		}
	case watcher.ProgressLimit:
		rec.Notes = append(rec.Notes, p.Detail)
	default:
		return false
	}
	return true
}

// eventLog is the Sink that appends every event to events.ndjson in the run
// directory, one JSON object a line, secrets redacted: `spawn logs` reads
// it. The first write error is kept (Err); later events are not written.
type eventLog struct {
	mu  sync.Mutex
	f   *os.File
	red *observability.Redactor
	err error
}

func openEventLog(path string, red *observability.Redactor) (*eventLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the event log: %w", err)
	}
	return &eventLog{f: f, red: red}, nil
}

// Event appends e.
func (l *eventLog) Event(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	e.Record = nil // the record has a file of its own
	b, err := json.Marshal(e)
	if err == nil {
		_, err = l.f.Write(append(l.red.Bytes(b), '\n'))
	}
	if err != nil {
		l.err = fmt.Errorf("write the event log %s: %w", l.f.Name(), err)
	}
}

// Close closes the file and returns the first error the log met.
func (l *eventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = fmt.Errorf("close the event log: %w", err)
	}
	return l.err
}

// appendEvent appends one event to the event log at path, for a process
// that writes a run's log without running it (repairing it).
func appendEvent(path string, red *observability.Redactor, e Event) error {
	l, err := openEventLog(path, red)
	if err != nil {
		return err
	}
	l.Event(e)
	return l.Close()
}

// applyGitHub folds one step on GitHub into the record.
func applyGitHub(rec *observability.Record, g *GitHubStep) {
	if g.PullRequest != nil {
		pr := *g.PullRequest
		rec.PullRequest = &pr
		if rec.PRURL == nil && pr.URL != "" {
			rec.PRURL = &pr.URL
		}
	}
	if g.Thread != nil {
		putThread(rec, *g.Thread)
	}
	switch {
	case g.PRURL != "":
		url := g.PRURL
		rec.PRURL = &url
	case g.Pushed != "":
		// Every commit recorded so far is on the pushed branch.
		for i := range rec.Commits {
			rec.Commits[i].Pushed = true
		}
	case g.Review != nil:
		rec.GitHubReviews = append(rec.GitHubReviews, *g.Review)
	case g.Resolved != nil:
		rec.ResolvedComments = append(rec.ResolvedComments, *g.Resolved)
		if !g.Resolved.Resolved {
			return
		}
		for i := range rec.GitHubReviews {
			for j, c := range rec.GitHubReviews[i].Comments {
				if c.ID == g.Resolved.CommentID {
					rec.GitHubReviews[i].Comments[j].Resolved = true
					rec.GitHubReviews[i].Comments[j].ResolvedByCommit = g.Resolved.Commit
				}
			}
		}
	case g.Status != nil:
		rec.GitHubStatuses = append(rec.GitHubStatuses, *g.Status)
	}
}

// putThread replaces the record's entry of thread t (by its first
// comment), or appends it.
func putThread(rec *observability.Record, t observability.GitHubThread) {
	t.Replies = slices.Clone(t.Replies)
	for i := range rec.GitHubThreads {
		if rec.GitHubThreads[i].CommentID == t.CommentID {
			rec.GitHubThreads[i] = t
			return
		}
	}
	rec.GitHubThreads = append(rec.GitHubThreads, t)
}
