package forge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/team"
	"github.com/infinite-improbability-drive/spawn/team/github"
)

var _ team.Forge = (*Hub)(nil)

// AfterCode pushes the branch after a coder turn and opens the pull
// request after the first. After a fix turn it keeps what the coder said
// about each finding with a thread (said: the reply contract, else its
// prose), for the reply that names the fix once a review round confirms
// it (AfterReview), and answers each finding the coder declined
// ("Declined: <reason>"; the thread stays open). No thread is said fixed
// here: a fix is named only once it is verified.
func (h *Hub) AfterCode(ctx context.Context, round int, said []prompts.Attribution) error {
	sha, err := h.push(ctx)
	if err != nil {
		return apiError(err, "pushed "+h.work.Branch)
	}
	h.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: round, GitHub: &observability.GitHubStep{Pushed: sha}})
	h.mu.Lock()
	opened := h.opened
	h.mu.Unlock()
	if !opened {
		pr, _, err := h.client.EnsurePR(ctx, github.NewPR{Head: h.work.Branch, Base: h.base, Title: text.FirstLine(h.work.Task),
			Body:  h.work.Redactor.String(h.work.Task) + "\n\n" + github.SummaryStart + "\n" + h.prSummary("the coder's first turn is pushed; the review comes next") + "\n" + github.SummaryEnd,
			Draft: h.cfg.Draft})
		if err != nil {
			return apiError(err, "opened the pull request")
		}
		h.mu.Lock()
		h.pr, h.opened = pr, true
		h.mu.Unlock()
		h.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: round, GitHub: &observability.GitHubStep{PRURL: pr.URL, PullRequest: pullRequestOf(pr, sha)}})
	}
	if round > 1 {
		h.mu.Lock()
		h.said = map[string]prompts.Attribution{}
		for _, a := range said {
			h.said[a.FindingID] = a
		}
		h.mu.Unlock()
	}
	for _, a := range said {
		h.mu.Lock()
		root, ok := h.threads[a.FindingID]
		h.mu.Unlock()
		if !ok || a.Action != observability.CoderDeclined {
			continue // a finding in a review's body has no thread; a fix is named once verified
		}
		m := github.Marker{Run: h.work.ID, Round: round, Seat: string(observability.ReplyDeclined), Finding: a.FindingID}
		if err := h.replyInThread(ctx, h.client, root, m, threadReply{kind: observability.ReplyDeclined, round: round,
			body: "Declined: " + a.Words, state: observability.ThreadDeclined}); err != nil {
			return err
		}
	}
	return h.setSummary(ctx, fmt.Sprintf("round %d's work is pushed; the review comes next", round))
}

// pullRequestOf is pr as the record keeps it; sha is its head when the
// run took it up.
func pullRequestOf(pr github.PullRequest, sha string) *observability.PullRequest {
	return &observability.PullRequest{Number: pr.Number, URL: pr.URL, Head: pr.HeadRef, Base: pr.BaseRef, HeadSHA: sha, Author: pr.Author}
}

// threadReply is one reply spawn posts in a thread, and what it makes of the
// thread.
type threadReply struct {
	kind    observability.ReplyKind
	round   int
	commits []string // full ids; the body names them short
	body    string
	state   observability.ThreadState
}

// replyInThread posts rep in the thread whose first comment is root (as
// client, with marker m), records it in the thread's entry with the
// thread's new state, and reports both. The reply exists before the
// thread's state says anything: a thread is never resolved without it.
func (h *Hub) replyInThread(ctx context.Context, client *github.Client, root int64, m github.Marker, rep threadReply) error {
	body := h.work.Redactor.String(rep.body)
	posted, _, err := client.Reply(ctx, h.prNumber(), root, m, body)
	if err != nil {
		return apiError(err, "replied to a review thread")
	}
	t := h.update(root, func(t *observability.GitHubThread) {
		t.Replies = append(t.Replies, observability.ThreadReply{CommentID: posted.ID, Kind: rep.kind, Round: rep.round,
			Commits: rep.commits, Body: body})
		t.State = rep.state
	})
	where := t.Path
	if t.Line > 0 {
		where += fmt.Sprintf(":%d", t.Line)
	}
	h.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: rep.round, GitHub: &observability.GitHubStep{Thread: &t, Reply: fmt.Sprintf("%s: %s", where, text.FirstLine(body))}})
	return nil
}

// update applies change to the record's entry of the thread whose first
// comment is root (made when missing) and returns a copy of it.
func (h *Hub) update(root int64, change func(*observability.GitHubThread)) observability.GitHubThread {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.entries[root]
	if !ok {
		t = &observability.GitHubThread{CommentID: root, State: observability.ThreadOpen}
		h.entries[root] = t
	}
	change(t)
	c := *t
	c.Replies = make([]observability.ThreadReply, len(t.Replies))
	for i, rep := range t.Replies {
		rep.Commits = append([]string{}, rep.Commits...)
		c.Replies[i] = rep
	}
	return c
}

// fixCommits names the commits from..to that changed file (all of them
// when file is ""), newest first, as full ids; the head to when none did.
func (h *Hub) fixCommits(ctx context.Context, from, to, file string) ([]string, error) {
	if from == "" || from == to {
		return []string{to}, nil
	}
	shas, err := h.run.Commits(ctx, from, to, file)
	if err != nil {
		return nil, err
	}
	if len(shas) > 0 {
		return shas, nil
	}
	return []string{to}, nil
}

// shortList is commits, short and comma-separated.
func shortList(commits []string) string {
	short := make([]string, len(commits))
	for i, c := range commits {
		short[i] = text.ShortSHA(c)
	}
	return strings.Join(short, ", ")
}

// coderWords is the part of a reply that quotes the coder on a finding:
// its words when they could be attributed, else that it did not name it.
func coderWords(a prompts.Attribution, ok bool) string {
	if !ok || a.Words == "" {
		return "The coder's final message does not name this thread."
	}
	return "The coder: " + asData(a.Words)
}

// BeforeReview marks the head under review pending.
func (h *Hub) BeforeReview(ctx context.Context, round int, head string) error {
	h.mu.Lock()
	h.head = head
	h.mu.Unlock()
	return h.setStatus(ctx, head, github.StatusPending, fmt.Sprintf("spawn is reviewing round %d", round))
}

// AfterReview posts the round's reviews, one per seat: new findings inline
// where the diff holds their line, the others in the body, the verdict in
// the body (and as the review's event with a reviewer identity). Each
// thread of a finding the round confirmed gets a reply naming its fix
// (the commits and this round, and the coder's words) and then is
// resolved; each thread still open gets a reply saying so.
func (h *Hub) AfterReview(ctx context.Context, round observability.Round) error {
	files, err := h.client.Files(ctx, h.prNumber())
	if err != nil {
		return apiError(err, "read the pull request's files")
	}
	diff, err := github.DiffFromFiles(files)
	if err != nil {
		return apiError(err, "read the pull request's diff")
	}
	state := map[string]observability.Finding{}
	for _, f := range round.Findings {
		state[f.ID] = f
	}
	h.mu.Lock()
	head := h.head
	h.mu.Unlock()
	approved := true
	var posted []postedReview
	for _, fb := range round.Feedback {
		if fb.Verdict != observability.ReviewApprove {
			approved = false
		}
		p, err := h.postReview(ctx, round.Number, fb, state, diff, head)
		if err != nil {
			return err
		}
		posted = append(posted, p)
	}
	threads, err := h.readThreads(ctx)
	if err != nil {
		return err
	}
	repeated := map[string]bool{}
	for _, p := range posted {
		for i, c := range p.rec.Comments {
			if th, ok := github.ThreadOf(threads, c.ID); ok {
				p.rec.Comments[i].ThreadID = th.ID
			}
		}
		rec := p.rec
		h.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: round.Number, GitHub: &observability.GitHubStep{Review: &rec}})
		for _, c := range rec.Comments {
			t := h.update(c.ID, func(t *observability.GitHubThread) {
				t.ID, t.Author, t.Path, t.Line, t.FindingID = c.ThreadID, p.author, c.Path, c.Line, c.FindingID
			})
			h.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: round.Number, GitHub: &observability.GitHubStep{Thread: &t}})
		}
		for _, f := range p.again {
			repeated[f.ID] = true
			if err := h.stillOpen(ctx, p.client, round.Number, p.seat, f, head); err != nil {
				return err
			}
		}
	}
	if err := h.resolveConfirmed(ctx, round, head, threads); err != nil {
		return err
	}
	if err := h.unconfirmed(ctx, round, head, repeated); err != nil {
		return err
	}
	h.mu.Lock()
	h.reviewed = head
	h.mu.Unlock()
	st, desc := github.StatusFailure, fmt.Sprintf("round %d: changes requested", round.Number)
	if approved {
		st, desc = github.StatusSuccess, fmt.Sprintf("round %d: approved", round.Number)
	}
	if err := h.setStatus(ctx, head, st, desc); err != nil {
		return err
	}
	return h.setSummary(ctx, fmt.Sprintf("review round %d: %s", round.Number, strings.ReplaceAll(desc[strings.Index(desc, ": ")+2:], "_", " ")))
}

// readThreads reads the pull request's review threads, and gives each
// thread spawn knows its GitHub id; nil when spawn has opened none.
func (h *Hub) readThreads(ctx context.Context) ([]github.Thread, error) {
	h.mu.Lock()
	n := len(h.threads)
	h.mu.Unlock()
	if n == 0 {
		return nil, nil
	}
	threads, err := h.client.Threads(ctx, h.prNumber())
	if err != nil {
		return nil, apiError(err, "read the review threads")
	}
	return threads, nil
}

// postedReview is one seat's review as posted: the record's entry (its
// comments' thread ids not yet read), who posted it, and the findings it
// raised again, whose threads are answered.
type postedReview struct {
	rec    observability.GitHubReview
	client *github.Client
	author string
	seat   string
	again  []observability.Finding
}

// postReview posts one seat's review of round: the findings without a
// thread, inline where the diff holds their line.
func (h *Hub) postReview(ctx context.Context, round int, fb observability.ReviewFeedback, state map[string]observability.Finding, diff github.Diff, head string) (postedReview, error) {
	var fresh []github.Finding
	var again []observability.Finding
	h.mu.Lock()
	for _, f := range fb.Findings {
		f = state[f.ID]
		if _, ok := h.threads[f.ID]; ok {
			again = append(again, f)
			continue
		}
		fresh = append(fresh, github.Finding{ID: f.ID, Path: f.File, Line: f.Line, Body: h.work.Redactor.String(findingComment(f))})
	}
	h.mu.Unlock()
	placed := diff.Place(fresh)
	var body strings.Builder
	verdict := "changes requested"
	if fb.Verdict == observability.ReviewApprove {
		verdict = "approved"
	} else if fb.Verdict == observability.ReviewFailed {
		verdict = "review failed (the reviewer's answer could not be used)"
	}
	fmt.Fprintf(&body, "**spawn review, round %d (%s): %s**\n\n%s\n", round, fb.Domain, verdict, h.work.Redactor.String(fb.Summary))
	if len(placed.Unplaced) > 0 {
		body.WriteString("\nFindings outside the diff:\n")
		for _, u := range placed.Unplaced {
			f := state[u.Finding.ID]
			fmt.Fprintf(&body, "- %s\n", h.work.Redactor.String(strings.ReplaceAll(findingComment(f), "\n", " ")))
		}
	}
	event := github.EventComment
	client, author := h.client, h.access.Login
	if h.reviewer != nil {
		client, author = h.reviewer, h.access.ReviewerLogin
		event = github.EventRequestChanges
		if fb.Verdict == observability.ReviewApprove {
			event = github.EventApprove
		}
	}
	marker := github.Marker{Run: h.work.ID, Round: round, Seat: fb.Domain}
	rev, err := client.SubmitReview(ctx, h.prNumber(), github.ReviewRequest{Marker: marker, Event: event, Body: body.String(), CommitID: head, Comments: placed.Inline})
	if err != nil {
		return postedReview{}, apiError(err, "posted the review of round "+fmt.Sprint(round))
	}
	rec := observability.GitHubReview{ID: rev.ID, Iteration: round, Seat: fb.Domain, State: rev.State, Body: rev.Body, Commit: head, URL: rev.URL}
	h.mu.Lock()
	for _, c := range rev.Comments {
		h.threads[c.FindingID] = c.ID
		h.files[c.FindingID] = c.Path
		h.raised[c.FindingID] = head
		rec.Comments = append(rec.Comments, observability.GitHubComment{ID: c.ID, FindingID: c.FindingID, Path: c.Path, Line: c.Line})
	}
	h.mu.Unlock()
	return postedReview{rec: rec, client: client, author: author, seat: fb.Domain, again: again}, nil
}

// stillOpen answers the thread of finding f, which review round raised
// again: what the reviewer says is still open, at which commit.
func (h *Hub) stillOpen(ctx context.Context, client *github.Client, round int, seat string, f observability.Finding, head string) error {
	h.mu.Lock()
	root := h.threads[f.ID]
	h.mu.Unlock()
	m := github.Marker{Run: h.work.ID, Round: round, Seat: seat, Finding: f.ID}
	text := fmt.Sprintf("Still open after review round %d (at %s): %s", round, text.ShortSHA(head), f.Detail)
	return h.replyInThread(ctx, client, root, m, threadReply{kind: observability.ReplyStillOpen, round: round, body: text, state: observability.ThreadOpen})
}

// unconfirmed answers the threads of the findings a fix turn addressed
// that review round neither confirmed nor raised again (repeated): they
// stay open, and the thread says the round did not confirm the fix (or
// did not accept the coder's reason for declining).
func (h *Hub) unconfirmed(ctx context.Context, round observability.Round, head string, repeated map[string]bool) error {
	for _, f := range round.Findings {
		h.mu.Lock()
		root, ok := h.threads[f.ID]
		raised := h.raised[f.ID]
		a, said := h.said[f.ID]
		h.mu.Unlock()
		if !ok || f.Status != observability.FindingOpen || repeated[f.ID] || raised == head {
			continue
		}
		what := "did not confirm the fix"
		if said && a.Action == observability.CoderDeclined {
			what = "did not accept the coder's reason for declining it"
		}
		m := github.Marker{Run: h.work.ID, Round: round.Number, Seat: "unconfirmed", Finding: f.ID}
		text := fmt.Sprintf("Still open after review round %d (at %s): the review %s.", round.Number, text.ShortSHA(head), what)
		if err := h.replyInThread(ctx, h.client, root, m, threadReply{kind: observability.ReplyStillOpen, round: round.Number, body: text, state: observability.ThreadOpen}); err != nil {
			return err
		}
	}
	return nil
}

// findingComment is a finding as a review comment.
func findingComment(f observability.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** (%s, %s): %s", asData(f.Title), f.Severity, f.Domain, asData(f.Detail))
	if f.File != "" && f.Line > 0 {
		fmt.Fprintf(&b, " (%s:%d)", f.File, f.Line)
	}
	if f.Suggestion != "" {
		fmt.Fprintf(&b, "\n\nSuggestion: %s", asData(f.Suggestion))
	}
	return b.String()
}

// resolveConfirmed settles the threads of the findings round confirmed
// resolved. Each first gets its reply: "Fixed in <the commits since its
// thread was opened that changed its file, else the head>, verified by
// review round N" with the coder's words for it, or, for a finding the
// coder declined, that the round accepted the reason. Only then is it
// resolved. A token that may not resolve threads (Actions' GITHUB_TOKEN)
// gets one more reply asking a person to, and the record notes it: not a
// failure.
func (h *Hub) resolveConfirmed(ctx context.Context, round observability.Round, head string, threads []github.Thread) error {
	var ids []string
	for _, fb := range round.Feedback {
		for _, id := range append(slices.Clone(fb.Resolved), fb.ResolvedByApproval...) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	for _, id := range ids {
		h.mu.Lock()
		root, ok := h.threads[id]
		file, from := h.files[id], h.raised[id]
		a, said := h.said[id]
		h.mu.Unlock()
		if !ok {
			continue
		}
		th, ok := github.ThreadOf(threads, root)
		if !ok || th.Resolved {
			continue
		}
		rep := threadReply{kind: observability.ReplyFixed, round: round.Number, state: observability.ThreadFixed}
		if said && a.Action == observability.CoderDeclined {
			rep.kind = observability.ReplyAccepted
			rep.body = fmt.Sprintf("Review round %d (at %s) accepted the coder's reason for declining it: %s", round.Number, text.ShortSHA(head), a.Words)
		} else {
			commits, err := h.fixCommits(ctx, from, head, file)
			if err != nil {
				return err
			}
			rep.commits = commits
			rep.body = fmt.Sprintf("Fixed in %s: verified by review round %d (at %s).\n\n%s", shortList(commits), round.Number, text.ShortSHA(head), coderWords(a, said))
		}
		m := github.Marker{Run: h.work.ID, Round: round.Number, Seat: string(rep.kind), Finding: id}
		if err := h.replyInThread(ctx, h.client, root, m, rep); err != nil {
			return err
		}
		done := observability.ResolvedComment{CommentID: root, ThreadID: th.ID, FindingID: id, Commit: head,
			Explanation: fmt.Sprintf("review round %d confirmed it fixed at %s", round.Number, text.ShortSHA(head)),
			ResolvedBy:  observability.ResolvedByVerification, Resolved: true}
		if rep.kind == observability.ReplyAccepted {
			done.Explanation = fmt.Sprintf("review round %d accepted the coder's reason for declining it", round.Number)
		}
		err := h.client.Resolve(ctx, th.ID)
		switch {
		case errors.Is(err, github.ErrCannotResolve):
			done.Resolved = false
			done.Explanation += "; this token cannot resolve review threads, so the thread is left for a person to resolve"
			m := github.Marker{Run: h.work.ID, Round: round.Number, Seat: "verified", Finding: id}
			if err := h.replyInThread(ctx, h.client, root, m, threadReply{kind: observability.ReplyCannotResolve, round: round.Number, state: rep.state,
				body: "spawn's token cannot resolve review threads: please resolve this one."}); err != nil {
				return err
			}
			h.run.Emit(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("the GitHub token cannot resolve review threads; spawn replied in the thread of finding %s instead", id)})
		case err != nil:
			return apiError(err, "resolved a review thread")
		default:
			t := h.update(root, func(t *observability.GitHubThread) { t.State = observability.ThreadResolved })
			h.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: round.Number, GitHub: &observability.GitHubStep{Thread: &t}})
		}
		h.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: round.Number, GitHub: &observability.GitHubStep{Resolved: &done}})
	}
	return nil
}

// AfterLoop marks an approved draft ready for review, and writes the
// run's final summary into the pull request.
func (h *Hub) AfterLoop(ctx context.Context, verdict observability.Verdict) error {
	if verdict == observability.VerdictApproved {
		pr, err := h.client.PR(ctx, h.prNumber())
		if err != nil {
			return apiError(err, "read the pull request")
		}
		if err := h.client.MarkReady(ctx, pr); err != nil {
			return apiError(err, "marked the pull request ready for review")
		}
	}
	return h.setSummary(ctx, "the run ended: "+strings.ReplaceAll(string(verdict), "_", " "))
}

// setStatus sets spawn's commit status on sha and records it.
func (h *Hub) setStatus(ctx context.Context, sha string, state github.StatusState, desc string) error {
	if err := h.client.SetStatus(ctx, sha, state, desc, ""); err != nil {
		return apiError(err, "set the commit status")
	}
	h.run.Emit(observability.Event{Kind: observability.EventGitHub, GitHub: &observability.GitHubStep{Status: &observability.GitHubStatus{SHA: sha, Context: github.StatusContext, State: string(state), Description: desc}}})
	return nil
}

// setSummary rewrites the run's summary in the pull request's body.
func (h *Hub) setSummary(ctx context.Context, now string) error {
	if _, err := h.client.SetSummary(ctx, h.prNumber(), h.prSummary(now)); err != nil {
		return apiError(err, "updated the pull request's description")
	}
	return nil
}

// prSummary is the part of the pull request's body spawn keeps up to
// date: where the run is, its rounds and open findings.
func (h *Hub) prSummary(now string) string {
	so := h.run.Progress()
	var b strings.Builder
	fmt.Fprintf(&b, "**spawn** run `%s`: %s.\n", h.work.ID, now)
	if len(so.Reviews) > 0 {
		b.WriteString("\n| round | reviewer | verdict | findings |\n|---|---|---|---|\n")
		for _, fb := range so.Reviews {
			fmt.Fprintf(&b, "| %d | %s | %s | %d |\n", fb.Iteration, fb.Domain, fb.Verdict, len(fb.Findings))
		}
	}
	fmt.Fprintf(&b, "\ncost so far: $%.4f", so.CostUSD)
	return h.work.Redactor.String(b.String())
}
