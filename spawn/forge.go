package spawn

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/team/forge"
	"github.com/infinite-improbability-drive/spawn/team/github"
)

// The run is what the forge needs of it (forge.Run): its events, its
// branch's commits, its progress.
var _ forge.Run = (*run)(nil)

// openForge is github mode's (and spawn pr's) preflight: forge.Open with
// the configuration's [github] settings and what the environment says
// about GitHub (given). A problem is a repo *fault.Error
// (exit 2) saying what to do; nothing is created.
func openForge(ctx context.Context, cfg config.Config, repoDir, base string, env []string, given config.GitHubEnv) (*forge.Hub, error) {
	g := cfg.GitHub
	h, err := forge.Open(ctx, forge.Settings{Remote: g.Remote, Draft: g.Draft, PRBase: g.PRBase, MinWriteInterval: g.MinWriteInterval,
		TrustedAuthors: g.TrustedAuthors, ResolveHumanThreads: g.ResolveHumanThreads, VerifyFixes: g.VerifyFixes, AllowCIChanges: g.AllowCIChanges}, repoDir, base, env, github.Given(given))
	if err != nil {
		return nil, githubPreflightError(err)
	}
	return h, nil
}

// attachForge binds the run's forge, when it has one, to the run: from
// then on the forge's steps and waits are the run's events.
func (r *run) attachForge() {
	if r.gh == nil {
		return
	}
	r.gh.Attach(r, forge.Work{ID: r.rec.ID, Task: r.opts.Task, Redactor: r.red, Repo: r.sb.Repo, Branch: r.sb.Branch, Base: r.sb.Base})
}

// githubPreflightError is a failed GitHub preflight as spawn's error.
func githubPreflightError(err error) error {
	var pe *github.PreflightError
	if errors.As(err, &pe) {
		return fault.Errorf(fault.KindRepo, err, "%s", pe.Sentence)
	}
	return fault.Errorf(fault.KindGitHub, err, "the GitHub API failed: %v", err)
}

// forgeError is an error the forge returned as spawn's: a GitHub failure
// (*forge.Error) is exit 6 with its sentence, a pull request spawn pr
// refuses (*forge.RefusedError) a usage error; any other error (the run's
// own, from its agents or its sandbox) is returned as it is.
func forgeError(err error) error {
	switch e := err.(type) {
	case *forge.Error:
		return fault.Errorf(fault.KindGitHub, e.Err, "%s", e.Error())
	case *forge.RefusedError:
		return fault.Errorf(fault.KindUsage, nil, "%s", e.Error())
	}
	return err
}

// Emit adds e to the run's event stream (forge.Run).
func (r *run) Emit(e observability.Event) { r.emit(e) }

// Commits lists the commits from..to on the sandbox branch that changed
// file (all of them when file is ""), newest first (forge.Run).
func (r *run) Commits(ctx context.Context, from, to, file string) ([]string, error) {
	args := []string{"log", "--format=%H", from + ".." + to}
	if file != "" {
		args = append(args, "--", file)
	}
	out, err := r.sb.Repo.Run(ctx, args...)
	if err != nil {
		return nil, r.sandboxError(err, "cannot list the fix commits")
	}
	return strings.Fields(out), nil
}

// Progress is the run's review rounds and cost so far, as its record has
// them (forge.Run).
func (r *run) Progress() forge.Progress {
	r.record.mu.Lock()
	defer r.record.mu.Unlock()
	return forge.Progress{Reviews: slices.Clone(r.rec.ReviewFeedback), CostUSD: r.rec.Usage.CostUSD}
}

// secrets are the secrets the environment does not show, for the run's
// redactor: a GitHub token from `gh auth token`.
func (c checked) secrets() []string {
	if c.gh == nil {
		return nil
	}
	return c.gh.Secrets()
}
