package spawn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/infinite-improbability-drive/spawn/internal/git"
)

// Dir is spawn's folder at the top of the user's repository; git ignores it
// through .git/info/exclude.
const Dir = ".spawn"

// Sandbox is a git worktree on a branch of its own, where the coder works.
// The user's working tree, index, HEAD and branch are never touched.
type Sandbox struct {
	Repo   git.Repo // the user's repository
	Tree   git.Repo // the worktree
	Path   string   // the worktree's directory
	Branch string
	Base   string // the commit the branch starts from
}

// sandboxPlan is a sandbox checked but not yet created.
type sandboxPlan struct {
	repo   git.Repo
	id     string
	branch string
	base   string
	path   string
	dirty  bool
}

// planSandbox checks everything a sandbox needs before anything is created:
// a bad repository, base or branch is an *Error of kind repo.
func planSandbox(ctx context.Context, repoDir, baseRef, branch, id, task string, env []string) (sandboxPlan, error) {
	abs, err := filepath.Abs(repoDir)
	if err != nil {
		return sandboxPlan{}, errorf(KindRepo, err, "cannot resolve the repository path %q", repoDir)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return sandboxPlan{}, errorf(KindRepo, err, "%s is not a directory; pass --repo with the path of a git repository", abs)
	}
	repo, err := git.Open(ctx, abs, env)
	if errors.Is(err, git.ErrNotRepo) {
		return sandboxPlan{}, errorf(KindRepo, err, "%s is not a git repository; run spawn inside one or pass --repo", abs)
	}
	if err != nil {
		return sandboxPlan{}, errorf(KindRepo, err, "cannot read the git repository at %s: %v", abs, err)
	}
	if !repo.HasCommits(ctx) {
		return sandboxPlan{}, errorf(KindRepo, nil, "the repository at %s has no commits yet; make a first commit, then run spawn", repo.Dir)
	}
	if baseRef == "" {
		baseRef = "HEAD"
	}
	base, err := repo.Resolve(ctx, baseRef)
	if err != nil {
		return sandboxPlan{}, errorf(KindRepo, err, "the base %q names no commit in %s; pass --base with a branch, tag or sha", baseRef, repo.Dir)
	}
	if branch == "" {
		branch = "spawn/" + slug(task) + "-" + id
	}
	if !repo.ValidBranchName(ctx, branch) {
		return sandboxPlan{}, errorf(KindRepo, nil, "%q is not a valid branch name; pass another --branch", branch)
	}
	if repo.BranchExists(ctx, branch) {
		return sandboxPlan{}, errorf(KindRepo, nil, "the branch %s already exists; pass another --branch or delete it", branch)
	}
	status, err := repo.Status(ctx)
	if err != nil {
		return sandboxPlan{}, errorf(KindRepo, err, "cannot read the status of %s: %v", repo.Dir, err)
	}
	return sandboxPlan{
		repo:   repo,
		id:     id,
		branch: branch,
		base:   base,
		path:   filepath.Join(repo.Dir, Dir, "worktrees", id),
		dirty:  status != "",
	}, nil
}

// create makes the worktree and its branch.
func (p sandboxPlan) create(ctx context.Context) (*Sandbox, error) {
	if err := excludeSpawnDir(ctx, p.repo); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(p.path), err)
	}
	tree, err := p.repo.AddWorktree(ctx, p.path, p.branch, p.base)
	if err != nil {
		return nil, err
	}
	return &Sandbox{Repo: p.repo, Tree: tree, Path: p.path, Branch: p.branch, Base: p.base}, nil
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

// newID returns a run id: sortable by time, unique by a random suffix.
func newID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
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
