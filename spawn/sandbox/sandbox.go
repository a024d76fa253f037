// Package sandbox is a run's git worktree: planned and checked before
// anything exists, created on a branch of its own from the base, committed
// to as the agents leave work behind, and removed when a failed set-up must
// leave nothing. The user's working tree, index, HEAD and branches are
// never touched.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
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
	// Found, when it was opened from RepoDir for Base, is taken as it is:
	// Prepare runs no git process to find them again.
	Found *Found
}

// Found is what one git process (git.OpenAt) learnt of the repository
// that holds the directory From and of the commit Ref names.
type Found struct {
	From string // the absolute directory it was opened from
	Ref  string // the base asked for: "HEAD" when none was
	Repo git.Repo
	SHA  string // the commit Ref names; "" when it names none
}

// Find opens the repository that holds the absolute directory dir and
// resolves ref, with one git process.
func Find(ctx context.Context, dir, ref string, env []string) (Found, error) {
	repo, sha, err := git.OpenAt(ctx, dir, env, ref)
	return Found{From: dir, Ref: ref, Repo: repo, SHA: sha}, err
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
	// One rev-parse finds the repository and the base, unless the caller's
	// did; which error it is, is asked only when the base names no commit.
	found := req.Found
	if found == nil || found.From != abs || found.Ref != baseRef {
		f, err := Find(ctx, abs, baseRef, req.Env)
		if errors.Is(err, git.ErrNotRepo) {
			return Plan{}, inputErrorf(err, "%s is not a git repository; run spawn inside one or pass --repo", abs)
		}
		if err != nil {
			return Plan{}, inputErrorf(err, "cannot read the git repository at %s: %v", abs, err)
		}
		found = &f
	}
	repo, base := found.Repo, found.SHA
	if base == "" {
		if baseRef == "HEAD" || !repo.HasCommits(ctx) {
			return Plan{}, inputErrorf(nil, "the repository at %s has no commits yet; make a first commit, then run spawn", repo.Dir)
		}
		return Plan{}, inputErrorf(nil, "the base %q names no commit in %s; pass --base with a branch, tag or sha", baseRef, repo.Dir)
	}
	// A name spawn makes is valid by construction (see slug) and new (it
	// holds the run's id; Create makes the branch only where none is):
	// only the user's is checked.
	branch := req.Branch
	if branch == "" {
		branch = "spawn/" + req.ID + "/" + slug(req.Task)
	} else if !repo.ValidBranchName(ctx, branch) {
		return Plan{}, inputErrorf(nil, "%q is not a valid branch name; pass another --branch", branch)
	} else if repo.BranchExists(ctx, branch) {
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
		// --no-optional-locks: a status in the background never writes
		// the user's index (a git of theirs running meanwhile would find it
		// locked).
		status, err := repo.Run(ctx, "--no-optional-locks", "status", "--porcelain", "--untracked-files=normal")
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

// Sandbox is where the coder works: a worktree with a git store of its
// own (Path/.git, which borrows the user's objects read-only through
// alternates), and the run's branch in the user's repository, which only
// spawn moves, by publishing what the coder's store holds.
//
// Nothing spawn does as the user reads or runs what the coder could
// write: the coder's store, its worktree and every pointer in them
// (.git, HEAD, refs, config, attributes) are read only by spawn's git
// helper, which runs where the coder's processes run (see Jail). Its
// answer is data: the commits it names are imported into the user's
// repository with every object verified, and the run's branch is moved by
// compare-and-swap.
type Sandbox struct {
	Repo   git.Repo // the user's repository
	Path   string   // the worktree; the coder's store is Path/.git
	Branch string
	Base   string // the commit the branch starts from
	// Objects are the user's object directories the coder's store
	// borrows, read-only (the repository's, its alternates', those of the
	// submodules spawn cloned): a sandbox must show them.
	Objects []string
	// Legacy is a worktree an older spawn made: a linked worktree of the
	// user's repository, sharing its refs and objects. Nothing is run in
	// it; it can only be removed.
	Legacy bool
	// Exe is spawn's binary, which runs as the git helper.
	Exe string

	mu        sync.Mutex      // guards published, refs, helper and starting
	published string          // the branch's tip in the user's repository
	refs      *git.RefUpdates // moves the branch in the user's repository
	helper    *helperConn     // the git helper, kept for the next request; nil before the first
	starting  chan struct{}   // closed once the helper Start began is started (or failed); nil when none is
	name      string          // who spawn commits as; "" for spawn itself
	email     string
}

// ErrLegacy means the sandbox is a linked worktree an older spawn made.
var ErrLegacy = errors.New("the sandbox is a linked worktree made by an older spawn, which shares the repository's git state with its coder; spawn no longer runs git in it")

// Jail runs spawn's git helper with no more than the coder's own powers:
// under the coder's sandbox (its view of the files, no network, no
// credential), or, without one, with the coder's environment. Confine
// returns the command that runs c so.
type Jail interface {
	Confine(c proc.Cmd) proc.Cmd
}

// Create makes the worktree, its own store and the run's branch. When it
// fails, nothing it made is left behind. exe is spawn's binary (the git
// helper).
func (p Plan) Create(ctx context.Context, exe string) (sb *Sandbox, err error) {
	if err := excludeSpawnDir(ctx, p.Repo); err != nil {
		return nil, err
	}
	common, err := p.Repo.CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(p.Path), err)
	}
	if err := os.Mkdir(p.Path, 0o755); err != nil {
		return nil, fmt.Errorf("create the worktree %s: %w", p.Path, err)
	}
	sb = &Sandbox{Repo: p.Repo, Path: p.Path, Branch: p.Branch, Base: p.Base, Exe: exe, published: p.Base,
		refs: &git.RefUpdates{Repo: p.Repo, Msg: "spawn: run " + p.ID}}
	defer func() {
		if err != nil {
			err = errors.Join(err, sb.refs.Close(), os.RemoveAll(p.Path))
			sb = nil
		}
	}()
	if sb.Objects, err = objectDirs(filepath.Join(common, "objects")); err != nil {
		return sb, err
	}
	ident := make(chan error, 1)
	go func() {
		var err error
		sb.name, sb.email, err = p.Repo.Identity(ctx)
		ident <- err
	}()
	format := p.Repo.ObjectFormat
	if format == "" {
		format = "sha1"
	}
	init := git.Repo{Dir: filepath.Dir(p.Path), Env: p.Repo.Env}
	_, err = init.Run(ctx, "init", "--quiet", "--template=", "--object-format="+format, "--initial-branch="+p.Branch, p.Path)
	if ierr := <-ident; err == nil {
		err = ierr
	}
	if err != nil {
		return sb, fmt.Errorf("create the coder's git store: %w", err)
	}
	store := filepath.Join(p.Path, ".git")
	if err := writeFile(filepath.Join(store, "objects", "info", "alternates"), strings.Join(sb.Objects, "\n")+"\n"); err != nil {
		return sb, err
	}
	if shallow, err := os.ReadFile(filepath.Join(common, "shallow")); err == nil {
		if err := writeFile(filepath.Join(store, "shallow"), string(shallow)); err != nil {
			return sb, err
		}
	}
	if err := writeFile(filepath.Join(store, filepath.FromSlash("refs/heads/"+p.Branch)), p.Base+"\n"); err != nil {
		return sb, err
	}
	name, email := sb.name, sb.email
	if name == "" || email == "" {
		name, email = "spawn", "spawn@localhost"
	}
	if err := appendFile(filepath.Join(store, "config"), fmt.Sprintf("[user]\n\tname = %s\n\temail = %s\n[gc]\n\tauto = 0\n", quoteConfig(name), quoteConfig(email))); err != nil {
		return sb, err
	}
	// The run's branch is made in your repository while the worktree is
	// checked out: neither reads what the other writes. A checkout that
	// fails takes the branch away again.
	ref, zero := "refs/heads/"+p.Branch, git.ZeroOID(format)
	branched := make(chan error, 1)
	go func() { branched <- sb.refs.Update(ctx, ref, p.Base, zero) }()
	_, err = (git.Repo{Dir: p.Path, Env: p.Repo.Env}).Run(ctx, "reset", "--quiet", "--hard")
	berr := <-branched
	switch {
	case err != nil && berr == nil:
		return sb, errors.Join(fmt.Errorf("check out %s in the worktree: %w", p.Base, err),
			sb.refs.Update(context.WithoutCancel(ctx), ref, zero, p.Base))
	case err != nil:
		return sb, errors.Join(fmt.Errorf("check out %s in the worktree: %w", p.Base, err), berr)
	case berr != nil:
		return sb, fmt.Errorf("create the branch %s: %w", p.Branch, berr)
	}
	return sb, nil
}

// objectDirs is the object directory dir and those it borrows from
// (objects/info/alternates, recursively): the user's own, read before any
// agent ran.
func objectDirs(dir string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		dir = filepath.Clean(dir)
		if seen[dir] || depth > 5 {
			return nil
		}
		seen[dir] = true
		out = append(out, dir)
		b, err := os.ReadFile(filepath.Join(dir, "info", "alternates"))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the repository's alternates: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if !filepath.IsAbs(line) {
				line = filepath.Join(dir, line)
			}
			if err := walk(line, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(dir, 0)
}

// quoteConfig quotes a git config value.
func quoteConfig(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ").Replace(v) + `"`
}

// writeFile writes a file spawn owns in a directory it just made.
func writeFile(path, data string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o644)
}

func appendFile(path, data string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(data)
	return errors.Join(err, f.Close())
}

// Open returns the sandbox of an existing run in the repository at repo
// (its top), worktree <repo>/.spawn/worktrees/<id>, on branch, started
// at base. Every path is spawn's own, derived from id (which the caller
// validated), never read from anything in the worktree: the worktree and
// the folders above it must be real directories (no link), and the
// branch's tip is read from the user's repository. A worktree that is
// gone makes Save fail with ErrGone.
func Open(ctx context.Context, repo git.Repo, id, branch, base, exe string) (*Sandbox, error) {
	path := filepath.Join(repo.Dir, Dir, "worktrees", id)
	sb := &Sandbox{Repo: repo, Path: path, Branch: branch, Base: base, Exe: exe, published: base,
		refs: &git.RefUpdates{Repo: repo, Msg: "spawn: run " + id}}
	for _, p := range []string{filepath.Join(repo.Dir, Dir), filepath.Dir(path), path} {
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is not the directory spawn made (it is now a %s)", p, kind(fi))
		}
	}
	if fi, err := os.Lstat(filepath.Join(path, ".git")); err == nil && fi.Mode().IsRegular() {
		sb.Legacy = true
	}
	common, err := repo.CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	if sb.Objects, err = objectDirs(filepath.Join(common, "objects")); err != nil {
		return nil, err
	}
	if tip, err := repo.Resolve(ctx, "refs/heads/"+branch); err == nil {
		sb.published = tip
	}
	if sb.name, sb.email, err = repo.Identity(ctx); err != nil {
		return nil, err
	}
	return sb, nil
}

// Remove deletes the worktree, its store and the run's branch, whatever
// they hold: it undoes Create when the set-up of a run fails. What does
// not exist is skipped. A link where the worktree was is removed, never
// followed. It closes the sandbox first.
func (s *Sandbox) Remove(ctx context.Context) error {
	errs := []error{s.Close()}
	if _, err := os.Lstat(s.Path); err == nil {
		errs = append(errs, os.RemoveAll(s.Path))
	}
	if s.Legacy {
		if _, err := s.Repo.Run(ctx, "worktree", "prune"); err != nil {
			errs = append(errs, fmt.Errorf("prune worktrees: %w", err))
		}
	}
	if s.Repo.BranchExists(ctx, s.Branch) {
		errs = append(errs, s.Repo.DeleteBranch(ctx, s.Branch))
	}
	return errors.Join(errs...)
}

// gone returns ErrGone, wrapped with where the branch is, when the
// worktree's directory no longer exists.
func (s *Sandbox) gone() error {
	if _, err := os.Lstat(s.Path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s was deleted; the branch %s keeps the commits made before", ErrGone, s.Path, s.Branch)
	}
	return nil
}

// Saved is what Save found and did.
type Saved struct {
	// Own lists the store's commits since the tip Save last published,
	// oldest first (the coder's own commits and spawn's); nil when the tip
	// did not move. The list comes from the coder's side:
	// the subjects are the coder's words.
	Own []git.Commit
	// Committed is the commit Save made of what the worktree held, "" when
	// it held nothing to commit.
	Committed string
	// HeadRef is what the coder's store's HEAD names ("" detached): not
	// the run's branch means the coder pointed it elsewhere.
	HeadRef string
	// Leftovers are sentences about work in submodules that the branch
	// cannot hold.
	Leftovers []string
	// Published is the run's branch's tip in the user's repository after
	// Save.
	Published string
	// Removed are pointers the coder planted in its store (a commondir, a
	// gitdir) that would have led git elsewhere: Save removed them.
	Removed []string
}

// Save is what spawn does after an agent's turn: through jail, its git
// helper commits whatever the worktree holds uncommitted with msg (as the
// user's git identity, else as spawn), and packs the objects of the
// store's tip that the user's repository lacks; Save imports them,
// verified, into the user's repository and moves the run's branch to that
// tip by compare-and-swap. A tip that cannot be verified, or a branch that
// moved behind spawn's back, is an error, and the branch stays where it
// was; the work stays in the worktree and its store.
func (s *Sandbox) Save(ctx context.Context, jail Jail, msg string) (_ Saved, err error) {
	if err := s.gone(); err != nil {
		return Saved{}, err
	}
	if s.Legacy {
		return Saved{}, ErrLegacy
	}
	s.lock()
	defer s.mu.Unlock()
	pack, end := streamImport(ctx, s.Repo)
	ans, err := s.ask(ctx, jail, helperRequest{Mode: modeSave, Message: msg, Name: s.name, Email: s.email, Base: s.Base, Known: s.published}, pack)
	imported := end(err)
	saved := Saved{Committed: ans.Committed, HeadRef: ans.HeadRef, Leftovers: ans.Leftovers, Published: s.published, Removed: ans.Removed}
	if imported != nil && (err == nil || errors.Is(err, imported)) {
		// The import refused the pack (before its end, the helper's write
		// failed with the import's error).
		return saved, fmt.Errorf("the coder's commits could not be verified, so the branch %s stays at %s: %w", s.Branch, s.published, imported)
	}
	if err != nil {
		return saved, err
	}
	if ans.Tip == "" || ans.Tip == s.published {
		return saved, nil
	}
	if err := s.refs.Update(ctx, "refs/heads/"+s.Branch, ans.Tip, s.published); err != nil {
		return saved, fmt.Errorf("the branch %s cannot be moved to the coder's work: %w", s.Branch, err)
	}
	s.published = ans.Tip
	saved.Own, saved.Published = ans.Commits, ans.Tip
	return saved, nil
}

// streamImport is where a save's pack goes: its first bytes start the
// import into repo (git.Repo.ImportPack, which verifies every object),
// and the rest streams into it as the helper sends it, so that your git
// reads the pack while the coder's side still writes it. A save without a
// pack starts nothing. end ends the pack, cut short with cause unless
// cause is nil, and returns the import's error: nil when no pack came. An
// import that refuses the pack before its end fails the helper's next
// write with that same error.
func streamImport(ctx context.Context, repo git.Repo) (pack io.Writer, end func(cause error) error) {
	var w *io.PipeWriter
	var done chan error
	pack = writerFunc(func(b []byte) (int, error) {
		if w == nil {
			var r *io.PipeReader
			r, w = io.Pipe()
			done = make(chan error, 1)
			go func() {
				err := repo.ImportPack(ctx, r)
				r.CloseWithError(cmp.Or(err, errors.New("the pack went on after its end")))
				done <- err
			}()
		}
		return w.Write(b)
	})
	end = func(cause error) error {
		if w == nil {
			return nil
		}
		w.CloseWithError(cause) // nil: the import reads the end of the pack
		return <-done
	}
	return pack, end
}

// writerFunc is a function as an io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// Status is what the worktree holds that the branch does not.
type Status struct {
	// Uncommitted counts the paths that differ from the store's HEAD.
	Uncommitted int
	// Unpublished says the store's HEAD is not the branch's tip.
	Unpublished bool
	// Leftovers are sentences about work in submodules.
	Leftovers []string
}

// Inspect reads, through jail, what the worktree holds that the run's
// branch does not, and changes nothing.
func (s *Sandbox) Inspect(ctx context.Context, jail Jail) (Status, error) {
	if err := s.gone(); err != nil {
		return Status{}, err
	}
	if s.Legacy {
		return Status{}, ErrLegacy
	}
	s.lock()
	defer s.mu.Unlock()
	ans, err := s.ask(ctx, jail, helperRequest{Mode: modeStatus, Base: s.Base, Known: s.published}, nil)
	if err != nil {
		return Status{}, err
	}
	return Status{Uncommitted: ans.Changed, Unpublished: ans.Tip != "" && ans.Tip != s.published, Leftovers: ans.Leftovers}, nil
}

// ask asks the sandbox's git helper, started through jail at the first
// request and kept for the next: a sandbox's requests must all give the
// same jail. A helper that broke is dropped; one that was gone before it
// was asked (it died between two requests) is replaced once.
func (s *Sandbox) ask(ctx context.Context, jail Jail, req helperRequest, packOut io.Writer) (helperAnswer, error) {
	defer proc.Waited(ctx, "git helper", time.Now())
	for retry := true; ; retry = false {
		fresh := s.helper == nil
		if fresh {
			h, err := startHelper(jail, s.Exe, s.Path)
			if err != nil {
				return helperAnswer{}, err
			}
			s.helper = h
		}
		ans, err := s.helper.ask(ctx, req, packOut)
		var broken *brokenError
		if !errors.As(err, &broken) {
			return ans, err
		}
		err = errors.Join(err, s.helper.drop())
		s.helper = nil
		if fresh || !broken.unasked || !retry || ctx.Err() != nil {
			return ans, err
		}
	}
}

// Start begins to start the sandbox's git helper through jail, in the
// background, unless one runs or is starting: a run calls it before the
// coder's first turn, so that the save after it finds the helper ready.
// The next request waits for the start; if it failed, the request starts
// a helper itself and reports what fails then.
func (s *Sandbox) Start(jail Jail) {
	if s.Legacy {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.helper != nil || s.starting != nil {
		return
	}
	done := make(chan struct{})
	s.starting = done
	go func() {
		h, err := startHelper(jail, s.Exe, s.Path)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err == nil {
			s.helper = h
		}
		s.starting = nil
		close(done)
	}()
}

// lock locks s.mu once no helper is starting.
func (s *Sandbox) lock() {
	for {
		s.mu.Lock()
		starting := s.starting
		if starting == nil {
			return
		}
		s.mu.Unlock()
		<-starting
	}
}

// Close stops the sandbox's git helper and the git update-ref that moves
// its branch, if they run; a later request starts another.
func (s *Sandbox) Close() error {
	s.lock()
	defer s.mu.Unlock()
	var errs []error
	if err := s.refs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop the git update-ref that moves %s: %w", s.Branch, err))
	}
	if s.helper != nil {
		err := s.helper.close()
		s.helper = nil
		if err != nil {
			errs = append(errs, fmt.Errorf("stop spawn's git helper in %s: %w", s.Path, err))
		}
	}
	return errors.Join(errs...)
}

// Commits lists the branch's commits since the base, oldest first, from
// the user's repository.
func (s *Sandbox) Commits(ctx context.Context) ([]git.Commit, error) {
	return s.Repo.Log(ctx, s.Base, "refs/heads/"+s.Branch)
}

// Head is the sha of the run's branch's tip: what spawn last published.
func (s *Sandbox) Head(ctx context.Context) (string, error) {
	if err := s.gone(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published, nil
}

// Diff is the change from..to, as `git diff` prints it, read from the
// user's repository (the objects Save verified), with no external diff
// and no textconv.
func (s *Sandbox) Diff(ctx context.Context, from, to string) (string, error) {
	return s.Repo.Run(ctx, "diff", "--no-color", "--no-ext-diff", "--no-textconv", from, to, "--")
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

// slug turns the task's first words into a branch-name fragment: its
// ASCII letters and digits, words joined by dashes, at most maxSlug bytes,
// cut between words (a first word longer than that is cut itself).
func slug(task string) string {
	var words []string
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			words = append(words, word.String())
			word.Reset()
		}
	}
	for _, r := range strings.ToLower(task) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			word.WriteRune(r)
			continue
		}
		flush()
	}
	flush()
	if len(words) == 0 {
		return "task"
	}
	s := words[0]
	if len(s) > maxSlug {
		return s[:maxSlug]
	}
	for _, w := range words[1:] {
		if len(s)+1+len(w) > maxSlug {
			break
		}
		s += "-" + w
	}
	return s
}

// maxSlug bounds the task's part of a branch name.
const maxSlug = 32
