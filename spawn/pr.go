package spawn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/team"
	"github.com/infinite-improbability-drive/spawn/team/github"
)

// PROptions is a person's review to address with spawn pr.
type PROptions struct {
	// Ref names the pull request: its number, #number, or its URL.
	Ref string
	// Options are the run's configuration, repository, environment and
	// clock; the task, base and branch are spawn pr's.
	Options
}

// thread is a person's review thread spawn pr acts on, as the coder sees
// it: a finding whose id is derived from the thread.
type thread struct {
	github.Thread
	finding prompts.Finding
}

// FixPR addresses a person's review on an existing pull request: a
// sandbox on the pull request's head (fetched from the remote; a pull
// request from a fork is refused), one coder turn on the unresolved
// threads whose author is trusted (write, maintain or admin on the
// repository, or listed in [github] trusted_authors), the fix pushed to
// the pull request's branch, and a reply in each thread the coder
// addressed: the commits, or why it declined. A thread is resolved only
// with [github] resolve_human_threads. Threads of other authors are
// listed in the record's notes (author, file and line) and never acted on:
// their text reaches no prompt. Bad input (no token, no such pull
// request, a fork, nothing to address) creates nothing.
func FixPR(ctx context.Context, opts PROptions, sink Sink) (*observability.Record, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	started := opts.Now()
	fail := func(err error) (*observability.Record, error) {
		return rejected(opts.Options, started, err), err
	}
	repo, err := OpenRepo(ctx, opts.RepoDir, opts.Env)
	if err != nil {
		return fail(err)
	}
	h, err := openHub(ctx, opts.Config, repo.Dir, "", opts.Env)
	if err != nil {
		return fail(err)
	}
	pr, err := h.client.PRByRef(ctx, opts.Ref)
	if err != nil {
		return fail(githubPreflightError(err))
	}
	switch {
	case pr.Fork:
		return fail(errorf(KindUsage, nil, "pull request #%d comes from a fork (%s); spawn pr works only on branches of %s, which it can push to", pr.Number, pr.HeadRepo, h.loc.FullName()))
	case pr.State != "" && pr.State != "open":
		return fail(errorf(KindUsage, nil, "pull request #%d is %s; spawn pr works on open pull requests", pr.Number, pr.State))
	}
	open, err := h.client.OpenThreads(ctx, pr.Number)
	if err != nil {
		return fail(githubError(err, "read the review threads"))
	}
	trusted, ignored, err := h.weigh(ctx, open)
	if err != nil {
		return fail(githubError(err, "read the reviewers' permissions"))
	}
	if len(trusted) == 0 {
		return fail(errorf(KindUsage, nil, "pull request #%d has no unresolved review thread from a trusted author (write, maintain or admin, or [github] trusted_authors)%s; nothing to address", pr.Number, ignoredSuffix(ignored)))
	}
	head, err := github.Fetch(ctx, repo.Git, h.loc.Remote, pr.HeadRef)
	if err != nil {
		return fail(githubError(err, "fetched the pull request's branch"))
	}
	h.pr, h.opened, h.pushTo = pr, true, pr.HeadRef
	cfg := opts.Config
	cfg.Team.Mode = observability.ModeSolo
	runOpts := opts.Options
	runOpts.Task = fmt.Sprintf("Address the review of pull request #%d: %s", pr.Number, pr.Title)
	runOpts.Config, runOpts.RepoDir, runOpts.Base, runOpts.Branch = cfg, repo.Dir, head, ""
	return run1(ctx, runOpts, sink, h, func(ctx context.Context, r *run) (observability.Verdict, error) {
		return observability.VerdictNone, r.fixPR(ctx, trusted, ignored, head)
	})
}

// weigh splits threads by their author's trust.
func (h *hub) weigh(ctx context.Context, threads []github.Thread) (trusted []thread, ignored []github.Thread, err error) {
	perms := map[string]bool{}
	for _, t := range threads {
		author := t.Author()
		ok, seen := perms[author]
		if !seen {
			ok = slices.Contains(h.cfg.TrustedAuthors, author)
			if !ok {
				p, err := h.client.Permission(ctx, author)
				if err != nil {
					return nil, nil, err
				}
				ok = p.Trusted()
			}
			perms[author] = ok
		}
		if !ok {
			ignored = append(ignored, t)
			continue
		}
		var said []string
		for _, c := range t.Comments {
			if perms[c.Author] || c.Author == author || slices.Contains(h.cfg.TrustedAuthors, c.Author) {
				said = append(said, fmt.Sprintf("%s: %s", c.Author, github.StripMarkers(c.Body)))
			}
		}
		title := strings.TrimSpace(firstLine(github.StripMarkers(t.Root().Body)))
		trusted = append(trusted, thread{Thread: t, finding: prompts.Finding{
			ID: prompts.FindingID("review", t.Path, t.ID), Severity: "medium", Domain: string(prompts.GeneralPolish),
			File: t.Path, Line: t.Line, Title: title, Detail: strings.Join(said, "\n")}})
	}
	return trusted, ignored, nil
}

// ignoredSuffix says how many threads were left for their author.
func ignoredSuffix(ignored []github.Thread) string {
	if len(ignored) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s from authors who are not trusted were left alone)", plural(len(ignored), "thread"))
}

// fixPR is spawn pr's strategy: the coder's turn on the trusted threads,
// the push, the replies.
func (r *run) fixPR(ctx context.Context, threads []thread, ignored []github.Thread, head string) error {
	h := r.gh
	for _, t := range ignored {
		r.emit(Event{Kind: EventNote, Text: fmt.Sprintf("the review thread of %s on %s:%d was left alone: %s is not a trusted author (write, maintain or admin, or [github] trusted_authors)", t.Author(), t.Path, t.Line, t.Author())})
	}
	var findings []prompts.Finding
	var ids []string
	for _, t := range threads {
		findings = append(findings, t.finding)
		ids = append(ids, t.finding.ID)
	}
	prompt, err := prompts.Fix(prompts.FixInput{Task: r.opts.Task, Findings: findings, Round: 1})
	if err != nil {
		return errorf(KindInternal, err, "cannot write the coder's prompt: %v", err)
	}
	reply, err := r.Code(ctx, team.CoderTurn{Round: 1, Prompt: prompt})
	if err != nil {
		return err
	}
	sha, err := h.push(ctx, r.sb.Repo, r.sb.Branch)
	if err != nil {
		return githubError(err, "pushed the fix to the pull request's branch")
	}
	r.emit(Event{Kind: EventGitHub, GitHub: &GitHubStep{Pushed: sha}, Text: fmt.Sprintf("pushed %s to %s", shortSHA(sha), h.pushTo)})
	replies := prompts.ParseCoderReplies(reply.Text, ids)
	var errs []error
	for _, rep := range replies {
		i := slices.IndexFunc(threads, func(t thread) bool { return t.finding.ID == rep.FindingID })
		t := threads[i]
		body := "Declined: " + rep.Reason
		if rep.Action == observability.CoderFixed {
			commits, err := r.commitsTouching(ctx, head, sha, t.Path)
			if err != nil {
				return err
			}
			body = fmt.Sprintf("Fixed in %s: %s", commits, rep.Reason)
		}
		root := t.Root().ID
		if _, _, err := h.client.Reply(ctx, h.pr.Number, root, github.Marker{Run: r.rec.ID, Round: 1, Finding: rep.FindingID}, r.red.String(body)); err != nil {
			return githubError(err, "replied to a review thread")
		}
		r.emit(Event{Kind: EventGitHub, GitHub: &GitHubStep{Reply: fmt.Sprintf("%s:%d: %s", t.Path, t.Line, firstLine(body))}})
		if rep.Action != observability.CoderFixed || !h.cfg.ResolveHumanThreads {
			continue
		}
		done := observability.ResolvedComment{CommentID: root, ThreadID: t.ID, FindingID: rep.FindingID, Commit: sha,
			Explanation: r.red.String(rep.Reason), ResolvedBy: observability.ResolvedByFix, Resolved: true}
		if err := h.client.Resolve(ctx, t.ID); err != nil {
			if !errors.Is(err, github.ErrCannotResolve) {
				errs = append(errs, githubError(err, "resolved a review thread"))
				continue
			}
			done.Resolved = false
			done.Explanation += "; this token cannot resolve review threads"
		}
		r.emit(Event{Kind: EventGitHub, GitHub: &GitHubStep{Resolved: &done}})
	}
	return errors.Join(errs...)
}
