package team

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// maxDiffBytes bounds the diff a reviewer is given; a larger diff is cut and
// the cut is said in the prompt.
const maxDiffBytes = 1 << 20

// loop is one review loop over a run.
type loop struct {
	run        *spawn.Run
	cfg        spawn.Config
	mode       string
	onProgress func(role string, p watcher.Progress)

	reviewers    []*reviewer
	findings     map[string]*tracked // by id
	order        []string            // ids in the order first reported
	coderSession string
	reviewed     string          // the commit the reviewers last saw
	openSets     map[string]bool // the sets of open ids after each round
}

// reviewer is one reviewer seat: a domain of its own (parallel reviewers)
// or all the configured domains, and its gemini session across rounds.
type reviewer struct {
	domains []prompts.Domain
	label   string // the domain, or "all"
	session string
}

// tracked is a finding and its state across rounds.
type tracked struct {
	finding prompts.Finding
	status  string // "open" | "resolved"
}

// result is one reviewer's answer in one round.
type result struct {
	seat       *reviewer
	review     prompts.ReviewResult
	raw        string
	parseError string
}

func newLoop(run *spawn.Run, opts spawn.Options) (*loop, error) {
	cfg := opts.Config
	l := &loop{run: run, cfg: cfg, mode: opts.Mode, onProgress: opts.OnProgress, findings: map[string]*tracked{}, openSets: map[string]bool{}, reviewed: run.Sandbox.Base}
	var domains []prompts.Domain
	for _, s := range cfg.Team.ReviewDomains {
		d, err := prompts.ParseDomain(s)
		if err != nil {
			return nil, &spawn.ConfigError{Key: "spawn-team.review_domains", Msg: err.Error()}
		}
		domains = append(domains, d)
	}
	if len(domains) == 0 {
		domains = prompts.Domains()
	}
	if cfg.Team.ParallelReviewers {
		for _, d := range domains {
			l.reviewers = append(l.reviewers, &reviewer{domains: []prompts.Domain{d}, label: string(d)})
		}
	} else {
		l.reviewers = []*reviewer{{domains: domains, label: "all"}}
	}
	return l, nil
}

// drive runs the loop and returns the run's verdict. An error is an agent
// failure (crash, timeout, interrupt, model API) that ended the loop.
func (l *loop) drive(ctx context.Context) (string, error) {
	sess, err := l.run.CoderTurn(ctx, 1, l.run.Record.Task, "")
	if sess != nil && sess.SessionID != "" {
		l.coderSession = sess.SessionID
	}
	if err != nil {
		return observability.VerdictNone, err
	}
	maxRounds := l.cfg.Team.MaxIterations
	if l.mode == "sequential" {
		maxRounds = 2
	}
	for round := 1; ; round++ {
		head, err := l.run.Sandbox.Tree.Resolve(ctx, "HEAD")
		if err != nil {
			return observability.VerdictNone, fmt.Errorf("read the sandbox's HEAD: %w", err)
		}
		delta := round > 1
		diff, err := l.diff(ctx, l.reviewed, head)
		if err != nil {
			return observability.VerdictNone, err
		}
		openBefore := l.open()
		results, err := l.review(ctx, round, diff, delta)
		if err != nil {
			return observability.VerdictNone, err
		}
		l.reviewed = head
		verdict, err := l.apply(round, results, len(diff), delta)
		if err != nil {
			return observability.VerdictNone, err
		}
		switch {
		case verdict == observability.VerdictReviewFailed:
			return observability.VerdictReviewFailed, nil
		case verdict == prompts.VerdictApprove:
			return observability.VerdictApproved, nil
		case l.mode == "sequential" && round == maxRounds:
			return observability.VerdictChangesRequested, nil
		case l.mode == "pingpong" && round > 1 && !resolvedAny(openBefore, l.findings):
			return observability.VerdictNotConverged, nil
		case l.mode == "pingpong" && l.repeated():
			return observability.VerdictNotConverged, nil
		case round >= maxRounds:
			return observability.VerdictChangesRequested, nil
		}
		prompt, err := prompts.Fix(prompts.FixInput{Task: l.run.Record.Task, Findings: l.openFindings(nil), Round: round})
		if err != nil {
			return observability.VerdictNone, fmt.Errorf("render the fix prompt: %w", err)
		}
		sess, err := l.run.CoderTurn(ctx, round+1, prompt, l.coderSession)
		if sess != nil && sess.SessionID != "" {
			l.coderSession = sess.SessionID
		}
		if err != nil {
			return observability.VerdictNone, err
		}
	}
}

// diff is the change from..to in the sandbox, cut at maxDiffBytes.
func (l *loop) diff(ctx context.Context, from, to string) (string, error) {
	d, err := l.run.Sandbox.Tree.Run(ctx, "diff", "--no-color", "--no-ext-diff", from, to)
	if err != nil {
		return "", fmt.Errorf("diff the sandbox branch: %w", err)
	}
	if len(d) > maxDiffBytes {
		d = d[:maxDiffBytes] + fmt.Sprintf("\n[spawn: the diff is cut here; it is %d bytes long]\n", len(d))
	}
	return d, nil
}

// review runs every reviewer seat for the round, concurrently up to
// max_concurrent_reviewers when reviewers are parallel.
func (l *loop) review(ctx context.Context, round int, diff string, delta bool) ([]result, error) {
	results := make([]result, len(l.reviewers))
	g, gctx := errgroup.WithContext(ctx)
	limit := 1
	if l.cfg.Team.ParallelReviewers {
		limit = l.cfg.Team.MaxConcurrentReviewers
	}
	g.SetLimit(limit)
	for i, seat := range l.reviewers {
		open := l.openFindings(seat)
		g.Go(func() error {
			r, err := l.reviewOne(gctx, round, seat, diff, delta, open)
			results[i] = r
			return err
		})
	}
	return results, g.Wait()
}

// reviewOne asks one reviewer, and once more with the repair prompt when
// its answer does not parse.
func (l *loop) reviewOne(ctx context.Context, round int, seat *reviewer, diff string, delta bool, open []prompts.Finding) (result, error) {
	res := result{seat: seat}
	prompt, err := prompts.Review(prompts.ReviewInput{
		Task: l.run.Record.Task, Diff: diff, Delta: delta, OpenFindings: open, Domains: seat.domains, Round: round,
	})
	if err != nil {
		return res, fmt.Errorf("render the review prompt: %w", err)
	}
	answer, err := l.ask(ctx, round, seat, prompt)
	if err != nil {
		return res, err
	}
	res.raw = answer
	rev, perr := prompts.ParseReview(answer)
	if perr != nil {
		repair, err := prompts.Repair(perr)
		if err != nil {
			return res, fmt.Errorf("render the repair prompt: %w", err)
		}
		answer, err = l.ask(ctx, round, seat, repair)
		if err != nil {
			return res, err
		}
		res.raw += "\n\n[spawn: repair turn]\n\n" + answer
		rev, perr = prompts.ParseReview(answer)
	}
	if perr != nil {
		res.parseError = perr.Error()
		return res, nil
	}
	res.review = rev
	return res, nil
}

// ask runs the reviewer seat's session (resumed when it has one) and
// returns its final answer.
func (l *loop) ask(ctx context.Context, round int, seat *reviewer, prompt string) (string, error) {
	sess, err := l.run.ReviewerTurn(ctx, seat.label, round, prompt, seat.session)
	if sess != nil && sess.SessionID != "" {
		seat.session = sess.SessionID
	}
	if err != nil {
		return "", err
	}
	return sess.Result.Text, nil
}

// apply folds a round's answers into the findings and the record, and
// returns the round's verdict: review_failed if any answer could not be
// used; approve only if every reviewer approves and no open finding is
// critical or high; request_changes otherwise.
func (l *loop) apply(round int, results []result, diffBytes int, delta bool) (string, error) {
	verdict := prompts.VerdictApprove
	var entries []observability.ReviewFeedback
	for _, r := range results {
		entry := observability.ReviewFeedback{
			Iteration: round, Reviewer: spawn.LLMGemini, Domain: r.seat.label,
			RawResponse: r.raw, DiffBytes: diffBytes, Delta: delta, ParseError: r.parseError,
		}
		if r.parseError != "" {
			entry.Verdict = observability.VerdictReviewFailed
			entry.Summary = "the reviewer's answer could not be used, even after a repair turn"
			verdict = observability.VerdictReviewFailed
			entries = append(entries, entry)
			continue
		}
		rev := r.review
		entry.Verdict, entry.Summary = rev.Verdict, rev.Summary
		for _, id := range rev.Resolved {
			if t, ok := l.findings[id]; ok && t.status == "open" {
				t.status = "resolved"
				entry.Resolved = append(entry.Resolved, id)
			}
		}
		for _, f := range rev.Findings {
			t, ok := l.findings[f.ID]
			if !ok {
				t = &tracked{finding: f}
				l.findings[f.ID] = t
				l.order = append(l.order, f.ID)
			} else if severityRank(f.Severity) < severityRank(t.finding.Severity) {
				t.finding.Severity = f.Severity
			}
			t.status = "open"
			entry.Findings = append(entry.Findings, observability.Finding{ID: f.ID})
		}
		if rev.Verdict != prompts.VerdictApprove && verdict != observability.VerdictReviewFailed {
			verdict = prompts.VerdictRequestChanges
		}
		entries = append(entries, entry)
	}
	for _, e := range entries {
		l.tell(fmt.Sprintf("round %d, %s: %s, %d findings, %d resolved", round, e.Domain, e.Verdict, len(e.Findings), len(e.Resolved)))
	}
	if verdict == prompts.VerdictApprove {
		for _, f := range l.openFindings(nil) {
			if f.Severity == prompts.SeverityCritical || f.Severity == prompts.SeverityHigh {
				verdict = prompts.VerdictRequestChanges
			}
		}
	}
	return verdict, l.run.Update(func(rec *observability.Record) {
		rec.ReviewFeedback = append(rec.ReviewFeedback, entries...)
		for _, id := range l.order {
			t := l.findings[id]
			if !isSecurity(t.finding) || hasSecurityFinding(rec, id) {
				continue
			}
			rec.SecurityFindings = append(rec.SecurityFindings, observability.SecurityFinding{
				ID: id, Iteration: round, Severity: t.finding.Severity, File: t.finding.File, Line: t.finding.Line,
				Description: t.finding.Title + ": " + t.finding.Detail, Recommendation: t.finding.Suggestion,
			})
		}
		l.refresh(rec)
	})
}

// tell reports an orchestrator event to whoever watches the run.
func (l *loop) tell(detail string) {
	if l.onProgress != nil {
		l.onProgress("reviewer", watcher.Progress{Kind: watcher.ProgressReview, Detail: detail})
	}
}

// refresh writes every finding's current state into the record.
func (l *loop) refresh(rec *observability.Record) {
	for i := range rec.ReviewFeedback {
		for j, f := range rec.ReviewFeedback[i].Findings {
			if t, ok := l.findings[f.ID]; ok {
				rec.ReviewFeedback[i].Findings[j] = toRecord(t)
			}
		}
	}
	for i, s := range rec.SecurityFindings {
		if t, ok := l.findings[s.ID]; ok {
			rec.SecurityFindings[i].Status = t.status
			rec.SecurityFindings[i].Severity = t.finding.Severity
		}
	}
}

func toRecord(t *tracked) observability.Finding {
	f := t.finding
	return observability.Finding{ID: f.ID, Severity: f.Severity, Domain: f.Domain, File: f.File, Line: f.Line,
		Title: f.Title, Detail: f.Detail, Suggestion: f.Suggestion, Status: t.status}
}

// open lists the ids of the open findings, sorted.
func (l *loop) open() []string {
	var ids []string
	for id, t := range l.findings {
		if t.status == "open" {
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

// openFindings lists the open findings, most severe first; for a seat, only
// those in its domains.
func (l *loop) openFindings(seat *reviewer) []prompts.Finding {
	var out []prompts.Finding
	for _, id := range l.order {
		t := l.findings[id]
		if t.status != "open" {
			continue
		}
		if seat != nil && !slices.Contains(seat.domains, prompts.Domain(t.finding.Domain)) && seat.label != "all" {
			continue
		}
		out = append(out, t.finding)
	}
	slices.SortStableFunc(out, func(a, b prompts.Finding) int { return severityRank(a.Severity) - severityRank(b.Severity) })
	return out
}

// resolvedAny reports whether any finding open before the round is
// resolved now. With nothing open before, there was nothing to resolve.
func resolvedAny(openBefore []string, findings map[string]*tracked) bool {
	if len(openBefore) == 0 {
		return true
	}
	for _, id := range openBefore {
		if findings[id].status == "resolved" {
			return true
		}
	}
	return false
}

func severityRank(s string) int {
	return slices.Index([]string{prompts.SeverityCritical, prompts.SeverityHigh, prompts.SeverityMedium, prompts.SeverityLow, prompts.SeverityInfo}, s)
}

// isSecurity reports whether a finding belongs in security_findings.
func isSecurity(f prompts.Finding) bool {
	if f.Domain == string(prompts.Security) {
		return true
	}
	if f.Severity != prompts.SeverityCritical && f.Severity != prompts.SeverityHigh {
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

func hasSecurityFinding(rec *observability.Record, id string) bool {
	for _, s := range rec.SecurityFindings {
		if s.ID == id {
			return true
		}
	}
	return false
}
