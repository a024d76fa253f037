package team

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
)

// loop is one review loop (sequential or pingpong) over a run.
type loop struct {
	p     Policy
	task  string
	run   Run
	seats []*seat
	// forge is told of each step in github mode; nil otherwise.
	forge Forge
	// maxRounds is the last review round: two in sequential mode,
	// MaxIterations in pingpong, or where a continued run may go.
	maxRounds int

	findings map[string]*tracked // by id
	order    []string            // ids in the order first reported
	openSets map[string]bool     // the sets of open ids after each round

	coder    Reply  // the coder's last reply: its session, final message and tests
	base     string // the commit the run started from
	reviewed string // the commit the reviewers last saw
	// replies are the coder's replies to the findings of the last fix
	// prompt; nil before the first fix turn.
	replies []prompts.CoderReply
	// said is what the coder's last fix turn says about its findings, by
	// the contract or in prose (prompts.Attribute), for the forge.
	said []prompts.Attribution
}

// seat is one reviewer of the board on a domain of its own (parallel
// reviewers) or all the configured domains, and its session across
// rounds.
type seat struct {
	reviewer Reviewer
	domains  []prompts.Domain
	label    string // see ReviewerTurn.Seat
	session  string
	// carried is the bytes the session holds: its prompts and answers so
	// far, which a resumed request sends again.
	carried int
}

// covers reports whether the seat reviews findings of domain d.
func (s *seat) covers(d string) bool {
	return slices.Contains(s.domains, prompts.Domain(d))
}

// tracked is a finding and its state across rounds.
type tracked struct {
	finding prompts.Finding
	status  observability.FindingStatus
	round   int      // the round that first reported it
	by      []string // the seats that raised it, in the order they did
}

// answer is one seat's answer in one round.
type answer struct {
	seat       *seat
	shown      []prompts.Finding // the open findings the seat was shown
	review     prompts.ReviewResult
	raw        string
	parseError string
	// prompt and full are the bytes of the prompt sent and of a full
	// re-review's prompt; fresh says the seat started a new session.
	prompt, full int
	fresh        bool
	tokens       observability.Tokens
}

func newLoop(p Policy, task, base string, run Run) *loop {
	l := &loop{p: p, task: task, run: run, findings: map[string]*tracked{}, openSets: map[string]bool{}, base: base, reviewed: base, maxRounds: p.MaxIterations}
	if p.Mode == observability.ModeSequential {
		l.maxRounds = 2
	}
	domains := p.Domains
	if len(domains) == 0 {
		domains = prompts.Domains()
	}
	board := p.Board
	if len(board) == 0 {
		board = []Reviewer{{}}
	}
	for _, r := range board {
		prefix := ""
		if len(board) > 1 {
			prefix = r.Name
		}
		label := func(d string) string {
			switch {
			case prefix == "":
				return d
			case d == "all":
				return prefix
			}
			return prefix + "/" + d
		}
		if p.Parallel {
			for _, d := range domains {
				l.seats = append(l.seats, &seat{reviewer: r, domains: []prompts.Domain{d}, label: label(string(d))})
			}
		} else {
			l.seats = append(l.seats, &seat{reviewer: r, domains: domains, label: label("all")})
		}
	}
	return l
}

// drive runs the loop and returns the run's verdict. An error is an agent
// or sandbox failure (crash, timeout, interrupt, model API) that ended it.
func (l *loop) drive(ctx context.Context) (observability.Verdict, error) {
	if err := l.code(ctx, 1, prompts.Task(l.task)); err != nil {
		return observability.VerdictNone, err
	}
	if err := l.coded(ctx, 1); err != nil {
		return observability.VerdictNone, err
	}
	return l.rounds(ctx, 1)
}

// coded tells the forge, in github mode, that the coder's turn of round
// is committed, with what it said about the findings of a fix turn.
func (l *loop) coded(ctx context.Context, round int) error {
	if l.forge == nil {
		return nil
	}
	return l.forge.AfterCode(ctx, round, l.said)
}

// rounds runs review rounds from first on, each followed by a fix turn
// unless it ends the loop, and returns the run's verdict.
func (l *loop) rounds(ctx context.Context, first int) (observability.Verdict, error) {
	for round := first; ; round++ {
		head, err := l.run.Head(ctx)
		if err != nil {
			return observability.VerdictNone, err
		}
		delta := round > 1
		changed := head != l.reviewed
		diff, whole, err := l.diffs(ctx, head, delta)
		if err != nil {
			return observability.VerdictNone, err
		}
		openBefore := l.open()
		if l.forge != nil {
			if err := l.forge.BeforeReview(ctx, round, head); err != nil {
				return observability.VerdictNone, err
			}
		}
		answers, err := l.review(ctx, round, diff, whole, delta)
		if err != nil {
			return observability.VerdictNone, err
		}
		l.reviewed = head
		report := l.apply(round, answers, len(diff), delta)
		for i := range report.Feedback {
			report.Feedback[i].Commit = head
		}
		for _, r := range l.replies {
			report.CoderReplies = append(report.CoderReplies, observability.CoderReply{
				Iteration: round, FindingID: r.FindingID, Action: r.Action, Reason: r.Reason})
		}
		verdict := l.verdict(answers)
		end, note := l.decide(round, verdict, openBefore, changed)
		report.Note = note
		l.run.Reviewed(report)
		if l.forge != nil {
			if err := l.forge.AfterReview(ctx, report); err != nil {
				return observability.VerdictNone, err
			}
			if end != "" {
				return end, l.forge.AfterLoop(ctx, end)
			}
		}
		if end != "" {
			return end, nil
		}
		if err := l.fix(ctx, round, false); err != nil {
			return observability.VerdictNone, err
		}
	}
}

// fix runs the coder's fix turn after review round: the open findings to
// fix or decline, then the coder's replies read from its final message.
// again says the turn is a fix turn that was cut off and runs once more.
func (l *loop) fix(ctx context.Context, round int, again bool) error {
	toFix := l.openFindings(nil)
	prompt, err := prompts.Fix(prompts.FixInput{Task: l.task, Findings: toFix, Round: round})
	if err != nil {
		return fmt.Errorf("render the fix prompt: %w", err)
	}
	if again {
		prompt = prompts.Continue(prompt)
	}
	if err := l.code(ctx, round+1, prompt); err != nil {
		return err
	}
	l.replies = prompts.ParseCoderReplies(l.coder.Text, findingIDs(toFix))
	l.said = prompts.Attribute(l.coder.Text, toFix)
	return l.coded(ctx, round+1)
}

func findingIDs(fs []prompts.Finding) []string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	return ids
}

// decide says whether the round ends the loop, with which verdict, and why
// when the loop stops converging. "" goes on to a fix turn.
func (l *loop) decide(round int, verdict observability.ReviewVerdict, openBefore []string, changed bool) (observability.Verdict, string) {
	stalled := func(why string) (observability.Verdict, string) {
		if !changed {
			why = fmt.Sprintf("the fix turn changed nothing and %s", why)
		}
		return observability.VerdictNotConverged, why
	}
	switch {
	case verdict == observability.ReviewFailed:
		return observability.VerdictReviewFailed, ""
	case verdict == observability.ReviewApprove:
		return observability.VerdictApproved, ""
	case l.p.Mode == observability.ModeSequential && round >= l.maxRounds:
		return observability.VerdictChangesRequested, ""
	case l.p.Mode != observability.ModeSequential && round > 1 && !l.resolvedAny(openBefore):
		return stalled(fmt.Sprintf("review round %d resolved none of the open findings", round))
	case l.p.Mode != observability.ModeSequential && l.repeated():
		return stalled(fmt.Sprintf("review round %d left the same findings open as an earlier round", round))
	case round >= l.maxRounds:
		return observability.VerdictChangesRequested, ""
	}
	return "", ""
}

// code runs a coder turn, resuming the coder's session after the first.
func (l *loop) code(ctx context.Context, round int, prompt string) error {
	reply, err := l.run.Code(ctx, CoderTurn{Round: round, Prompt: prompt, Resume: l.coder.Session})
	if reply.Session != "" {
		l.coder.Session = reply.Session
	}
	l.coder.Text, l.coder.Tests = reply.Text, reply.Tests
	return err
}

// diff is the change from..to in the sandbox, cut at maxDiffBytes.
func (l *loop) diff(ctx context.Context, from, to string) (string, error) {
	if from == to {
		return "", nil
	}
	d, err := l.run.Diff(ctx, from, to)
	if err != nil {
		return "", err
	}
	if len(d) > maxDiffBytes {
		d = d[:maxDiffBytes] + fmt.Sprintf("\n[spawn: the diff is cut here; it is %d bytes long]\n", len(d))
	}
	return d, nil
}

// diffs are what a round's reviewers see: the change since the last
// review, and the whole change for a full re-review's prompt. From round
// 2 (delta) they differ, and git makes both at once.
func (l *loop) diffs(ctx context.Context, head string, delta bool) (diff, whole string, err error) {
	if !delta {
		diff, err = l.diff(ctx, l.reviewed, head)
		return diff, diff, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		diff, err = l.diff(gctx, l.reviewed, head)
		return err
	})
	g.Go(func() (err error) {
		whole, err = l.diff(gctx, l.base, head)
		return err
	})
	return diff, whole, g.Wait()
}

// review runs every reviewer seat for the round, concurrently up to
// MaxConcurrent when reviewers are parallel. diff is what the seats review
// (the delta after round 1), whole the whole change.
func (l *loop) review(ctx context.Context, round int, diff, whole string, delta bool) ([]answer, error) {
	answers := make([]answer, len(l.seats))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(1)
	if l.p.Parallel || len(l.p.Board) > 1 {
		g.SetLimit(max(l.p.MaxConcurrent, 1))
	}
	for i, s := range l.seats {
		shown := l.openFindings(s)
		in := prompts.ReviewInput{Task: l.task, Diff: diff, Delta: delta, OpenFindings: shown, Domains: s.domains, Round: round,
			CoderSaid: l.coder.Text, Replies: l.replies, CoderTests: l.coder.Tests}
		g.Go(func() error {
			a, err := l.ask(gctx, round, s, in, whole)
			a.shown = shown
			answers[i] = a
			return err
		})
	}
	return answers, g.Wait()
}

// ask asks one seat, and once more with the repair prompt when its answer
// does not parse.
//
// Which prompt: round 1 is a full review in a new session. Later, a seat
// with a session is sent only what is new (prompts.ReReview: its session
// already holds the instructions and the contract), as long as what the
// resumed request replays (the session's earlier prompts and answers) plus
// that prompt stays within a full re-review's prompt (instructions, task,
// whole change, open findings). Past that, resuming would send more than a
// fresh full review, so the seat starts a new session with the delta
// review (prompts.Review with in.Delta): the instructions, the task, the
// delta, the open findings and the coder's replies; or with the full
// re-review when that is no longer (a tiny change) and the coder changed
// something (the delta review says when it changed nothing). Both requests carry
// the CLI's same fixed system instruction and tool definitions, so the
// bytes compared are what differs between them.
func (l *loop) ask(ctx context.Context, round int, s *seat, in prompts.ReviewInput, whole string) (answer, error) {
	a := answer{seat: s}
	full := in
	full.Diff, full.Delta = whole, false
	fullPrompt, err := prompts.Review(full)
	if err != nil {
		return a, fmt.Errorf("render the review prompt: %w", err)
	}
	prompt := fullPrompt
	if in.Delta {
		if prompt, err = prompts.ReReview(in); err != nil {
			return a, fmt.Errorf("render the re-review prompt: %w", err)
		}
		if s.session == "" || s.carried+len(prompt) > len(fullPrompt) {
			s.session, s.carried = "", 0
			if prompt, err = prompts.Review(in); err != nil {
				return a, fmt.Errorf("render the review prompt: %w", err)
			}
			if len(fullPrompt) <= len(prompt) && in.Diff != "" { // a tiny change: the whole is no longer
				prompt = fullPrompt
			}
		}
	}
	a.prompt, a.full, a.fresh = len(prompt), len(fullPrompt), s.session == ""
	text, err := l.turn(ctx, round, s, prompt, &a.tokens)
	if err != nil {
		return a, err
	}
	a.raw = text
	rev, perr := prompts.ParseReview(text)
	if perr != nil {
		repair, err := prompts.Repair(perr)
		if err != nil {
			return a, fmt.Errorf("render the repair prompt: %w", err)
		}
		if text, err = l.turn(ctx, round, s, repair, &a.tokens); err != nil {
			return a, err
		}
		a.raw += "\n\n[spawn: repair turn]\n\n" + text
		rev, perr = prompts.ParseReview(text)
	}
	if perr != nil {
		a.parseError = perr.Error()
		return a, nil
	}
	a.review = rev
	return a, nil
}

// turn runs the seat's session (resumed when it has one) once, counts the
// bytes the session now holds, and adds the tokens the CLI reported to
// tokens.
func (l *loop) turn(ctx context.Context, round int, s *seat, prompt string, tokens *observability.Tokens) (string, error) {
	reply, err := l.run.Review(ctx, ReviewerTurn{Round: round, Seat: s.label, Reviewer: s.reviewer.Name, Prompt: prompt, Resume: s.session})
	if reply.Session != "" {
		s.session = reply.Session
	}
	s.carried += len(prompt) + len(reply.Text)
	tokens.Input += reply.Tokens.Input
	tokens.Cached += reply.Tokens.Cached
	tokens.Output += reply.Tokens.Output
	return reply.Text, err
}

// apply folds a round's answers into the tracked findings and returns the
// round as the record keeps it.
//
// The rule for open findings a reviewer neither repeats nor lists as
// resolved: an approve resolves every open finding the seat was shown and
// did not repeat (the reviewer reviewed the fix and approved with nothing
// open; a real model forgets optional keys), and the record lists them in
// resolved_by_approval; a request_changes leaves them open.
func (l *loop) apply(round int, answers []answer, diffBytes int, delta bool) observability.Round {
	var entries []observability.ReviewFeedback
	for _, a := range answers {
		entry := observability.ReviewFeedback{
			Iteration: round, Reviewer: a.seat.reviewer.LLM, Domain: a.seat.label,
			RawResponse: a.raw, DiffBytes: diffBytes, Delta: delta, ParseError: a.parseError,
			PromptBytes: a.prompt, FullPromptBytes: a.full, Fresh: a.fresh, Tokens: a.tokens,
		}
		if a.parseError != "" {
			entry.Verdict = observability.ReviewFailed
			entry.Summary = "the reviewer's answer could not be used, even after a repair turn"
			entries = append(entries, entry)
			continue
		}
		rev := a.review
		entry.Verdict, entry.Summary = rev.Verdict, rev.Summary
		for _, id := range rev.Resolved {
			if t, ok := l.findings[id]; ok && t.status == observability.FindingOpen {
				t.status = observability.FindingResolved
				entry.Resolved = append(entry.Resolved, id)
			}
		}
		repeated := map[string]bool{}
		for _, f := range rev.Findings {
			repeated[f.ID] = true
			t, ok := l.findings[f.ID]
			if !ok {
				t = &tracked{finding: f, round: round}
				l.findings[f.ID] = t
				l.order = append(l.order, f.ID)
			} else {
				sev := t.finding.Severity
				t.finding = f
				if sev.Rank() > f.Severity.Rank() {
					t.finding.Severity = sev // a repeat never lowers the severity
				}
			}
			t.status = observability.FindingOpen
			if !slices.Contains(t.by, a.seat.label) {
				t.by = append(t.by, a.seat.label)
			}
			entry.Findings = append(entry.Findings, observability.Finding{ID: f.ID})
		}
		if entry.Verdict == observability.ReviewApprove {
			for _, f := range a.shown {
				if t := l.findings[f.ID]; !repeated[f.ID] && t.status == observability.FindingOpen {
					t.status = observability.FindingResolved
					entry.ResolvedByApproval = append(entry.ResolvedByApproval, f.ID)
				}
			}
		}
		entries = append(entries, entry)
	}
	r := observability.Round{Number: round, Feedback: entries}
	for _, id := range l.order {
		t := l.findings[id]
		r.Findings = append(r.Findings, toRecord(t))
		if isSecurity(t.finding) {
			f := t.finding
			r.Security = append(r.Security, observability.SecurityFinding{
				ID: id, Iteration: t.round, Severity: f.Severity, File: f.File, Line: f.Line,
				Description: f.Title + ": " + f.Detail, Recommendation: f.Suggestion, Status: t.status,
			})
		}
	}
	for i := range r.Feedback {
		for j, f := range r.Feedback[i].Findings {
			r.Feedback[i].Findings[j] = toRecord(l.findings[f.ID])
		}
	}
	return r
}

// verdict is the round's verdict by the board's rule: review_failed if
// any answer could not be used; approve when every seat approves (or more
// than half, by the majority rule) and no open finding is at or above the
// rule's blocking severity; request_changes otherwise.
func (l *loop) verdict(answers []answer) observability.ReviewVerdict {
	approvals := 0
	for _, a := range answers {
		switch {
		case a.parseError != "":
			return observability.ReviewFailed
		case a.review.Verdict == observability.ReviewApprove:
			approvals++
		}
	}
	approved := approvals == len(answers)
	if l.p.Rule.Majority {
		approved = 2*approvals > len(answers)
	}
	block := l.p.Rule.BlockAt
	if block == "" {
		block = observability.SeverityHigh
	}
	if block != NoBlock {
		for _, f := range l.openFindings(nil) {
			if f.Severity.Rank() >= block.Rank() {
				approved = false
			}
		}
	}
	if approved {
		return observability.ReviewApprove
	}
	return observability.ReviewRequestChanges
}

func toRecord(t *tracked) observability.Finding {
	f := t.finding
	return observability.Finding{ID: f.ID, Severity: f.Severity, Domain: f.Domain, File: f.File, Line: f.Line,
		Title: f.Title, Detail: f.Detail, Suggestion: f.Suggestion, Status: t.status, RaisedBy: slices.Clone(t.by)}
}

// open lists the ids of the open findings, sorted.
func (l *loop) open() []string {
	var ids []string
	for id, t := range l.findings {
		if t.status == observability.FindingOpen {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// repeated reports whether the current set of open findings was already
// the open set after an earlier round, and remembers it.
func (l *loop) repeated() bool {
	key := strings.Join(l.open(), ",")
	if l.openSets[key] {
		return true
	}
	l.openSets[key] = true
	return false
}

// resolvedAny reports whether any finding open before the round is
// resolved now. With nothing open before, there was nothing to resolve.
func (l *loop) resolvedAny(openBefore []string) bool {
	if len(openBefore) == 0 {
		return true
	}
	for _, id := range openBefore {
		if l.findings[id].status == observability.FindingResolved {
			return true
		}
	}
	return false
}

// openFindings lists the open findings, most severe first; for a seat, only
// those in its domains.
func (l *loop) openFindings(s *seat) []prompts.Finding {
	var out []prompts.Finding
	for _, id := range l.order {
		t := l.findings[id]
		if t.status != observability.FindingOpen || (s != nil && !s.covers(t.finding.Domain)) {
			continue
		}
		out = append(out, t.finding)
	}
	slices.SortStableFunc(out, func(a, b prompts.Finding) int {
		return b.Severity.Rank() - a.Severity.Rank()
	})
	return out
}

// isSecurity reports whether a finding belongs in security_findings: every
// finding of the security domain, and every blocking finding that speaks
// of security.
func isSecurity(f prompts.Finding) bool {
	if f.Domain == string(prompts.Security) {
		return true
	}
	if !f.Severity.Blocking() {
		return false
	}
	text := strings.ToLower(f.Title + " " + f.Detail)
	for _, w := range []string{"security", "inject", "auth", "secret", "credential", "password", "token", "xss", "csrf", "ssrf", "vulnerab", "traversal", "privilege"} {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}
