// Package forge is where a github-mode run and spawn pr meet GitHub: it
// implements team.Forge over package team/github (GitHub mode: push the
// branch, open the pull request, post each round's reviews, answer and
// resolve the threads, set the commit statuses, keep the pull request's
// summary), and spawn pr's strategy (Take a person's review, weigh its
// threads, Fix: the coder's turns, the reviewer's checks, the replies).
//
// The run is not this package's: what the forge needs of it (its events,
// its branch's commits, its progress, for spawn pr its agents) is the Run
// interface and the team.Run it is handed, and the run's identity and
// branch are plain values (Work). Package spawn opens a Hub at preflight
// (Open), attaches it to the run it begins (Attach), and hands it to
// team.Drive as the run's Forge, or drives spawn pr with Fix.
package forge

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/team/github"
)

// Settings are the [github] configuration the forge follows.
type Settings struct {
	// Remote is the git remote the run's branch is pushed to; its URL
	// names the repository on GitHub (GITHUB_REPOSITORY overrides that).
	Remote string
	// Draft opens the pull request as a draft, marked ready for review
	// once the reviewers approve.
	Draft bool
	// PRBase is the pull request's base branch; "" means the branch the
	// run started from when it is one, else the default branch.
	PRBase string
	// MinWriteInterval spaces the writes to GitHub.
	MinWriteInterval time.Duration
	// TrustedAuthors are logins whose threads spawn pr acts on, besides
	// the repository's writers, maintainers and admins.
	TrustedAuthors []string
	// ResolveHumanThreads lets spawn pr resolve a person's thread once
	// fixed; otherwise it replies and leaves resolving to them.
	ResolveHumanThreads bool
	// VerifyFixes has spawn pr's reviewer check each thread's fix.
	VerifyFixes bool
	// AllowCIChanges lets a push change CI configuration; off, such a
	// push is refused with a *CIChangeError.
	AllowCIChanges bool
}

// Run is what the forge needs of the run it publishes. spawn's run
// implements it.
type Run interface {
	// Emit adds e to the run's events: its record, its event log and its
	// caller's sink see it. It may be called from any goroutine.
	Emit(e observability.Event)
	// Commits lists the commits from..to on the run's branch that changed
	// file (all of them when file is ""), newest first, as full ids; none
	// is an empty list, not an error.
	Commits(ctx context.Context, from, to, file string) ([]string, error)
	// Progress is the run so far, as its record has it.
	Progress() Progress
}

// Progress is the run so far as the pull request's summary shows it.
type Progress struct {
	// Reviews are the reviewers' feedback, round by round: a copy, whose
	// entries' slices the forge only reads.
	Reviews []observability.ReviewFeedback
	// CostUSD is what the run's agents cost so far.
	CostUSD float64
}

// Work is the run a hub publishes: who it is and where its work is.
type Work struct {
	ID   string // the run's id, in every marker spawn leaves on GitHub
	Task string // the run's task: the pull request's title and body
	// Redactor is the run's: everything the forge posts or records goes
	// through it.
	Redactor *observability.Redactor
	// Repo is the sandbox's repository; Branch the run's branch in it,
	// Base the commit that branch started from.
	Repo   git.Repo
	Branch string
	Base   string
}

// Hub is a github-mode run's (or spawn pr's) side on GitHub: the client
// (and the reviewer identity's, when there is one), and the pull request
// with the threads spawn opened on it. It is the run's team.Forge. Its
// methods may be called from one goroutine at a time, except the waits it
// narrates, which the run's events take from any.
type Hub struct {
	client   *github.Client
	reviewer *github.Client // nil with one identity: reviews are COMMENTs
	loc      github.Location
	access   github.Access
	cfg      Settings
	base     string // the pull request's base branch; "" is the default branch

	// run and work are the run the hub publishes, from Attach on.
	run  Run
	work Work

	mu       sync.Mutex
	attached bool
	pr       github.PullRequest
	opened   bool
	head     string            // the commit the current round reviews
	reviewed string            // the commit the last finished round reviewed
	threads  map[string]int64  // finding id -> the root comment of its thread
	files    map[string]string // finding id -> the file its thread is on
	raised   map[string]string // finding id -> the commit the round that opened its thread reviewed
	// said is what the coder's last fix turn said about each finding.
	said map[string]prompts.Attribution
	// entries are the threads as the record has them, by first comment.
	entries map[int64]*observability.GitHubThread
	// pushTo is the remote branch the run's branch is pushed to: "" for
	// the same name; the pull request's head branch for spawn pr.
	pushTo string
}

// Open is the forge's preflight: where the repository in dir is on GitHub
// (given: what the environment says of GITHUB_* and the tokens, as the
// caller read it; cfg.Remote), a token that can push there, a reachable
// API; git and gh run with env. Nothing is created. An error is the client's: a
// *github.PreflightError says what to do. base is the ref the run starts
// from: the pull request's base when it is a branch and cfg.PRBase is "".
// The waits for GitHub's rate limits are told to the run once attached.
func Open(ctx context.Context, cfg Settings, dir, base string, env []string, given github.Given) (*Hub, error) {
	h := &Hub{cfg: cfg, threads: map[string]int64{}, files: map[string]string{}, raised: map[string]string{},
		said: map[string]prompts.Attribution{}, entries: map[int64]*observability.GitHubThread{}}
	loc, err := github.Locate(ctx, github.LocateOptions{Dir: dir, Remote: cfg.Remote, Env: env, Given: given})
	if err != nil {
		return nil, err
	}
	client, err := github.New(loc, github.WithMinWriteInterval(cfg.MinWriteInterval),
		github.WithWaitReporter(func(d time.Duration, why string) {
			h.say(fmt.Sprintf("waiting %s for GitHub (%s)", d.Round(time.Second), why))
		}))
	if err != nil {
		return nil, err
	}
	access, err := client.Preflight(ctx)
	if err != nil {
		return nil, err
	}
	h.client, h.loc, h.access = client, loc, access
	if r, ok := client.Reviewer(); ok && access.Reviewer {
		h.reviewer = r
	}
	h.base = cfg.PRBase
	if h.base == "" && base != "" && base != "HEAD" && !looksLikeSHA(base) {
		h.base = base
	}
	return h, nil
}

// Attach binds the hub to the run it publishes, before the run's first
// step: from then on its waits are the run's notes, its steps the run's
// events.
func (h *Hub) Attach(r Run, w Work) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.run, h.work, h.attached = r, w, true
}

// Secrets are the credentials the hub found that the environment does not
// show (a token from `gh auth token`), for the run's redactor.
func (h *Hub) Secrets() []string { return h.loc.Secrets() }

// PushLeftovers pushes what the run committed after the pull request was
// opened (nothing before), so the pull request holds all of the work even
// when the run failed. A push that fails is the run's warning, not an
// error: the branch has the work.
func (h *Hub) PushLeftovers(ctx context.Context) {
	if h.prNumber() == 0 {
		return
	}
	sha, err := h.push(ctx)
	if err != nil {
		h.run.Emit(observability.Event{Kind: observability.EventWarning, Text: fmt.Sprintf("cannot push the last of the work to the pull request (it is on %s): %v", h.work.Branch, err)})
		return
	}
	h.run.Emit(observability.Event{Kind: observability.EventGitHub, GitHub: &observability.GitHubStep{Pushed: sha}})
}

// push pushes the run's branch to the remote (to pushTo when set) with
// the user's git credentials, and returns the commit pushed. A change to
// CI configuration is refused (*CIChangeError) unless the settings allow
// it.
func (h *Hub) push(ctx context.Context) (string, error) {
	repo, branch := h.work.Repo, h.work.Branch
	if !h.cfg.AllowCIChanges {
		ci, err := ciChanges(ctx, repo, h.work.Base, "refs/heads/"+branch)
		if err != nil {
			return "", fmt.Errorf("push %s: %w", branch, err)
		}
		if len(ci) > 0 {
			return "", &CIChangeError{Branch: branch, Paths: ci}
		}
	}
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

// Error is a GitHub failure while the forge worked: Doing says at what
// ("pushed spawn/x", "read the review threads"), Err is the cause (the
// client's error, or a *CIChangeError). The run's work is committed on its
// branch whatever failed.
type Error struct {
	Doing string
	Err   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("the GitHub API failed while spawn %s: %v; the work is committed on the run's branch", e.Doing, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// apiError is err, met while doing, as an *Error.
func apiError(err error, doing string) error { return &Error{Doing: doing, Err: err} }

// RefusedError is a pull request spawn pr will not address (a fork's, one
// that is not open, one with nothing to address): Sentence says why and
// what to do. Nothing was created.
type RefusedError struct {
	Sentence string
}

func (e *RefusedError) Error() string { return e.Sentence }

// CIChangeError is a push the forge refused because the work changes CI
// configuration: once pushed, a workflow runs with the repository's
// secrets, whatever wrote it.
type CIChangeError struct {
	Branch string
	Paths  []string
}

func (e *CIChangeError) Error() string {
	return fmt.Sprintf("the work changes CI configuration (%s), which runs with the repository's secrets once pushed, so spawn did not push %s; review it on the branch, or set [github] allow_ci_changes = true in your own spawn-team.toml",
		strings.Join(e.Paths, ", "), e.Branch)
}

// ciPaths match the files of CI systems, whose changes run when pushed.
var ciPaths = lazy.MustCompile(`^(\.github/(workflows|actions)/|\.gitlab-ci\.yml$|\.gitlab/|\.circleci/|\.buildkite/|\.travis\.yml$|\.drone\.yml$|\.woodpecker(\.yml$|/)|azure-pipelines\.yml$|bitbucket-pipelines\.yml$|Jenkinsfile$|\.jenkins/|\.tekton/|cloudbuild\.ya?ml$|\.github/dependabot\.yml$)`)

// ciChanges lists the CI configuration files that from..to changes.
func ciChanges(ctx context.Context, repo git.Repo, from, to string) ([]string, error) {
	out, err := repo.Run(ctx, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", from, to, "--")
	if err != nil {
		return nil, fmt.Errorf("list the changed files: %w", err)
	}
	var ci []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" && ciPaths.MatchString(p) {
			ci = append(ci, p)
		}
	}
	return ci, nil
}

// asData makes words an agent chose (the coder's, a reviewer's: a
// prompt-injected agent may have written them) safe to post on GitHub:
// no @mention pings anyone (a zero-width space follows each @), and no line
// starts a slash-command (a zero-width space leads a line that starts
// with /).
func asData(s string) string {
	s = strings.ReplaceAll(s, "@", "@\u200b")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " \t>"), "/") {
			lines[i] = "\u200b" + l
		}
	}
	return strings.Join(lines, "\n")
}

// say tells the run a note when the hub is attached to one.
func (h *Hub) say(text string) {
	h.mu.Lock()
	run, attached := h.run, h.attached
	h.mu.Unlock()
	if attached {
		run.Emit(observability.Event{Kind: observability.EventNote, Text: text})
	}
}

// looksLikeSHA reports whether ref is a commit id rather than a branch.
func looksLikeSHA(ref string) bool {
	if len(ref) < 7 || len(ref) > 40 {
		return false
	}
	return strings.Trim(ref, "0123456789abcdef") == ""
}

func (h *Hub) prNumber() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pr.Number
}
