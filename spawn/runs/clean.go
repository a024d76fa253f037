package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// CleanOptions selects the runs Clean removes and how.
type CleanOptions struct {
	// Refs are the runs to clean: ids, unique prefixes of ids, or "last".
	// Exactly one of Refs, All and OlderThan selects the runs.
	Refs []string
	// All selects every run of the repository.
	All bool
	// OlderThan, when positive, selects the runs that ended (or, never
	// ended, started) longer than this before Now.
	OlderThan time.Duration
	// Now is the clock OlderThan is measured against; nil means time.Now.
	Now func() time.Time
	// Force removes branches whose commits are saved nowhere else and
	// worktrees with uncommitted changes.
	Force bool
	// Purge removes the run directory (record, events, transcripts,
	// configuration, cassette) too.
	Purge bool
	// DryRun decides everything and changes nothing: no worktree, branch,
	// run directory or lock is touched.
	DryRun bool
}

// CleanAction is what Clean did with one run.
type CleanAction string

// What Clean does with a run.
const (
	// CleanRemoved: the worktree and branches are gone (and the run
	// directory, with Purge).
	CleanRemoved CleanAction = "removed"
	// CleanWouldRemove: a dry run would have removed them.
	CleanWouldRemove CleanAction = "would_remove"
	// CleanNothing: the run has no worktree or branch left (and Purge
	// was not asked for).
	CleanNothing CleanAction = "nothing"
	// CleanRefused: removing would lose work (Unsaved, Uncommitted) or
	// cannot be done (Reason); nothing of the run was touched.
	CleanRefused CleanAction = "refused"
	// CleanLive: a live process holds the run; nothing was touched.
	CleanLive CleanAction = "live"
	// CleanFailed: git or the file system failed part way; Reason says
	// where, and what is left is what the run still has.
	CleanFailed CleanAction = "failed"
)

// Kept reports whether the action left the run's work where it was
// because of something the user must see (refused, live, failed).
func (a CleanAction) Kept() bool {
	return a == CleanRefused || a == CleanLive || a == CleanFailed
}

// CommitRef is a commit as Clean names it.
type CommitRef struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

// Unsaved is a branch of a run with the commits that no other ref keeps.
type Unsaved struct {
	Branch  string      `json:"branch"`
	Commits []CommitRef `json:"commits"`
}

// Cleaned is one run as Clean left it.
type Cleaned struct {
	ID     string      `json:"id"`
	Action CleanAction `json:"action"`
	// Worktree is the run's worktree that was (or would be) removed, ""
	// when it had none.
	Worktree string `json:"worktree,omitempty"`
	// Branches are the run's branches that were (or would be) deleted:
	// its branch and any other branch in its ref namespace.
	Branches []string `json:"branches"`
	// Purged says the run directory was (or would be) removed.
	Purged bool `json:"purged"`
	// Unsaved are, for a run refused or forced, the commits that are
	// neither merged nor pushed: reachable from no branch, remote-tracking
	// branch or tag other than the runs'.
	Unsaved []Unsaved `json:"unsaved"`
	// Uncommitted counts the worktree's uncommitted paths.
	Uncommitted int `json:"uncommitted"`
	// Reason says, in one sentence, why the run was kept or what failed.
	Reason string `json:"reason,omitempty"`
}

// Clean removes the worktrees and branches of the runs opts selects,
// keeping their run directories (records, events, transcripts) unless
// opts.Purge. It never drops work silently:
//
//   - A live run (its spawn process holds the lock) is never touched:
//     CleanLive.
//   - A run's commits are safe when some ref other than the runs' own
//     keeps them: a local branch that is not a run's branch (merged into
//     main, or anywhere else), a remote-tracking branch (pushed), or a
//     tag. A run's own refs are its branch and every branch in its ref
//     namespace, spawn/<id>/; the branches of every run of the registry
//     count as nobody's keeping, so that cleaning two runs that share
//     commits cannot lose them. A branch merged by squash or rebase
//     keeps copies, not the commits: it is not recognised.
//   - A worktree with uncommitted changes is work too.
//
// Without opts.Force a run with unsaved commits or uncommitted changes is
// CleanRefused and untouched. A branch checked out in a worktree other
// than the run's is refused even with Force (git cannot delete it).
//
// Runs are cleaned one at a time, each under its live lock, while the
// repository's lock holds off new runs. A reference that names no run is
// a usage *fault.Error and nothing is cleaned. The runs are returned in the
// order selected (newest first for All and OlderThan); the error is for
// what stopped Clean as a whole, per-run failures are CleanFailed.
func (r *Repo) Clean(ctx context.Context, opts CleanOptions) (_ []Cleaned, err error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	if len(opts.Refs) > 0 && (opts.All || opts.OlderThan > 0) {
		return nil, fault.Errorf(fault.KindUsage, nil, "give run ids, or --all / --older-than, not both")
	}
	if len(opts.Refs) == 0 && !opts.All && opts.OlderThan <= 0 {
		return nil, fault.Errorf(fault.KindUsage, nil, "say which runs to clean: run ids, --all, or --older-than 7d")
	}
	entries, err := r.Registry.List()
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot read the run registry: %v", err)
	}
	selected, err := r.selectRuns(entries, opts, now())
	if err != nil {
		return nil, err
	}
	if len(selected) == 0 {
		return nil, nil // and .spawn/ is not created for its lock
	}
	if !opts.DryRun {
		var unlock func() error
		if unlock, err = r.Registry.LockRepo(ctx); err != nil {
			return nil, fault.Errorf(fault.KindInternal, err, "cannot lock %s to clean runs: %v", filepath.Join(r.Dir, sandbox.Dir), err)
		}
		defer func() { err = errors.Join(err, unlock()) }()
		// Under the lock no run is being created: the branches of every
		// run are known.
		if entries, err = r.Registry.List(); err != nil {
			return nil, fault.Errorf(fault.KindInternal, err, "cannot read the run registry: %v", err)
		}
	}
	w, err := r.readWorktrees(ctx)
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot list the repository's worktrees: %v", err)
	}
	excludes := runBranchPatterns(entries)
	explicit := len(opts.Refs) > 0
	jail := &cleanJail{}
	if jail.exe, err = proc.Own(); err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot find spawn's own binary: %v", err)
	}
	var out []Cleaned
	for _, e := range selected {
		c := r.cleanOne(ctx, e, opts, w, excludes, jail)
		if c.Action == CleanNothing && !explicit {
			continue // --all and --older-than list what they do, not what is already clean
		}
		out = append(out, c)
	}
	return out, nil
}

// selectRuns resolves opts to registry entries, without duplicates.
func (r *Repo) selectRuns(entries []Entry, opts CleanOptions, now time.Time) ([]Entry, error) {
	if len(opts.Refs) > 0 {
		var sel []Entry
		seen := map[string]bool{}
		for _, ref := range opts.Refs {
			e, err := r.Find(ref)
			if err != nil {
				return nil, err
			}
			if !seen[e.ID] {
				seen[e.ID] = true
				sel = append(sel, e)
			}
		}
		return sel, nil
	}
	var sel []Entry
	for _, e := range entries {
		if opts.OlderThan > 0 {
			at, ok := runTime(e)
			if !ok || now.Sub(at) < opts.OlderThan {
				continue
			}
		}
		sel = append(sel, e)
	}
	return sel, nil
}

// runTime is when a run ended, or started when it has not ended; a run
// without a readable record is dated by its id. ok is false when neither
// says.
func runTime(e Entry) (time.Time, bool) {
	if s := e.Summary; s != nil {
		if s.FinishedAt != nil && !s.FinishedAt.IsZero() {
			return *s.FinishedAt, true
		}
		if !s.StartedAt.IsZero() {
			return s.StartedAt, true
		}
	}
	const idTime = "20060102-150405"
	if len(e.ID) >= len(idTime) {
		if t, err := time.Parse(idTime, e.ID[:len(idTime)]); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// runBranchPatterns are the branches of every run of the registry, as
// `git rev-list --exclude` patterns relative to refs/heads: each run's ref
// namespace and each recorded branch. Branch names cannot hold glob
// characters, so a recorded name matches only itself.
func runBranchPatterns(entries []Entry) []string {
	var pats []string
	for _, e := range entries {
		pats = append(pats, "spawn/"+e.ID+"/*")
		if e.Summary != nil && e.Summary.Branch != "" {
			pats = append(pats, e.Summary.Branch)
		}
	}
	return pats
}

// worktrees is what `git worktree list --porcelain` says: the worktrees'
// paths and the branch each has checked out.
type worktrees struct {
	branchOf map[string]string // cleaned path -> refs/heads/... ("" when detached)
}

func (r *Repo) readWorktrees(ctx context.Context) (worktrees, error) {
	out, err := r.Git.Run(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return worktrees{}, err
	}
	w := worktrees{branchOf: map[string]string{}}
	path := ""
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "worktree "):
			path = canon(strings.TrimPrefix(line, "worktree "))
			w.branchOf[path] = ""
		case strings.HasPrefix(line, "branch ") && path != "":
			w.branchOf[path] = strings.TrimPrefix(line, "branch ")
		}
	}
	return w, nil
}

// registered reports whether path is one of git's worktrees.
func (w worktrees) registered(path string) bool {
	_, ok := w.branchOf[canon(path)]
	return ok
}

// checkedOut returns a worktree other than except that has ref checked out.
func (w worktrees) checkedOut(ref, except string) (string, bool) {
	for p, b := range w.branchOf {
		if b == ref && p != canon(except) {
			return p, true
		}
	}
	return "", false
}

// canon is path with its symbolic links resolved when it exists, so that
// git's spelling of a worktree's path and the record's compare equal.
func canon(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return filepath.Clean(path)
}

// cleanOne cleans one run under its live lock (a dry run takes no lock
// and reads the registry's view of it instead).
func (r *Repo) cleanOne(ctx context.Context, e Entry, opts CleanOptions, w worktrees, excludes []string, jail *cleanJail) Cleaned {
	c := Cleaned{ID: e.ID, Branches: []string{}, Unsaved: []Unsaved{}}
	run, refused := r.lockForClean(e, opts.DryRun)
	if refused != nil {
		c.Action, c.Reason = refused.action, refused.reason
		return c
	}
	release := func() error {
		if run == nil {
			return nil
		}
		return run.Close()
	}
	// The worktree is where spawn puts every run's, never a path a
	// record names (a record is data; a path in it could be anything).
	// The branch is the record's, read under the lock: the run may have
	// ended or been resumed since the registry was listed. A run without
	// a readable record has the branches of its namespace only.
	worktree := filepath.Join(r.Dir, sandbox.Dir, "worktrees", e.ID)
	branch := ""
	if rec, err := e.ReadRecord(); err == nil {
		branch = rec.Branch
	} else if e.Summary != nil {
		branch = e.Summary.Branch
	}
	refs, err := r.runRefs(ctx, e.ID, branch)
	if err != nil {
		return finishClean(c, CleanFailed, err.Error(), release())
	}
	for _, ref := range refs {
		c.Branches = append(c.Branches, strings.TrimPrefix(ref, "refs/heads/"))
	}
	_, statErr := os.Lstat(worktree)
	hasTree := statErr == nil
	if hasTree {
		c.Worktree = worktree
	}
	if !hasTree && len(refs) == 0 && !opts.Purge {
		return finishClean(c, CleanNothing, "", release())
	}

	// What would be lost.
	for _, ref := range refs {
		if where, ok := w.checkedOut(ref, worktree); ok {
			return finishClean(c, CleanRefused, fmt.Sprintf("the branch %s is checked out in %s; switch that worktree to another branch first", strings.TrimPrefix(ref, "refs/heads/"), where), release())
		}
	}
	var sb *sandbox.Sandbox
	if hasTree {
		var why string
		if sb, why = r.inspectTree(ctx, &c, e.ID, branch, opts.Force, jail); why != "" {
			return finishClean(c, CleanRefused, why, release())
		}
	}
	for _, ref := range refs {
		commits, err := r.unsaved(ctx, ref, excludes)
		if err != nil {
			return finishClean(c, CleanFailed, fmt.Sprintf("cannot tell whether %s is merged or pushed: %v", ref, err), release())
		}
		if len(commits) > 0 {
			c.Unsaved = append(c.Unsaved, Unsaved{Branch: strings.TrimPrefix(ref, "refs/heads/"), Commits: commits})
		}
	}
	if !opts.Force && (len(c.Unsaved) > 0 || c.Uncommitted > 0) {
		return finishClean(c, CleanRefused, refusal(c), release())
	}
	c.Purged = opts.Purge
	if opts.DryRun {
		return finishClean(c, CleanWouldRemove, "", release())
	}
	if err := r.removeRun(ctx, c, sb); err != nil {
		c.Purged = false
		return finishClean(c, CleanFailed, err.Error(), release())
	}
	if opts.Purge {
		return finishClean(c, CleanRemoved, "", run.Remove())
	}
	return finishClean(c, CleanRemoved, "", release())
}

// cleanRefusal is why a run cannot be cleaned at all.
type cleanRefusal struct {
	action CleanAction
	reason string
}

// lockForClean takes the run's lock (a dry run takes none, and refuses a
// run that is running); refused says why the run is left alone.
func (r *Repo) lockForClean(e Entry, dryRun bool) (run *Run, refused *cleanRefusal) {
	if dryRun {
		if e.State == StateRunning {
			return nil, &cleanRefusal{CleanLive, liveReason(e.ID, e.Holder)}
		}
		return nil, nil
	}
	run, err := r.Registry.Acquire(e.ID)
	var live *LiveError
	switch {
	case errors.As(err, &live):
		return nil, &cleanRefusal{CleanLive, liveReason(e.ID, live.Holder)}
	case errors.Is(err, ErrNotFound):
		return nil, &cleanRefusal{CleanNothing, "the run was removed meanwhile"}
	case err != nil:
		return nil, &cleanRefusal{CleanFailed, err.Error()}
	}
	return run, nil
}

// inspectTree counts, into c, what the run's worktree holds that is not
// on its branch. The worktree and its git store are the coder's: spawn's
// git helper reads them where the coder ran, never spawn as the user.
// why is the refusal when they cannot be read (or were made by an older
// spawn) and force is not given.
func (r *Repo) inspectTree(ctx context.Context, c *Cleaned, id, branch string, force bool, jail *cleanJail) (sb *sandbox.Sandbox, why string) {
	sb, err := sandbox.Open(ctx, r.Git, id, branch, "", jail.exe)
	var st sandbox.Status
	if err == nil {
		st, err = sb.Inspect(ctx, jail.of(ctx, r.env, r.tmpDir, sb))
		err = errors.Join(err, sb.Close())
	}
	switch {
	case sb != nil && sb.Legacy && !force:
		return sb, fmt.Sprintf("%s was made by an older spawn, whose coder could write your repository's git state, and spawn no longer runs git in it; look inside, then pass --force to delete it", c.Worktree)
	case sb != nil && sb.Legacy:
	case err != nil && !force:
		return sb, fmt.Sprintf("cannot read what %s holds (%v); look inside, then pass --force to delete it", c.Worktree, err)
	case err == nil:
		c.Uncommitted = st.Uncommitted
		if st.Unpublished {
			c.Uncommitted++ // commits of the coder's that never reached the branch
		}
	}
	return sb, ""
}

// removeRun removes what c found of a run: its worktree (and git's record
// of a legacy one), then its branches. The run directory is the caller's
// to remove last (it holds the lock).
func (r *Repo) removeRun(ctx context.Context, c Cleaned, sb *sandbox.Sandbox) error {
	var errs []error
	if c.Worktree != "" {
		errs = append(errs, os.RemoveAll(c.Worktree))
		if sb != nil && sb.Legacy {
			if _, err := r.Git.Run(ctx, "worktree", "prune"); err != nil {
				errs = append(errs, fmt.Errorf("prune worktrees: %w", err))
			}
		}
	}
	if len(c.Branches) > 0 {
		if _, err := r.Git.Run(ctx, append([]string{"branch", "--quiet", "-D", "--"}, c.Branches...)...); err != nil {
			errs = append(errs, fmt.Errorf("delete branches: %w", err))
		}
	}
	return errors.Join(errs...)
}

// cleanJail is the jail of the git helper that reads a run's worktree for
// Clean: bubblewrap when it works here (probed once), else none.
type cleanJail struct {
	exe    string
	probed bool
	report isolation.Report
}

func (j *cleanJail) of(ctx context.Context, env []string, tmp string, sb *sandbox.Sandbox) sandbox.Jail {
	if !j.probed {
		j.report, j.probed = isolation.Probe(ctx, env, tmp), true
	}
	return isolation.GitJail(j.report, env, sb)
}

// finishClean sets c's outcome; an error releasing (or removing) the run
// makes it a failure that says so.
func finishClean(c Cleaned, action CleanAction, reason string, releaseErr error) Cleaned {
	c.Action, c.Reason = action, reason
	if releaseErr != nil {
		c.Action = CleanFailed
		if c.Reason != "" {
			c.Reason += "; "
		}
		c.Reason += releaseErr.Error()
	}
	return c
}

// liveReason says which process holds a live run.
func liveReason(id string, h *Holder) string {
	return (&LiveError{ID: id, Holder: h}).Error() + "; stop it first with spawn stop " + id
}

// refusal says what a refused run would lose.
func refusal(c Cleaned) string {
	var parts []string
	for _, u := range c.Unsaved {
		shas := make([]string, 0, min(len(u.Commits), 3))
		for _, cm := range u.Commits[:min(len(u.Commits), 3)] {
			shas = append(shas, cm.SHA[:min(len(cm.SHA), 12)])
		}
		more := ""
		if len(u.Commits) > 3 {
			more = ", ..."
		}
		parts = append(parts, fmt.Sprintf("%s has %s neither merged nor pushed (%s%s)", u.Branch, text.Plural(len(u.Commits), "commit"), strings.Join(shas, ", "), more))
	}
	if c.Uncommitted > 0 {
		parts = append(parts, fmt.Sprintf("%s has %s uncommitted", c.Worktree, text.Plural(c.Uncommitted, "path")))
	}
	todo := "merge or push the work"
	if c.Uncommitted > 0 {
		todo = "commit it in the worktree, then merge or push it"
	}
	return strings.Join(parts, "; ") + "; " + todo + ", or pass --force to drop it"
}

// runRefs are the run's branches that exist, as full ref names: its
// recorded branch and every branch in its namespace refs/heads/spawn/<id>/.
func (r *Repo) runRefs(ctx context.Context, id, branch string) ([]string, error) {
	args := []string{"for-each-ref", "--format=%(refname)", "refs/heads/spawn/" + id + "/"}
	if branch != "" {
		args = append(args, "refs/heads/"+branch)
	}
	out, err := r.Git.Run(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("list the run's branches: %w", err)
	}
	var refs []string
	for _, ref := range strings.Split(out, "\n") {
		// for-each-ref matches a pattern as a prefix up to a slash too:
		// keep only the namespace and the exact branch.
		if ref != "" && (strings.HasPrefix(ref, "refs/heads/spawn/"+id+"/") || ref == "refs/heads/"+branch) && !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	return refs, nil
}

// unsaved lists the commits of ref, oldest first, that no branch (the
// runs' excluded), remote-tracking branch or tag reaches.
func (r *Repo) unsaved(ctx context.Context, ref string, excludes []string) ([]CommitRef, error) {
	args := []string{"log", "--reverse", "--format=%H%x00%s", ref, "--not"}
	for _, p := range excludes {
		args = append(args, "--exclude="+p)
	}
	args = append(args, "--branches", "--tags", "--remotes", "--")
	out, err := r.Git.Run(ctx, args...)
	if err != nil {
		return nil, err
	}
	var commits []CommitRef
	for _, line := range strings.Split(out, "\n") {
		if sha, subject, ok := strings.Cut(line, "\x00"); ok {
			commits = append(commits, CommitRef{SHA: sha, Subject: subject})
		}
	}
	return commits, nil
}
