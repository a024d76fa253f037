// Package sandbox is a run's git worktree: planned and checked before
// anything exists, created on a branch of its own from the base, committed
// to as the agents leave work behind, and removed when a failed set-up must
// leave nothing. The user's working tree, index, HEAD and branches are
// never touched.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode"

	"github.com/infinite-improbability-drive/spawn/internal/git"
)

// Dir is spawn's folder at the top of the user's repository; git ignores it
// through .git/info/exclude.
const Dir = ".spawn"

// InputError is a repository, base or branch the user got wrong: nothing
// was created. Msg is one sentence that says what to do.
type InputError struct {
	Msg string
	Err error
}

func (e *InputError) Error() string { return e.Msg }

func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(cause error, format string, args ...any) *InputError {
	return &InputError{Msg: fmt.Sprintf(format, args...), Err: cause}
}

// ErrGone means the sandbox's worktree was deleted under the run.
var ErrGone = errors.New("the sandbox's worktree is gone")

// Request is what a sandbox is planned from.
type Request struct {
	RepoDir string // a directory inside the repository
	Base    string // the ref the branch starts from; "" means HEAD
	Branch  string // the branch; "" means spawn/<id>/<slug>, in a ref namespace of the run's own
	ID      string // the run's id
	Task    string // names the default branch
	Env     []string
}

// Plan is a sandbox checked but not yet created.
type Plan struct {
	Repo   git.Repo // the user's repository
	ID     string
	Branch string
	Base   string // the base commit's sha
	Path   string // where the worktree will be
	dirty  *dirtyCheck
}

// SpawnDir is the repository's .spawn directory.
func (p Plan) SpawnDir() string { return filepath.Join(p.Repo.Dir, Dir) }

// Prepare checks everything a sandbox needs before anything is created. A
// bad repository, base or branch is an *InputError.
func Prepare(ctx context.Context, req Request) (Plan, error) {
	dir := req.RepoDir
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Plan{}, inputErrorf(err, "cannot resolve the repository path %q", dir)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return Plan{}, inputErrorf(err, "%s is not a directory; pass --repo with the path of a git repository", abs)
	}
	baseRef := req.Base
	if baseRef == "" {
		baseRef = "HEAD"
	}
	// One rev-parse finds the repository and the base; which error it is,
	// is asked only when the base names no commit.
	repo, base, err := git.OpenAt(ctx, abs, req.Env, baseRef)
	if errors.Is(err, git.ErrNotRepo) {
		return Plan{}, inputErrorf(err, "%s is not a git repository; run spawn inside one or pass --repo", abs)
	}
	if err != nil {
		return Plan{}, inputErrorf(err, "cannot read the git repository at %s: %v", abs, err)
	}
	if base == "" {
		if baseRef == "HEAD" || !repo.HasCommits(ctx) {
			return Plan{}, inputErrorf(nil, "the repository at %s has no commits yet; make a first commit, then run spawn", repo.Dir)
		}
		return Plan{}, inputErrorf(nil, "the base %q names no commit in %s; pass --base with a branch, tag or sha", baseRef, repo.Dir)
	}
	// A name spawn makes is valid by construction (see slug); only the
	// user's is checked.
	branch := req.Branch
	if branch == "" {
		branch = "spawn/" + req.ID + "/" + slug(req.Task)
	} else if !repo.ValidBranchName(ctx, branch) {
		return Plan{}, inputErrorf(nil, "%q is not a valid branch name; pass another --branch", branch)
	}
	if repo.BranchExists(ctx, branch) {
		return Plan{}, inputErrorf(nil, "the branch %s already exists and a run works on a branch of its own; pass --branch with a new name, or leave --branch out and spawn names one", branch)
	}
	return Plan{
		Repo:   repo,
		ID:     req.ID,
		Branch: branch,
		Base:   base,
		Path:   filepath.Join(repo.Dir, Dir, "worktrees", req.ID),
		dirty:  checkDirty(ctx, repo),
	}, nil
}

// dirtyCheck is a status of the user's repository running in the
// background: it only decides whether a note is printed, so it runs while
// the sandbox is created rather than before.
type dirtyCheck struct {
	done  chan struct{}
	dirty bool
	err   error
}

// checkDirty starts reading whether repo's working tree differs from HEAD
// (untracked files included, untracked folders as one entry each).
// Cancelling ctx stops it.
func checkDirty(ctx context.Context, repo git.Repo) *dirtyCheck {
	c := &dirtyCheck{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		status, err := repo.Run(ctx, "status", "--porcelain", "--untracked-files=normal")
		if err != nil {
			c.err = fmt.Errorf("read the status of %s: %w", repo.Dir, err)
			return
		}
		// spawn's own directory is not the user's change: the run makes it
		// (and excludes it from git) while this status runs.
		for _, line := range strings.Split(status, "\n") {
			if line != "" && !strings.HasPrefix(line, "?? "+Dir+"/") {
				c.dirty = true
			}
		}
	}()
	return c
}

// Dirty reports whether the user's working tree has uncommitted changes,
// which the sandbox will not have. It waits for the check Prepare started;
// the error is that check's (the plan stands: only the note is at stake).
// A Plan that Prepare did not make is clean.
func (p Plan) Dirty() (bool, error) {
	if p.dirty == nil {
		return false, nil
	}
	<-p.dirty.done
	return p.dirty.dirty, p.dirty.err
}

// Sandbox is a git worktree on a branch of its own, where the coder works.
type Sandbox struct {
	Repo   git.Repo // the user's repository
	Tree   git.Repo // the worktree
	Path   string   // the worktree's directory
	Branch string
	Base   string // the commit the branch starts from

	mu   sync.Mutex // guards head and known
	head string     // the branch's tip as Save last saw or made it; "" until then
	// known says head is still the tip: Save set it and nothing ran in the
	// worktree since (see Touch).
	known bool
}

// Create makes the worktree and its branch. When it fails, nothing it made
// is left behind.
func (p Plan) Create(ctx context.Context) (sb *Sandbox, err error) {
	if err := excludeSpawnDir(ctx, p.Repo); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(p.Path), err)
	}
	tree, err := p.Repo.AddWorktree(ctx, p.Path, p.Branch, p.Base)
	if err != nil {
		sb := &Sandbox{Repo: p.Repo, Path: p.Path, Branch: p.Branch}
		return nil, errors.Join(err, sb.Remove(context.WithoutCancel(ctx)))
	}
	return &Sandbox{Repo: p.Repo, Tree: tree, Path: p.Path, Branch: p.Branch, Base: p.Base}, nil
}

// Open returns the sandbox of an existing run: its worktree at path on
// branch, started at base. It checks nothing: a worktree that is gone
// makes the sandbox's methods fail with ErrGone.
func Open(repo git.Repo, path, branch, base string) *Sandbox {
	return &Sandbox{Repo: repo, Tree: git.Repo{Dir: path, Env: repo.Env}, Path: path, Branch: branch, Base: base}
}

// Remove deletes the worktree and its branch, whatever they hold: it undoes
// Create when the set-up of a run fails. What does not exist is skipped.
func (s *Sandbox) Remove(ctx context.Context) error {
	var errs []error
	if _, err := os.Stat(s.Path); err == nil {
		errs = append(errs, s.Repo.RemoveWorktree(ctx, s.Path))
	}
	if _, err := s.Repo.Run(ctx, "worktree", "prune"); err != nil {
		errs = append(errs, fmt.Errorf("prune worktrees: %w", err))
	}
	if s.Repo.BranchExists(ctx, s.Branch) {
		errs = append(errs, s.Repo.DeleteBranch(ctx, s.Branch))
	}
	return errors.Join(errs...)
}

// gone returns ErrGone, wrapped with where the branch is, when the
// worktree's directory no longer exists.
func (s *Sandbox) gone() error {
	if _, err := os.Stat(s.Path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s was deleted; the branch %s keeps the commits made before", ErrGone, s.Path, s.Branch)
	}
	return nil
}

// Commit stages everything in the worktree and commits it with msg. It
// returns the new commit's sha, or "" when there was nothing to commit.
// See Save.
func (s *Sandbox) Commit(ctx context.Context, msg string) (string, error) {
	_, sha, err := s.Save(ctx, msg)
	return sha, err
}

// Save is what spawn does after an agent's turn: it lists the commits the
// agent made itself, then stages everything in the worktree and commits it
// with msg. own is every commit of the branch since the base, oldest first,
// when the tip moved since Save last saw it (the base at first), and nil
// when it did not; sha is Save's new commit, "" when there was nothing to
// commit. When git knows no identity, the commit is authored as spawn.
//
// One status of the worktree decides everything: a turn that changed
// nothing costs that one git process; one that changed files adds exactly
// those paths and commits them (two more: add, commit); the branch's log is
// read only when the agent committed.
func (s *Sandbox) Save(ctx context.Context, msg string) (own []git.Commit, sha string, err error) {
	if err := s.gone(); err != nil {
		return nil, "", err
	}
	st, err := s.Tree.Changes(ctx)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == "" {
		s.head = s.Base
	}
	if st.Head != s.head {
		if own, err = s.Tree.Log(ctx, s.Base, st.Head); err != nil {
			return nil, "", fmt.Errorf("list the branch's commits: %w", err)
		}
		s.head = st.Head
	}
	if len(st.Paths) == 0 {
		s.known = true
		return own, "", nil
	}
	sha, err = s.Tree.CommitPaths(ctx, msg, st.Paths)
	if sha != "" {
		s.head = sha
	}
	s.known = err == nil
	return own, sha, err
}

// Touch says that something other than Save may change the worktree from
// now on (an agent's turn starts): Head asks git again until the next Save.
func (s *Sandbox) Touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known = false
}

// Commits lists the branch's commits since the base, oldest first.
func (s *Sandbox) Commits(ctx context.Context) ([]git.Commit, error) {
	if err := s.gone(); err != nil {
		return nil, err
	}
	return s.Tree.Log(ctx, s.Base, "HEAD")
}

// Head is the sha of the branch's tip: the one Save saw or made when
// nothing touched the worktree since, else git's answer.
func (s *Sandbox) Head(ctx context.Context) (string, error) {
	if err := s.gone(); err != nil {
		return "", err
	}
	s.mu.Lock()
	head, known := s.head, s.known
	s.mu.Unlock()
	if known {
		return head, nil
	}
	return s.Tree.Resolve(ctx, "HEAD")
}

// Diff is the change from..to in the worktree, as `git diff` prints it.
func (s *Sandbox) Diff(ctx context.Context, from, to string) (string, error) {
	if err := s.gone(); err != nil {
		return "", err
	}
	return s.Tree.Run(ctx, "diff", "--no-color", "--no-ext-diff", from, to)
}

// excludeSpawnDir adds /.spawn/ to .git/info/exclude, once.
func excludeSpawnDir(ctx context.Context, repo git.Repo) error {
	common, err := repo.CommonDir(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(common, "info", "exclude")
	const line = "/" + Dir + "/"
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == line {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	prefix := ""
	if len(data) > 0 && data[len(data)-1] != '\n' {
		prefix = "\n"
	}
	_, err = fmt.Fprintf(f, "%s# spawn's sandboxes and run records\n%s\n", prefix, line)
	return errors.Join(err, f.Close())
}

// slug turns the task's first words into a branch-name fragment.
func slug(task string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(task) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= 32 {
				break
			}
			continue
		}
		dash = true
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "task"
	}
	return s
}
