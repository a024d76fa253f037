package spawn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/team"
	"github.com/infinite-improbability-drive/spawn/team/github"
)

// hub is a github-mode run's side on GitHub: the client (and the
// reviewer identity's, when there is one), and the pull request with the
// threads spawn opened on it. The run is the team.Forge that drives it.
type hub struct {
	client   *github.Client
	reviewer *github.Client // nil with one identity: reviews are COMMENTs
	loc      github.Location
	access   github.Access
	cfg      config.GitHub
	base     string // the pull request's base branch; "" is the default branch

	mu       sync.Mutex
	pr       github.PullRequest
	opened   bool
	head     string            // the commit the current round reviews
	reviewed string            // the commit the last finished round reviewed
	threads  map[string]int64  // finding id -> the root comment of its thread
	files    map[string]string // finding id -> the file its thread is on
	// narrate tells the run's user about a wait; nil until the run exists.
	narrate func(string)
	// pushTo is the remote branch the run's branch is pushed to: "" for
	// the same name; the pull request's head branch for spawn pr.
	pushTo string
}

// push pushes the run's branch to the remote (to pushTo when set) with
// the user's git credentials, and returns the commit pushed.
func (h *hub) push(ctx context.Context, repo git.Repo, branch string) (string, error) {
	if h.pushTo == "" {
		return github.Push(ctx, repo, h.loc.Remote, branch)
	}
	sha, err := repo.Resolve(ctx, "refs/heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("push %s: %w", branch, err)
	}
	env := append(append([]string(nil), repo.Env...), "GIT_TERMINAL_PROMPT=0")
	if _, err := (git.Repo{Dir: repo.Dir, Env: env}).Run(ctx, "push", "--quiet", h.loc.Remote, "refs/heads/"+branch+":refs/heads/"+h.pushTo); err != nil {
		return "", fmt.Errorf("push %s to %s on %s: %w", branch, h.pushTo, h.loc.Remote, err)
	}
	return sha, nil
}

// say narrates text when the run is there to tell.
func (h *hub) say(text string) {
	h.mu.Lock()
	narrate := h.narrate
	h.mu.Unlock()
	if narrate != nil {
		narrate(text)
	}
}

// openHub is github mode's preflight: where the repository is on
// GitHub, a token that can push there, a reachable API. Nothing is
// created; a problem is a repo *Error (exit 2) saying what to do. The
// waits for GitHub's rate limits are narrated once the run exists.
func openHub(ctx context.Context, cfg config.Config, repoDir, base string, env []string) (*hub, error) {
	h := &hub{cfg: cfg.GitHub, threads: map[string]int64{}, files: map[string]string{}}
	loc, err := github.Locate(ctx, github.LocateOptions{Dir: repoDir, Remote: cfg.GitHub.Remote, Env: env})
	if err != nil {
		return nil, githubPreflightError(err)
	}
	client, err := github.New(loc, github.WithMinWriteInterval(cfg.GitHub.MinWriteInterval),
		github.WithWaitReporter(func(d time.Duration, why string) {
			h.say(fmt.Sprintf("waiting %s for GitHub (%s)", d.Round(time.Second), why))
		}))
	if err != nil {
		return nil, githubPreflightError(err)
	}
	access, err := client.Preflight(ctx)
	if err != nil {
		return nil, githubPreflightError(err)
	}
	h.client, h.loc, h.access = client, loc, access
	if r, ok := client.Reviewer(); ok && access.Reviewer {
		h.reviewer = r
	}
	h.base = cfg.GitHub.PRBase
	if h.base == "" && base != "" && base != "HEAD" && !looksLikeSHA(base) {
		h.base = base
	}
	return h, nil
}

// looksLikeSHA reports whether ref is a commit id rather than a branch.
func looksLikeSHA(ref string) bool {
	if len(ref) < 7 || len(ref) > 40 {
		return false
	}
	return strings.Trim(ref, "0123456789abcdef") == ""
}

// githubPreflightError is a failed GitHub preflight as spawn's error.
func githubPreflightError(err error) error {
	var pe *github.PreflightError
	if errors.As(err, &pe) {
		return errorf(KindRepo, err, "%s", pe.Sentence)
	}
	return errorf(KindGitHub, err, "the GitHub API failed: %v", err)
}

// githubError is a GitHub failure during the run: exit 6, GitHub's
// message.
func githubError(err error, doing string) error {
	return errorf(KindGitHub, err, "the GitHub API failed while spawn %s: %v; the work is committed on the run's branch", doing, err)
}

var _ team.Forge = (*run)(nil)

// AfterCode pushes the branch after a coder turn, opens the pull request
// after the first, and after a fix turn replies in the thread of each
// finding the coder answered: the commits that changed its file and the
// coder's one line, or why it declined (the thread stays open).
func (r *run) AfterCode(ctx context.Context, round int, replies []observability.CoderReply) error {
	h := r.gh
	sha, err := h.push(ctx, r.sb.Repo, r.sb.Branch)
	if err != nil {
		return githubError(err, "pushed "+r.sb.Branch)
	}
	r.emit(Event{Kind: EventGitHub, Round: round, GitHub: &GitHubStep{Pushed: sha}})
	h.mu.Lock()
	opened := h.opened
	h.mu.Unlock()
	if !opened {
		pr, _, err := h.client.EnsurePR(ctx, github.NewPR{Head: r.sb.Branch, Base: h.base, Title: firstLine(r.opts.Task),
			Body:  r.red.String(r.opts.Task) + "\n\n" + github.SummaryStart + "\n" + r.prSummary("the coder's first turn is pushed; the review comes next") + "\n" + github.SummaryEnd,
			Draft: h.cfg.Draft})
		if err != nil {
			return githubError(err, "opened the pull request")
		}
		h.mu.Lock()
		h.pr, h.opened = pr, true
		h.mu.Unlock()
		r.emit(Event{Kind: EventGitHub, Round: round, GitHub: &GitHubStep{PRURL: pr.URL}})
	}
	for _, rep := range replies {
		h.mu.Lock()
		root, ok := h.threads[rep.FindingID]
		file := h.files[rep.FindingID]
		from := h.reviewed
		h.mu.Unlock()
		if !ok {
			continue // a finding in the review's body: no thread to answer
		}
		var body string
		switch rep.Action {
		case observability.CoderFixed:
			commits, err := r.commitsTouching(ctx, from, sha, file)
			if err != nil {
				return err
			}
			body = fmt.Sprintf("Fixed in %s: %s", commits, rep.Reason)
		default:
			body = fmt.Sprintf("Declined: %s", rep.Reason)
		}
		marker := github.Marker{Run: r.rec.ID, Round: round, Finding: rep.FindingID}
		if _, _, err := h.client.Reply(ctx, h.prNumber(), root, marker, r.red.String(body)); err != nil {
			return githubError(err, "replied to a review thread")
		}
		r.emit(Event{Kind: EventGitHub, Round: round, GitHub: &GitHubStep{Reply: fmt.Sprintf("%s: %s", rep.FindingID, firstLine(body))}})
	}
	return r.setSummary(ctx, fmt.Sprintf("round %d's work is pushed; the review comes next", round))
}

// commitsTouching names the commits from..to that changed file (all of
// them when file is ""), short and comma-separated; "the last commit"
// when there are none to name.
func (r *run) commitsTouching(ctx context.Context, from, to, file string) (string, error) {
	args := []string{"log", "--format=%h", from + ".." + to}
	if file != "" {
		args = append(args, "--", file)
	}
	if from == "" {
		args[2] = to
	}
	out, err := r.sb.Tree.Run(ctx, args...)
	if err != nil {
		return "", r.sandboxError(err, "cannot list the fix commits")
	}
	shas := strings.Fields(out)
	if len(shas) == 0 {
		return shortSHA(to), nil
	}
	return strings.Join(shas, ", "), nil
}

// BeforeReview marks the head under review pending.
func (r *run) BeforeReview(ctx context.Context, round int, head string) error {
	r.gh.mu.Lock()
	r.gh.head = head
	r.gh.mu.Unlock()
	return r.setStatus(ctx, head, github.StatusPending, fmt.Sprintf("spawn is reviewing round %d", round))
}

// AfterReview posts the round's reviews, one per seat: new findings inline
// where the diff holds their line, the others in the body, the verdict in
// the body (and as the review's event with a reviewer identity). A
// finding the round confirmed resolved has its thread resolved; one it
// raised again gets a reply with the reviewer's new detail.
func (r *run) AfterReview(ctx context.Context, round team.Round) error {
	h := r.gh
	files, err := h.client.Files(ctx, h.prNumber())
	if err != nil {
		return githubError(err, "read the pull request's files")
	}
	diff, err := github.DiffFromFiles(files)
	if err != nil {
		return githubError(err, "read the pull request's diff")
	}
	state := map[string]observability.Finding{}
	for _, f := range round.Findings {
		state[f.ID] = f
	}
	h.mu.Lock()
	head := h.head
	h.mu.Unlock()
	approved := true
	for _, fb := range round.Feedback {
		if fb.Verdict != observability.ReviewApprove {
			approved = false
		}
		if err := r.postReview(ctx, round.Number, fb, state, diff, head); err != nil {
			return err
		}
	}
	if err := r.resolveConfirmed(ctx, round, head); err != nil {
		return err
	}
	h.mu.Lock()
	h.reviewed = head
	h.mu.Unlock()
	st, desc := github.StatusFailure, fmt.Sprintf("round %d: changes requested", round.Number)
	if approved {
		st, desc = github.StatusSuccess, fmt.Sprintf("round %d: approved", round.Number)
	}
	if err := r.setStatus(ctx, head, st, desc); err != nil {
		return err
	}
	return r.setSummary(ctx, fmt.Sprintf("review round %d: %s", round.Number, strings.ReplaceAll(desc[strings.Index(desc, ": ")+2:], "_", " ")))
}

// postReview posts one seat's review of round.
func (r *run) postReview(ctx context.Context, round int, fb observability.ReviewFeedback, state map[string]observability.Finding, diff github.Diff, head string) error {
	h := r.gh
	var fresh []github.Finding
	var again []observability.Finding
	h.mu.Lock()
	for _, f := range fb.Findings {
		f = state[f.ID]
		if _, ok := h.threads[f.ID]; ok {
			again = append(again, f)
			continue
		}
		fresh = append(fresh, github.Finding{ID: f.ID, Path: f.File, Line: f.Line, Body: r.red.String(findingComment(f))})
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
	fmt.Fprintf(&body, "**spawn review, round %d (%s): %s**\n\n%s\n", round, fb.Domain, verdict, r.red.String(fb.Summary))
	if len(placed.Unplaced) > 0 {
		body.WriteString("\nFindings outside the diff:\n")
		for _, u := range placed.Unplaced {
			f := state[u.Finding.ID]
			fmt.Fprintf(&body, "- %s\n", r.red.String(strings.ReplaceAll(findingComment(f), "\n", " ")))
		}
	}
	event := github.EventComment
	client := h.client
	if h.reviewer != nil {
		client = h.reviewer
		event = github.EventRequestChanges
		if fb.Verdict == observability.ReviewApprove {
			event = github.EventApprove
		}
	}
	marker := github.Marker{Run: r.rec.ID, Round: round, Seat: fb.Domain}
	rev, err := client.SubmitReview(ctx, h.prNumber(), github.ReviewRequest{Marker: marker, Event: event, Body: body.String(), CommitID: head, Comments: placed.Inline})
	if err != nil {
		return githubError(err, "posted the review of round "+fmt.Sprint(round))
	}
	rec := observability.GitHubReview{ID: rev.ID, Iteration: round, Seat: fb.Domain, State: rev.State, Body: rev.Body, Commit: head, URL: rev.URL}
	h.mu.Lock()
	for _, c := range rev.Comments {
		h.threads[c.FindingID] = c.ID
		h.files[c.FindingID] = c.Path
		rec.Comments = append(rec.Comments, observability.GitHubComment{ID: c.ID, FindingID: c.FindingID, Path: c.Path, Line: c.Line})
	}
	h.mu.Unlock()
	r.emit(Event{Kind: EventGitHub, Round: round, GitHub: &GitHubStep{Review: &rec}})
	for _, f := range again {
		h.mu.Lock()
		root := h.threads[f.ID]
		h.mu.Unlock()
		m := github.Marker{Run: r.rec.ID, Round: round, Seat: fb.Domain, Finding: f.ID}
		text := fmt.Sprintf("Still open after round %d: %s", round, r.red.String(f.Detail))
		if _, _, err := client.Reply(ctx, h.prNumber(), root, m, text); err != nil {
			return githubError(err, "replied to a review thread")
		}
		r.emit(Event{Kind: EventGitHub, Round: round, GitHub: &GitHubStep{Reply: f.ID + ": still open"}})
	}
	return nil
}

// findingComment is a finding as a review comment.
func findingComment(f observability.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** (%s, %s): %s", f.Title, f.Severity, f.Domain, f.Detail)
	if f.File != "" && f.Line > 0 {
		fmt.Fprintf(&b, " (%s:%d)", f.File, f.Line)
	}
	if f.Suggestion != "" {
		fmt.Fprintf(&b, "\n\nSuggestion: %s", f.Suggestion)
	}
	return b.String()
}

// resolveConfirmed resolves the threads of the findings round confirmed
// resolved. A token that may not resolve threads (Actions' GITHUB_TOKEN)
// gets a reply saying so instead, and the record notes it: not a failure.
func (r *run) resolveConfirmed(ctx context.Context, round team.Round, head string) error {
	h := r.gh
	var ids []string
	for _, fb := range round.Feedback {
		ids = append(append(ids, fb.Resolved...), fb.ResolvedByApproval...)
	}
	if len(ids) == 0 {
		return nil
	}
	threads, err := h.client.Threads(ctx, h.prNumber())
	if err != nil {
		return githubError(err, "read the review threads")
	}
	for _, id := range ids {
		h.mu.Lock()
		root, ok := h.threads[id]
		h.mu.Unlock()
		if !ok {
			continue
		}
		th, ok := github.ThreadOf(threads, root)
		if !ok || th.Resolved {
			continue
		}
		done := observability.ResolvedComment{CommentID: root, ThreadID: th.ID, FindingID: id, Commit: head,
			Explanation: fmt.Sprintf("review round %d confirmed it fixed at %s", round.Number, shortSHA(head)),
			ResolvedBy:  observability.ResolvedByVerification, Resolved: true}
		err := h.client.Resolve(ctx, th.ID)
		switch {
		case errors.Is(err, github.ErrCannotResolve):
			done.Resolved = false
			done.Explanation += "; this token cannot resolve review threads, so the thread is left for a person to resolve"
			m := github.Marker{Run: r.rec.ID, Round: round.Number, Seat: "verified", Finding: id}
			if _, _, err := h.client.Reply(ctx, h.prNumber(), root, m, "Verified fixed by review round "+fmt.Sprint(round.Number)+"; spawn's token cannot resolve threads: please resolve this one."); err != nil {
				return githubError(err, "replied to a review thread")
			}
			r.emit(Event{Kind: EventNote, Text: fmt.Sprintf("the GitHub token cannot resolve review threads; spawn replied in the thread of finding %s instead", id)})
		case err != nil:
			return githubError(err, "resolved a review thread")
		}
		r.emit(Event{Kind: EventGitHub, Round: round.Number, GitHub: &GitHubStep{Resolved: &done}})
	}
	return nil
}

// AfterLoop marks an approved draft ready for review, and writes the
// run's final summary into the pull request.
func (r *run) AfterLoop(ctx context.Context, verdict observability.Verdict) error {
	h := r.gh
	if verdict == observability.VerdictApproved {
		pr, err := h.client.PR(ctx, h.prNumber())
		if err != nil {
			return githubError(err, "read the pull request")
		}
		if err := h.client.MarkReady(ctx, pr); err != nil {
			return githubError(err, "marked the pull request ready for review")
		}
	}
	return r.setSummary(ctx, "the run ended: "+strings.ReplaceAll(string(verdict), "_", " "))
}

// setStatus sets spawn's commit status on sha and records it.
func (r *run) setStatus(ctx context.Context, sha string, state github.StatusState, desc string) error {
	if err := r.gh.client.SetStatus(ctx, sha, state, desc, ""); err != nil {
		return githubError(err, "set the commit status")
	}
	r.emit(Event{Kind: EventGitHub, GitHub: &GitHubStep{Status: &observability.GitHubStatus{SHA: sha, Context: github.StatusContext, State: string(state), Description: desc}}})
	return nil
}

// setSummary rewrites the run's summary in the pull request's body.
func (r *run) setSummary(ctx context.Context, now string) error {
	if _, err := r.gh.client.SetSummary(ctx, r.gh.prNumber(), r.prSummary(now)); err != nil {
		return githubError(err, "updated the pull request's description")
	}
	return nil
}

// prSummary is the part of the pull request's body spawn keeps up to
// date: where the run is, its rounds and open findings.
func (r *run) prSummary(now string) string {
	r.record.mu.Lock()
	defer r.record.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "**spawn** run `%s`: %s.\n", r.rec.ID, now)
	if len(r.rec.ReviewFeedback) > 0 {
		b.WriteString("\n| round | reviewer | verdict | findings |\n|---|---|---|---|\n")
		for _, fb := range r.rec.ReviewFeedback {
			fmt.Fprintf(&b, "| %d | %s | %s | %d |\n", fb.Iteration, fb.Domain, fb.Verdict, len(fb.Findings))
		}
	}
	fmt.Fprintf(&b, "\ncost so far: $%.4f", r.rec.Usage.CostUSD)
	return r.red.String(b.String())
}

func (h *hub) prNumber() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pr.Number
}
