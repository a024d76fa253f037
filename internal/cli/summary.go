package cli

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// summary is what a person reads at the end of a run, in this order: the
// outcome, where the work is, what the reviewers said and what is still
// open, what the coder declined and why, the run's notes, what was granted and denied, the
// coder's last word, the cost per agent, the record, and the next steps
// that are true for this outcome.
func summary(rec *observability.Record) string { return render(rec, view{}) }

// view is what a summary knows beyond the record.
type view struct {
	// liveCost is a live run's cost so far, from its event stream (the
	// record counts only the sessions that ended).
	liveCost float64
	// removed says the run's worktree and branch are gone (spawn clean).
	removed bool
}

// render is the summary of rec as v sees it.
func render(rec *observability.Record, v view) string {
	var b strings.Builder
	if rec.Status == observability.StatusRunning {
		// A live run (spawn show): no exit code or duration yet.
		fmt.Fprintf(&b, "spawn %s: running since %s\n", rec.ID, rec.StartedAt.Local().Format(time.DateTime))
	} else {
		fmt.Fprintf(&b, "spawn %s: %s (exit %d) in %s\n", rec.ID, outcome(rec), rec.ExitCode, time.Duration(rec.DurationMS)*time.Millisecond)
	}
	fmt.Fprintf(&b, "  task:      %s\n", firstLine(rec.Task))
	switch {
	case rec.Branch == "":
		fmt.Fprintf(&b, "  sandbox:   removed: the run failed before the coder changed anything\n")
	case v.removed:
		fmt.Fprintf(&b, "  branch:    %s (removed: its worktree and branch were cleaned)\n", rec.Branch)
	default:
		fmt.Fprintf(&b, "  branch:    %s\n", rec.Branch)
		fmt.Fprintf(&b, "  worktree:  %s\n", rec.SandboxPath)
	}
	b.WriteString(pullRequest(rec))
	for i, c := range rec.Commits {
		label := "commits:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(&b, "  %-10s %.12s %s (%s, round %d)\n", label, c.SHA, firstLine(c.Message), c.LLM, c.Iteration)
	}
	switch {
	case len(rec.Commits) == 0 && rec.Status == observability.StatusRunning:
		fmt.Fprintf(&b, "  commits:   none yet\n")
	case len(rec.Commits) == 0 && rec.Branch != "":
		fmt.Fprintf(&b, "  commits:   none; the coder changed nothing\n")
	}
	if rec.Error != nil {
		fmt.Fprintf(&b, "  error:     %s: %s\n", rec.Error.Kind, rec.Error.Message)
		if at := rec.Error.ResetAt; at != nil {
			fmt.Fprintf(&b, "  resets:    %s (the usage limit; spawn resume %s goes on after it)\n", at.Local().Format(time.DateTime+" MST"), rec.ID)
		}
	}
	if line := roundLimit(rec); line != "" {
		fmt.Fprintf(&b, "  limit:     %s\n", line)
	}
	for _, n := range rec.Notes {
		fmt.Fprintf(&b, "  note:      %s\n", n)
	}
	ids := shortIDs(rec)
	if len(rec.ReviewFeedback) > 0 {
		b.WriteString(rounds(rec, ids))
	}
	open := openFindings(rec)
	if len(open) > 0 {
		fmt.Fprintf(&b, "  open:      %s still open\n", text.Plural(len(open), "finding"))
		for _, f := range open {
			fmt.Fprintf(&b, "             %-8s %-7s %s  %s\n", f.Severity, ids[f.ID], location(f), f.Title)
		}
	}
	byID := findingsByID(rec)
	for i, r := range declined(rec) {
		label := "declined:"
		if i > 0 {
			label = ""
		}
		title := r.FindingID
		if f, ok := byID[r.FindingID]; ok {
			title = fmt.Sprintf("%s %s %s  %s", ids[f.ID], f.Severity, location(f), f.Title)
		}
		fmt.Fprintf(&b, "  %-10s %s\n             the coder (round %d): %s\n", label, title, r.Iteration, firstLine(r.Reason))
	}
	for _, g := range rec.PermissionsGranted {
		fmt.Fprintf(&b, "  granted:   %s to %s (round %d)\n", g.Rule, g.LLM, g.Iteration)
	}
	for _, p := range rec.PermissionsRequested {
		fmt.Fprintf(&b, "  denied:    %s %s (%s, round %d): it did not run\n", p.Tool, toolSummary(p.Input), p.LLM, p.Iteration)
		if rule := allowRule(p); rule != "" {
			fmt.Fprintf(&b, "             to allow it, add %q to allowed_tools in [permissions] of %s\n", rule, config.File)
		}
	}
	if n := len(rec.CoderMessages); n > 0 {
		m := rec.CoderMessages[n-1]
		fmt.Fprintf(&b, "  coder said (round %d):\n", m.Iteration)
		for _, line := range excerpt(withShortIDs(m.Text, ids), 6) {
			fmt.Fprintf(&b, "             %s\n", line)
		}
	}
	if rec.Status == observability.StatusRunning {
		fmt.Fprintf(&b, "  cost:      $%.4f so far\n", max(rec.Usage.CostUSD, v.liveCost))
	} else {
		b.WriteString(cost(rec))
	}
	fmt.Fprintf(&b, "  record:    %s\n", filepath.Join(rec.Repo, sandbox.Dir, "runs", rec.ID, "record.json"))
	b.WriteString(cassetteLines(rec))
	for i, step := range nextSteps(rec, len(open), v.removed) {
		label := "next:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(&b, "  %-10s %s\n", label, step)
	}
	return b.String()
}

// allowRule is the permission rule that would allow a call the coder was
// refused, "" when there is none to suggest (a reviewer's call: reviewers
// are read-only; a call an escalatable rule covers; a compound command).
func allowRule(p observability.PermissionRequest) string {
	if p.LLM != observability.LLMClaude || p.Rule != "" {
		return ""
	}
	return runners.ClaudeAllowRule(p.Tool, p.Input)
}

// roundLimit says, for a reviewed run the round limit stopped with
// findings open, which limit it was and how to raise it; "" otherwise.
func roundLimit(rec *observability.Record) string {
	if rec.Status != observability.StatusSucceeded || rec.Verdict != observability.VerdictChangesRequested || rec.Mode == observability.ModePR {
		return ""
	}
	last := 0
	for _, f := range rec.ReviewFeedback {
		last = max(last, f.Iteration)
	}
	if rec.Mode == observability.ModeSequential {
		return fmt.Sprintf("sequential mode ends with the review of its one fix turn (round %d)", last)
	}
	return fmt.Sprintf("the loop stopped at its round limit after review round %d (max_iterations); raise it with %s",
		last, config.Ways("spawn-team.max_iterations"))
}

// outcome names how the run ended in words: the verdict of a completed
// reviewed run, "done" for a solo one, else the status.
func outcome(rec *observability.Record) string {
	kind := ""
	if rec.Error != nil {
		kind = rec.Error.Kind
	}
	return outcomeOf(rec.Status, rec.Verdict, kind)
}

// outcomeOf is outcome for a run that ended with status and verdict, and
// the error kind errKind ("" for none).
func outcomeOf(status observability.Status, verdict observability.Verdict, errKind string) string {
	switch status {
	case observability.StatusSucceeded:
		switch verdict {
		case observability.VerdictNone:
			return "done, not reviewed"
		case observability.VerdictChangesRequested:
			return "changes requested"
		case observability.VerdictNotConverged:
			return "not converged"
		case observability.VerdictReviewFailed:
			return "review failed"
		}
		return string(verdict)
	case observability.StatusTimedOut:
		return "timed out"
	case observability.StatusFailed:
		if errKind != "" {
			return "failed: " + errKind
		}
	}
	return string(status)
}

// raiseFlagRE finds the flag a limit's error names ("raise it with
// --idle-timeout, ...").
var raiseFlagRE = lazy.MustCompile(`raise it with (--[a-z-]+)`)

// nextSteps are what the person can do now, true for this outcome and
// named as spawn's own commands: merge only what was approved (git merge,
// then spawn clean), read a change with spawn diff, go on with spawn
// resume wherever resuming continues the work, remove what holds nothing
// with spawn clean.
func nextSteps(rec *observability.Record, open int, removed bool) []string {
	id := rec.ID
	diff, clean, merge := "spawn diff "+id, "spawn clean "+id, "git merge "+rec.Branch
	if rec.PRURL != nil {
		merge = "a merge of its pull request, " + *rec.PRURL
	}
	resume := ""
	if !removed && runs.Resumable(rec) == nil {
		resume = "spawn resume " + id
		if rec.Error != nil && (rec.Error.Kind == string(fault.KindTimeout) || rec.Error.Kind == string(fault.KindBudget)) {
			if m := raiseFlagRE.FindStringSubmatch(rec.Error.Message); m != nil {
				more := " <more>"
				if strings.HasSuffix(m[1], "-timeout") {
					more = " <longer>"
				}
				resume += " " + m[1] + more
			}
		}
	}
	switch {
	case rec.Status == observability.StatusRunning:
		return []string{fmt.Sprintf("the run is still working: spawn logs -f %s follows it, spawn ps shows what it does, spawn stop %s stops it", id, id)}
	case rec.Branch == "":
		return []string{"nothing was left but this record: fix what the error says, then start it again with spawn run"}
	case removed:
		return []string{"its worktree and branch are gone; the record stays (spawn clean --purge " + id + " removes it)"}
	case len(rec.Commits) == 0 && resume != "" && stoppedShort(rec):
		return []string{"the coder committed nothing before the run stopped: " + resume + " continues it", "or remove the empty branch: " + clean}
	case len(rec.Commits) == 0:
		return []string{"nothing to take: the branch holds no change; remove it with " + clean}
	case rec.Mode == observability.ModePR && rec.PullRequest != nil:
		return prSteps(rec, open)
	case rec.Status == observability.StatusSucceeded && rec.Verdict == observability.VerdictApproved:
		return []string{"approved by the reviewer: take it with " + merge, "then remove its worktree and branch: " + clean}
	case rec.Status == observability.StatusSucceeded && rec.Verdict == observability.VerdictNone:
		return []string{"read the change (no reviewer ran in " + string(rec.Mode) + " mode): " + diff, "then take it with " + merge + ", and remove the worktree: " + clean}
	case rec.Status == observability.StatusSucceeded && rec.Verdict == observability.VerdictReviewFailed:
		steps := []string{"the work was NOT reviewed (the reviewer's answer could not be used); read it before merging: " + diff}
		if resume != "" {
			steps = append(steps, "have it reviewed again: "+resume)
		}
		return steps
	case rec.Status == observability.StatusSucceeded:
		steps := []string{fmt.Sprintf("the reviewer did not approve: %s open; read the change: %s", text.Plural(open, "finding"), diff)}
		if resume != "" {
			steps = append(steps, "run another round of fixes and review: "+resume+" (--more-rounds N for more)")
		}
		return append(steps, "or fix them yourself in "+rec.SandboxPath+" and commit there",
			"merge only if you accept what is open: "+merge)
	}
	ended := map[observability.Status]string{observability.StatusTimedOut: "timed out", observability.StatusInterrupted: "was interrupted"}[rec.Status]
	if ended == "" {
		ended = "failed"
	}
	what := "before its review finished: the work on the branch was NOT reviewed"
	if rec.Mode == observability.ModeSolo {
		what = "before the coder finished"
	}
	steps := []string{fmt.Sprintf("the run %s %s; read it: %s", ended, what, diff)}
	if resume != "" {
		how := "continue it: "
		if rec.Status == observability.StatusFailed {
			how = "once the error is fixed, continue it: "
		}
		steps = append(steps, how+resume)
	}
	return steps
}

// stoppedShort reports whether the run ended before its loop did: stopped,
// timed out, or failed.
func stoppedShort(rec *observability.Record) bool {
	switch rec.Status {
	case observability.StatusInterrupted, observability.StatusTimedOut, observability.StatusFailed:
		return true
	}
	return false
}

// shortIDs is each finding id of the run as spawn shows it ("F-610c").
func shortIDs(rec *observability.Record) map[string]string {
	var all []string
	for id := range findingsByID(rec) {
		all = append(all, id)
	}
	sort.Strings(all)
	return prompts.ShortFindingIDs(all)
}

// withShortIDs is text with each whole finding id replaced by its shown
// form, so that what the coder said matches the tables.
func withShortIDs(text string, ids map[string]string) string {
	for id, short := range ids {
		text = strings.ReplaceAll(text, id, short)
	}
	return text
}

// rounds is the table of review rounds: each reviewer's verdict, its
// findings with their titles, what it resolved; then the run's verdict.
func rounds(rec *observability.Record, ids map[string]string) string {
	var b strings.Builder
	board := 0 // the reviewers' seats: who raised a finding is said on a board of several
	for _, s := range rec.Seats {
		if s.Role == observability.RoleReviewer {
			board++
		}
	}
	for i, f := range rec.ReviewFeedback {
		label := "reviews:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(&b, "  %-10s round %d  %-24s %-16s %s, %d resolved\n", label, f.Iteration, string(f.Reviewer)+" ("+f.Domain+")", f.Verdict,
			text.Plural(len(f.Findings), "finding"), len(f.Resolved)+len(f.ResolvedByApproval))
		for _, x := range f.Findings {
			by := ""
			if board > 1 && len(x.RaisedBy) > 0 {
				by = ", raised by " + strings.Join(x.RaisedBy, " and ")
			}
			fmt.Fprintf(&b, "               %-8s %-7s %s  %s (%s%s)\n", x.Severity, ids[x.ID], location(x), x.Title, x.Status, by)
		}
		if f.ParseError != "" {
			fmt.Fprintf(&b, "               the answer could not be used: %s\n", firstLine(f.ParseError))
		}
	}
	fmt.Fprintf(&b, "  verdict:   %s\n", rec.Verdict)
	return b.String()
}

// openFindings are the findings still open at the end, once each, the most
// severe first.
func openFindings(rec *observability.Record) []observability.Finding {
	var open []observability.Finding
	for _, f := range findingsByID(rec) {
		if f.Status == observability.FindingOpen {
			open = append(open, f)
		}
	}
	sort.SliceStable(open, func(i, j int) bool {
		if a, b := open[i].Severity.Rank(), open[j].Severity.Rank(); a != b {
			return a > b
		}
		return location(open[i]) < location(open[j])
	})
	return open
}

// findingsByID is every finding of the run by id, as last reported.
func findingsByID(rec *observability.Record) map[string]observability.Finding {
	m := map[string]observability.Finding{}
	for _, fb := range rec.ReviewFeedback {
		for _, f := range fb.Findings {
			m[f.ID] = f
		}
	}
	return m
}

// declined are the coder's replies that declined a finding.
func declined(rec *observability.Record) []observability.CoderReply {
	var out []observability.CoderReply
	for _, r := range rec.CoderReplies {
		if r.Action == observability.CoderDeclined {
			out = append(out, r)
		}
	}
	return out
}

// cost is the run's cost and tokens, and each agent's share.
func cost(rec *observability.Record) string {
	u := rec.Usage
	var b strings.Builder
	fmt.Fprintf(&b, "  cost:      $%.4f, %s, %d input / %d output tokens\n", u.CostUSD, text.Plural(u.Turns, "turn"), u.InputTokens, u.OutputTokens)
	type key struct {
		llm  observability.LLM
		role observability.Role
	}
	var order []key
	sums := map[key]*observability.AgentUsage{}
	for _, a := range u.ByAgent {
		k := key{a.LLM, a.Role}
		s, ok := sums[k]
		if !ok {
			s = &observability.AgentUsage{}
			sums[k] = s
			order = append(order, k)
		}
		s.CostUSD += a.CostUSD
		s.Turns += a.Turns
		s.InputTokens += a.InputTokens
		s.OutputTokens += a.OutputTokens
	}
	for _, k := range order {
		s := sums[k]
		fmt.Fprintf(&b, "             %s (%s): $%.4f, %s, %d input / %d output tokens\n", k.role, k.llm, s.CostUSD, text.Plural(s.Turns, "turn"), s.InputTokens, s.OutputTokens)
	}
	return b.String()
}

// location is a finding's file:line ("file" without a line, "-" without a
// file).
func location(f observability.Finding) string {
	switch {
	case f.File == "":
		return "-"
	case f.Line > 0:
		return fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return f.File
}

// excerpt is text's first max non-empty lines, each cut to fit a terminal,
// with "..." when more was left out.
func excerpt(text string, max int) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(out) == max {
			out = append(out, "...")
			break
		}
		out = append(out, firstLine(line))
	}
	return out
}

// pullRequest is the pull request a run worked on and each of its review
// threads: where, whose, its state, and what spawn's last reply said (or
// why spawn left it alone).
func pullRequest(rec *observability.Record) string {
	var b strings.Builder
	switch pr := rec.PullRequest; {
	case pr != nil:
		fmt.Fprintf(&b, "  pull:      #%d %s -> %s  %s\n", pr.Number, pr.Head, pr.Base, pr.URL)
	case rec.PRURL != nil:
		fmt.Fprintf(&b, "  pull:      %s\n", *rec.PRURL)
	}
	for i, t := range rec.GitHubThreads {
		label := "threads:"
		if i > 0 {
			label = ""
		}
		where := t.Path
		if t.Line > 0 {
			where = fmt.Sprintf("%s:%d", t.Path, t.Line)
		}
		fmt.Fprintf(&b, "  %-10s %-10s %-20s %-12s %s\n", label, t.State, where, t.Author, threadSays(t))
	}
	return b.String()
}

// threadSays is what a thread's state rests on: why spawn left it alone,
// or spawn's last reply in it.
func threadSays(t observability.GitHubThread) string {
	if t.State == observability.ThreadSkipped {
		return "left alone: " + strings.ReplaceAll(string(t.Skipped), "_", " ")
	}
	if len(t.Replies) == 0 {
		return "no reply yet"
	}
	r := t.Replies[len(t.Replies)-1]
	if r.Kind == observability.ReplyCannotResolve && len(t.Replies) > 1 {
		r = t.Replies[len(t.Replies)-2]
	}
	return firstLine(r.Body)
}

// prSteps are the next steps of a spawn pr run: its work is on the pull
// request's branch, and its threads say what is settled.
func prSteps(rec *observability.Record, open int) []string {
	pr := rec.PullRequest
	if rec.Status != observability.StatusSucceeded {
		return []string{fmt.Sprintf("the run ended before it answered every thread; what it pushed is on %s; read pull request #%d: %s", pr.Head, pr.Number, pr.URL)}
	}
	switch rec.Verdict {
	case observability.VerdictApproved:
		return []string{fmt.Sprintf("spawn's reviewer confirmed the fix of every thread it acted on; each thread names its commits: %s", pr.URL)}
	case observability.VerdictNone:
		return []string{fmt.Sprintf("no reviewer checked the fix ([github] verify_fixes is off): read the replies and the change on pull request #%d: %s", pr.Number, pr.URL)}
	}
	return []string{fmt.Sprintf("not every thread is settled (%s open, or declined): each says why in its last reply; read pull request #%d: %s", text.Plural(open, "finding"), pr.Number, pr.URL)}
}
