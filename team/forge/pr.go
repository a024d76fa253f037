package forge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/team"
	"github.com/infinite-improbability-drive/spawn/team/github"
)

// thread is a person's review thread spawn pr acts on, as the coder sees
// it: a finding whose id is derived from the thread.
type thread struct {
	github.Thread
	finding prompts.Finding
}

// Review is a person's review on an open pull request that spawn pr
// addresses: the pull request, its head (fetched into the user's
// repository), and its threads, weighed.
type Review struct {
	PR github.PullRequest
	// Head is the commit the pull request's branch was at when fetched:
	// the run's base.
	Head    string
	trusted []thread
	skipped []observability.GitHubThread
}

// Task is the run's task: the pull request's review to address.
func (rv *Review) Task() string {
	return fmt.Sprintf("Address the review of pull request #%d: %s", rv.PR.Number, rv.PR.Title)
}

// Take finds the pull request ref names (its number, #number, or its URL),
// refuses one spawn pr cannot address (a *RefusedError: a fork's, one not
// open, one with no unresolved, current thread from a trusted author),
// weighs its threads (weigh), and fetches its branch into repo. The hub's
// pushes go to that branch from then on. A GitHub failure reading the
// threads, the permissions or the branch is an *Error; an error finding
// the pull request is the client's (a *github.PreflightError when there
// is no such pull request). Nothing is created.
func (h *Hub) Take(ctx context.Context, repo git.Repo, ref string) (*Review, error) {
	pr, err := h.client.PRByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	switch {
	case pr.Fork:
		return nil, &RefusedError{Sentence: fmt.Sprintf("pull request #%d comes from a fork (%s); spawn pr works only on branches of %s, which it can push to", pr.Number, pr.HeadRepo, h.loc.FullName())}
	case pr.State != "" && pr.State != "open":
		return nil, &RefusedError{Sentence: fmt.Sprintf("pull request #%d is %s; spawn pr works on open pull requests", pr.Number, pr.State)}
	}
	all, err := h.client.Threads(ctx, pr.Number)
	if err != nil {
		return nil, &Error{Doing: "read the review threads", Err: err}
	}
	trusted, skipped, err := h.weigh(ctx, all)
	if err != nil {
		return nil, &Error{Doing: "read the reviewers' permissions", Err: err}
	}
	if len(trusted) == 0 {
		return nil, &RefusedError{Sentence: fmt.Sprintf("pull request #%d has no unresolved, current review thread from a trusted author (write, maintain or admin, or [github] trusted_authors)%s; nothing to address", pr.Number, skippedSuffix(skipped))}
	}
	head, err := github.Fetch(ctx, repo, h.loc.Remote, pr.HeadRef)
	if err != nil {
		return nil, &Error{Doing: "fetched the pull request's branch", Err: err}
	}
	h.mu.Lock()
	h.pr, h.opened, h.pushTo = pr, true, pr.HeadRef
	h.mu.Unlock()
	return &Review{PR: pr, Head: head, trusted: trusted, skipped: skipped}, nil
}

// weigh splits a pull request's threads into those spawn pr acts on (open,
// current, opened by a trusted author) and those it leaves alone, each
// with why: already resolved, spawn's own, outdated, an untrusted author.
// A thread's comments reach the coder only from trusted authors.
func (h *Hub) weigh(ctx context.Context, threads []github.Thread) (trusted []thread, skipped []observability.GitHubThread, err error) {
	perms := map[string]bool{}
	trust := func(login string) (bool, error) {
		if ok, seen := perms[login]; seen {
			return ok, nil
		}
		ok := slices.Contains(h.cfg.TrustedAuthors, login)
		if !ok && login != "" {
			p, err := h.client.Permission(ctx, login)
			if err != nil {
				return false, err
			}
			ok = p.Trusted()
		}
		perms[login] = ok
		return ok, nil
	}
	for _, t := range threads {
		why := observability.SkipReason("")
		switch {
		case t.Resolved:
			why = observability.SkipResolved
		case t.Spawn():
			why = observability.SkipSpawn
		case t.Outdated:
			why = observability.SkipOutdated
		default:
			ok, err := trust(t.Author())
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				why = observability.SkipUntrusted
			}
		}
		if why != "" {
			skipped = append(skipped, observability.GitHubThread{ID: t.ID, CommentID: t.Root().ID, Author: t.Author(), Path: t.Path, Line: t.Line,
				State: observability.ThreadSkipped, Skipped: why})
			continue
		}
		var said []string
		for _, c := range t.Comments {
			if c.Spawn() {
				continue
			}
			ok, err := trust(c.Author)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				said = append(said, fmt.Sprintf("%s: %s", c.Author, github.StripMarkers(c.Body)))
			}
		}
		title := strings.TrimSpace(text.FirstLine(github.StripMarkers(t.Root().Body)))
		trusted = append(trusted, thread{Thread: t, finding: prompts.Finding{
			ID: prompts.FindingID("review", t.Path, t.ID), Severity: observability.SeverityMedium, Domain: string(prompts.GeneralPolish),
			File: t.Path, Line: t.Line, Title: title, Detail: strings.Join(said, "\n")}})
	}
	return trusted, skipped, nil
}

// skippedSuffix says how many threads were left alone, and why.
func skippedSuffix(skipped []observability.GitHubThread) string {
	if len(skipped) == 0 {
		return ""
	}
	n := map[observability.SkipReason]int{}
	for _, t := range skipped {
		n[t.Skipped]++
	}
	var parts []string
	for _, why := range observability.SkipReasons() {
		if n[why] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[why], skipWords(why)))
		}
	}
	return fmt.Sprintf(" (%s left alone: %s)", text.Plural(len(skipped), "thread"), strings.Join(parts, ", "))
}

// skipWords says a skip reason in words.
func skipWords(why observability.SkipReason) string {
	switch why {
	case observability.SkipUntrusted:
		return "from authors who are not trusted"
	case observability.SkipOutdated:
		return "outdated"
	case observability.SkipResolved:
		return "already resolved"
	case observability.SkipSpawn:
		return "opened by spawn"
	}
	return string(why)
}

// FixPolicy is how spawn pr's run fixes a review.
type FixPolicy struct {
	// MaxIterations bounds the coder's turns ([spawn-team]
	// max_iterations; below 1 is one turn).
	MaxIterations int
	// Verifier is who checks the fixes in records: the run's first
	// reviewer. Unused without [github] verify_fixes.
	Verifier observability.LLM
}

// Fix is spawn pr's strategy on rv, which Take returned: the coder's turn
// (agents.Code) on the trusted threads, the push to the pull request's
// branch, then, with [github] verify_fixes, the reviewer's check
// (agents.Review, reported with agents.Reviewed) of each thread's fix and
// the replies; again for the threads still open, within p.MaxIterations
// turns. The hub must be attached to the run (Attach). It returns the
// run's verdict: approved when the reviewer confirmed every thread and
// found no critical or high problem in the change, changes_requested when
// a thread is still open or was declined (or the change has such a
// problem), review_failed when the reviewer's answer could not be used,
// none without verify_fixes. An error from agents is returned as it is;
// a GitHub failure is an *Error.
func (h *Hub) Fix(ctx context.Context, agents team.Run, rv *Review, p FixPolicy) (observability.Verdict, error) {
	f := &fixing{Hub: h, agents: agents, maxIterations: p.MaxIterations, verifier: p.Verifier}
	return f.fixPR(ctx, rv.trusted, rv.skipped, rv.Head)
}

// fixing is one spawn pr run's fix of a review: the hub, and the run's
// agents.
type fixing struct {
	*Hub
	agents        team.Run
	maxIterations int               // [spawn-team] max_iterations, as configured
	verifier      observability.LLM // who checks the fixes
}

// fixPR is spawn pr's strategy: the coder's turn on the trusted threads,
// the push, the reviewer's check of each thread's fix, the replies; again
// for the threads still open, within max_iterations.
func (p *fixing) fixPR(ctx context.Context, threads []thread, skipped []observability.GitHubThread, head string) (observability.Verdict, error) {
	p.run.Emit(observability.Event{Kind: observability.EventGitHub, GitHub: &observability.GitHubStep{PullRequest: pullRequestOf(p.pr, head)}})
	for _, t := range skipped {
		if t.Skipped == observability.SkipUntrusted {
			p.run.Emit(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("the review thread of %s on %s:%d was left alone: %s is not a trusted author (write, maintain or admin, or [github] trusted_authors)", t.Author, t.Path, t.Line, t.Author)})
		}
		left := t
		e := p.update(left.CommentID, func(e *observability.GitHubThread) { *e = left })
		p.run.Emit(observability.Event{Kind: observability.EventGitHub, GitHub: &observability.GitHubStep{Thread: &e}})
	}
	for _, t := range threads {
		e := p.update(t.Root().ID, func(e *observability.GitHubThread) {
			e.ID, e.Author, e.Path, e.Line, e.FindingID = t.ID, t.Author(), t.Path, t.Line, t.finding.ID
		})
		p.run.Emit(observability.Event{Kind: observability.EventGitHub, GitHub: &observability.GitHubStep{Thread: &e}})
	}
	verify := p.cfg.VerifyFixes
	maxRounds := max(p.maxIterations, 1)
	pending := threads
	declined := false
	var session string
	for round := 1; ; round++ {
		findings := make([]prompts.Finding, len(pending))
		for i, t := range pending {
			findings[i] = t.finding
		}
		prompt, err := prompts.Fix(prompts.FixInput{Task: p.work.Task, Findings: findings, Round: round})
		if err != nil {
			return observability.VerdictNone, fmt.Errorf("cannot write the coder's prompt: %w", err)
		}
		reply, err := p.agents.Code(ctx, team.CoderTurn{Round: round, Prompt: prompt, Resume: session})
		if reply.Session != "" {
			session = reply.Session
		}
		if err != nil {
			return observability.VerdictNone, err
		}
		sha, err := p.push(ctx)
		if err != nil {
			return observability.VerdictNone, apiError(err, "pushed the fix to the pull request's branch")
		}
		p.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: round, GitHub: &observability.GitHubStep{Pushed: sha}, Text: fmt.Sprintf("pushed %s to %s", text.ShortSHA(sha), p.pushTo)})
		said := map[string]prompts.Attribution{}
		for _, a := range prompts.Attribute(reply.Text, findings) {
			said[a.FindingID] = a
		}
		var check []thread
		for _, t := range pending {
			a, ok := said[t.finding.ID]
			if !ok || a.Action != observability.CoderDeclined {
				check = append(check, t)
				continue
			}
			declined = true
			m := github.Marker{Run: p.work.ID, Round: round, Seat: string(observability.ReplyDeclined), Finding: t.finding.ID}
			if err := p.replyInThread(ctx, p.client, t.Root().ID, m, threadReply{kind: observability.ReplyDeclined, round: round,
				body: "Declined: " + a.Words, state: observability.ThreadDeclined}); err != nil {
				return observability.VerdictNone, err
			}
		}
		if len(check) == 0 {
			return observability.VerdictChangesRequested, nil
		}
		if !verify {
			return observability.VerdictNone, p.unverified(ctx, round, check, said, head, sha, "no reviewer checked it: [github] verify_fixes is off")
		}
		next, verdict, err := p.checkFix(ctx, round, check, said, reply.Text, head, sha, round < maxRounds)
		if err != nil || verdict == observability.VerdictReviewFailed {
			return verdict, err
		}
		switch {
		case len(next) == 0 && (declined || verdict != observability.VerdictApproved):
			return observability.VerdictChangesRequested, nil
		case len(next) == 0:
			return observability.VerdictApproved, nil
		case round >= maxRounds:
			return observability.VerdictChangesRequested, nil
		}
		pending = next
	}
}

// unverified answers each thread of check with the commits that changed
// its file and the coder's words, saying why no reviewer checked the fix;
// with resolve_human_threads, a thread the coder said (by the contract)
// it fixed is resolved after its reply.
func (p *fixing) unverified(ctx context.Context, round int, check []thread, said map[string]prompts.Attribution, head, sha, why string) error {
	var errs []error
	for _, t := range check {
		commits, err := p.fixCommits(ctx, head, sha, t.Path)
		if err != nil {
			return err
		}
		a, ok := said[t.finding.ID]
		body := fmt.Sprintf("Changed in %s (%s).\n\n%s", shortList(commits), why, coderWords(a, ok))
		if sha == head {
			commits = nil
			body = fmt.Sprintf("Not changed: the coder's turn changed no file (%s).\n\n%s", why, coderWords(a, ok))
		}
		m := github.Marker{Run: p.work.ID, Round: round, Seat: string(observability.ReplyUnverified), Finding: t.finding.ID}
		if err := p.replyInThread(ctx, p.client, t.Root().ID, m, threadReply{kind: observability.ReplyUnverified, round: round, commits: commits,
			body: body, state: observability.ThreadUnverified}); err != nil {
			return err
		}
		if ok && a.Action == observability.CoderFixed {
			errs = append(errs, p.resolvePersons(ctx, round, t, sha, a.Words))
		}
	}
	return errors.Join(errs...)
}

// resolvePersons resolves a person's thread spawn pr answered, when
// [github] resolve_human_threads allows it; a token that may not resolve
// threads is noted, not a failure.
func (p *fixing) resolvePersons(ctx context.Context, round int, t thread, sha, why string) error {
	if !p.cfg.ResolveHumanThreads {
		return nil
	}
	done := observability.ResolvedComment{CommentID: t.Root().ID, ThreadID: t.ID, FindingID: t.finding.ID, Commit: sha,
		Explanation: p.work.Redactor.String(why), ResolvedBy: observability.ResolvedByFix, Resolved: true}
	if err := p.client.Resolve(ctx, t.ID); err != nil {
		if !errors.Is(err, github.ErrCannotResolve) {
			return apiError(err, "resolved a review thread")
		}
		done.Resolved = false
		done.Explanation += "; this token cannot resolve review threads"
	} else {
		e := p.update(t.Root().ID, func(e *observability.GitHubThread) { e.State = observability.ThreadResolved })
		p.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: round, GitHub: &observability.GitHubStep{Thread: &e}})
	}
	p.run.Emit(observability.Event{Kind: observability.EventGitHub, Round: round, GitHub: &observability.GitHubStep{Resolved: &done}})
	return nil
}

// checkFix has the run's reviewer check the coder's change (head..sha)
// against each thread of check, and answers each thread: "Fixed in
// <commits>" with the check round when the reviewer confirms it, what is
// still open otherwise (and whether the coder gets another turn: more).
// It returns the threads still open, each with the reviewer's word added
// for the coder, and the check's verdict: approved when every thread is
// confirmed and the reviewer reports no critical or high problem the
// change introduces (those are recorded, not sent back to the coder:
// spawn pr addresses people's threads). A reviewer answer that cannot be used, even after a
// repair turn, is review_failed: each thread is answered with its commits,
// unverified.
func (p *fixing) checkFix(ctx context.Context, round int, check []thread, said map[string]prompts.Attribution, coderSaid, head, sha string, more bool) ([]thread, observability.Verdict, error) {
	diff, err := p.agents.Diff(ctx, head, sha)
	if err != nil {
		return nil, observability.VerdictNone, err
	}
	if len(diff) > maxVerifyDiff {
		diff = diff[:maxVerifyDiff] + fmt.Sprintf("\n[spawn: the diff is cut here; it is %d bytes long]\n", len(diff))
	}
	in := prompts.VerifyInput{Task: p.work.Task, Diff: diff, CoderSaid: coderSaid, Round: round}
	for _, t := range check {
		in.Threads = append(in.Threads, t.finding)
		if a, ok := said[t.finding.ID]; ok {
			in.Said = append(in.Said, a)
		}
	}
	prompt, err := prompts.Verify(in)
	if err != nil {
		return nil, observability.VerdictNone, fmt.Errorf("cannot write the reviewer's prompt: %w", err)
	}
	ans, err := p.askReviewer(ctx, round, prompt)
	if err != nil {
		return nil, observability.VerdictNone, err
	}
	fb := observability.ReviewFeedback{Iteration: round, Reviewer: p.verifier, Domain: "all", RawResponse: ans.raw, Commit: sha,
		DiffBytes: len(diff), PromptBytes: len(prompt), FullPromptBytes: len(prompt), Fresh: true, Tokens: ans.tokens, ParseError: ans.parseError}
	report := observability.Round{Number: round}
	for _, t := range check {
		if a, ok := said[t.finding.ID]; ok && a.Action != "" {
			report.CoderReplies = append(report.CoderReplies, observability.CoderReply{Iteration: round, FindingID: t.finding.ID, Action: a.Action, Reason: a.Words})
		}
	}
	if ans.parseError != "" {
		fb.Verdict, fb.Summary = observability.ReviewFailed, "the reviewer's answer could not be used, even after a repair turn"
		report.Feedback = []observability.ReviewFeedback{fb}
		report.Findings = threadFindings(check, nil, nil)
		p.agents.Reviewed(report)
		why := "spawn's reviewer could not check it: its answer could not be used, even after a repair turn"
		return nil, observability.VerdictReviewFailed, p.unverified(ctx, round, check, said, head, sha, why)
	}
	rev := ans.review
	fb.Verdict, fb.Summary = rev.Verdict, rev.Summary
	confirmed, open, fresh, blocking := judge(check, rev)
	for _, t := range check {
		if confirmed[t.finding.ID] {
			fb.Resolved = append(fb.Resolved, t.finding.ID)
		}
	}
	report.Findings = threadFindings(check, confirmed, open)
	for _, f := range report.Findings {
		if f.Status == observability.FindingOpen {
			fb.Findings = append(fb.Findings, f)
		}
	}
	report.Findings = append(report.Findings, fresh...)
	fb.Findings = append(fb.Findings, fresh...)
	report.Feedback = []observability.ReviewFeedback{fb}
	p.agents.Reviewed(report)

	next, err := p.answerChecked(ctx, round, check, said, confirmed, open, head, sha, more)
	if err != nil {
		return nil, observability.VerdictNone, err
	}
	verdict := observability.VerdictApproved
	if len(next) > 0 || blocking {
		verdict = observability.VerdictChangesRequested
	}
	return next, verdict, nil
}

// judge reads the reviewer's check of the threads of check: the threads
// it confirms fixed (by finding id, lower case), what it says is still
// open of the others, the problems it found that are no thread's (fresh:
// recorded, not sent back to the coder), and whether one of those is
// blocking.
func judge(check []thread, rev prompts.ReviewResult) (confirmed map[string]bool, open map[string]string, fresh []observability.Finding, blocking bool) {
	confirmed = map[string]bool{}
	for _, id := range rev.Resolved {
		confirmed[strings.ToLower(id)] = true
	}
	open = map[string]string{} // thread finding id -> what the reviewer says is still open
	for _, f := range rev.Findings {
		t, ok := threadOf(check, f)
		if !ok {
			blocking = blocking || f.Severity.Blocking()
			fresh = append(fresh, observability.Finding{ID: f.ID, Severity: f.Severity, Domain: f.Domain, File: f.File, Line: f.Line,
				Title: f.Title, Detail: f.Detail, Suggestion: f.Suggestion, Status: observability.FindingOpen})
			continue
		}
		if !confirmed[t.finding.ID] {
			open[t.finding.ID] = strings.TrimSpace(open[t.finding.ID] + " " + f.Detail)
		}
	}
	return confirmed, open, fresh, blocking
}

// answerChecked answers each thread of check after a check round: "Fixed
// in <commits>" and resolved (a person's, as the settings allow) when the
// reviewer confirmed it, what is still open otherwise. It returns the
// threads still open, the reviewer's word added for the coder.
func (p *fixing) answerChecked(ctx context.Context, round int, check []thread, said map[string]prompts.Attribution, confirmed map[string]bool, open map[string]string, head, sha string, more bool) ([]thread, error) {
	var next []thread
	for _, t := range check {
		a, ok := said[t.finding.ID]
		commits, err := p.fixCommits(ctx, head, sha, t.Path)
		if err != nil {
			return nil, err
		}
		if confirmed[t.finding.ID] {
			body := fmt.Sprintf("Fixed in %s: confirmed by spawn's reviewer in check round %d (at %s).\n\n%s", shortList(commits), round, text.ShortSHA(sha), coderWords(a, ok))
			m := github.Marker{Run: p.work.ID, Round: round, Seat: string(observability.ReplyFixed), Finding: t.finding.ID}
			if err := p.replyInThread(ctx, p.client, t.Root().ID, m, threadReply{kind: observability.ReplyFixed, round: round, commits: commits,
				body: body, state: observability.ThreadFixed}); err != nil {
				return nil, err
			}
			if err := p.resolvePersons(ctx, round, t, sha, fmt.Sprintf("check round %d confirmed it fixed at %s", round, text.ShortSHA(sha))); err != nil {
				return nil, err
			}
			continue
		}
		detail := open[t.finding.ID]
		if detail == "" {
			detail = "spawn's reviewer did not confirm the fix."
		}
		then := "The coder gets another turn on it."
		if !more {
			then = fmt.Sprintf("spawn stops here ([spawn-team] max_iterations = %d): it is left for a person.", p.maxIterations)
		}
		change := "the coder's change: " + shortList(commits)
		if sha == head {
			change = "the coder changed nothing"
		}
		body := fmt.Sprintf("Still open after spawn's check round %d (at %s, %s): %s\n\n%s\n\n%s", round, text.ShortSHA(sha), change, detail, coderWords(a, ok), then)
		m := github.Marker{Run: p.work.ID, Round: round, Seat: string(observability.ReplyStillOpen), Finding: t.finding.ID}
		if err := p.replyInThread(ctx, p.client, t.Root().ID, m, threadReply{kind: observability.ReplyStillOpen, round: round,
			body: body, state: observability.ThreadOpen}); err != nil {
			return nil, err
		}
		t.finding.Detail = strings.TrimSpace(t.finding.Detail + fmt.Sprintf("\nspawn's reviewer, after your turn %d: %s", round, detail))
		next = append(next, t)
	}
	return next, nil
}

// maxVerifyDiff bounds the diff the reviewer is shown; a larger one is
// cut and the cut is said.
const maxVerifyDiff = 1 << 20

// threadOf is the thread a reviewer's finding is about: the thread whose
// id its title or detail names, else the one thread on its file and line.
func threadOf(check []thread, f prompts.Finding) (thread, bool) {
	text := strings.ToLower(f.Title + " " + f.Detail)
	for _, t := range check {
		if strings.Contains(text, strings.ToLower(t.finding.ID)) {
			return t, true
		}
	}
	var at []thread
	for _, t := range check {
		if f.File != "" && t.Path == f.File && (f.Line == 0 || t.Line == f.Line) {
			at = append(at, t)
		}
	}
	if len(at) == 1 {
		return at[0], true
	}
	return thread{}, false
}

// threadFindings are the threads of check as the record's findings: those
// confirmed resolved, the others open with what is still open.
func threadFindings(check []thread, confirmed map[string]bool, open map[string]string) []observability.Finding {
	var out []observability.Finding
	for _, t := range check {
		f := t.finding
		rec := observability.Finding{ID: f.ID, Severity: f.Severity, Domain: f.Domain, File: f.File, Line: f.Line,
			Title: f.Title, Detail: "a review thread by " + t.Author(), Status: observability.FindingOpen}
		if confirmed[f.ID] {
			rec.Status = observability.FindingResolved
		} else if d := open[f.ID]; d != "" {
			rec.Detail = d
		}
		out = append(out, rec)
	}
	return out
}

// reviewerAnswer is the reviewer's parsed answer to one check, or why it
// could not be used.
type reviewerAnswer struct {
	review     prompts.ReviewResult
	raw        string
	parseError string
	tokens     observability.Tokens
}

// askReviewer runs the run's reviewer on prompt in a new session (through
// Review, as the review loop does), and once more in that session with
// the repair prompt when its answer does not parse.
func (p *fixing) askReviewer(ctx context.Context, round int, prompt string) (reviewerAnswer, error) {
	var a reviewerAnswer
	reply, err := p.agents.Review(ctx, team.ReviewerTurn{Round: round, Seat: "all", Prompt: prompt})
	a.tokens = reply.Tokens
	if err != nil {
		return a, err
	}
	a.raw = reply.Text
	rev, perr := prompts.ParseReview(reply.Text)
	if perr != nil {
		repair, err := prompts.Repair(perr)
		if err != nil {
			return a, fmt.Errorf("cannot write the repair prompt: %w", err)
		}
		again, err := p.agents.Review(ctx, team.ReviewerTurn{Round: round, Seat: "all", Prompt: repair, Resume: reply.Session})
		a.tokens.Input += again.Tokens.Input
		a.tokens.Cached += again.Tokens.Cached
		a.tokens.Output += again.Tokens.Output
		if err != nil {
			return a, err
		}
		a.raw += "\n\n[spawn: repair turn]\n\n" + again.Text
		rev, perr = prompts.ParseReview(again.Text)
	}
	if perr != nil {
		a.parseError = perr.Error()
		return a, nil
	}
	a.review = rev
	return a, nil
}
