package spawn

import (
	"context"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/team/forge"
)

// PROptions is a person's review to address with spawn pr.
type PROptions struct {
	// Ref names the pull request: its number, #number, or its URL.
	Ref string
	// Options are the run's configuration, repository, environment and
	// clock; the task, base and branch are spawn pr's.
	Options
}

// FixPR addresses people's review on an existing pull request: a sandbox
// on the pull request's head (fetched from the remote; a pull request from
// a fork is refused), a coder turn on the unresolved, current threads
// whose author is trusted (write, maintain or admin on the repository, or
// listed in [github] trusted_authors), the fix pushed to the pull
// request's branch, and then, with [github] verify_fixes (the default),
// the run's reviewer checks the fix of each thread: a thread it confirms
// is answered "Fixed in <commits>" with the check round, one it does not
// is answered with what is still open and goes back to the coder, up to
// max_iterations coder turns. A thread the coder declines is answered with
// its reason. Without verify_fixes there is one coder turn and each thread
// is answered with its commits, marked unverified. A thread is resolved
// only with [github] resolve_human_threads, after its reply (package
// forge: Take, Fix).
//
// The record (mode "pr") holds the pull request and every thread: those
// acted on with their state and replies, and those left alone (an
// untrusted author, outdated, already resolved, spawn's own) with their
// ids, author, file and line and why, never their text, which reaches no
// prompt. The verdict is approved when the reviewer confirmed every
// thread and found no critical or high problem in the change,
// changes_requested when a thread is still open or was declined (or the
// change has such a problem), none without verify_fixes. Bad input (no token, no such pull request, a
// fork, nothing to address) creates nothing.
func FixPR(ctx context.Context, opts PROptions, sink Sink) (*observability.Record, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	started := opts.Now()
	opts.Config.Team.Mode = observability.ModePR
	fail := func(err error) (*observability.Record, error) {
		return rejected(opts.Options, started, err), err
	}
	repo, err := runs.OpenRepo(ctx, opts.RepoDir, opts.Env)
	if err != nil {
		return fail(err)
	}
	h, err := openForge(ctx, opts.Config, repo.Dir, "", opts.Env, config.ReadEnvironment(opts.Env).GitHub)
	if err != nil {
		return fail(err)
	}
	review, err := h.Take(ctx, repo.Git, opts.Ref)
	if err != nil {
		switch err.(type) {
		case *forge.Error, *forge.RefusedError:
			return fail(forgeError(err))
		}
		return fail(githubPreflightError(err))
	}
	runOpts := opts.Options
	runOpts.Task = review.Task()
	runOpts.RepoDir, runOpts.Base, runOpts.Branch = repo.Dir, review.Head, ""
	return run1(ctx, runOpts, sink, h, func(ctx context.Context, r *run) (observability.Verdict, error) {
		p := forge.FixPolicy{MaxIterations: r.opts.Config.Team.MaxIterations}
		if verifier, ok := r.pre.seats.reviewer(""); ok {
			p.Verifier = verifier.llm()
		}
		verdict, err := h.Fix(ctx, r, review, p)
		return verdict, forgeError(err)
	})
}
