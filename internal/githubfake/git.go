package githubfake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// bareRepo runs the git CLI against one bare repository. Results that
// depend only on object ids (diffs between two commits) are cached: they
// cannot change.
type bareRepo struct {
	dir string

	mu    sync.Mutex
	cache map[string]any
}

// gitEnv isolates the fake's git from the developer's configuration (a
// global diff.noprefix or color.ui=always would change what it parses).
func gitEnv() []string {
	env := os.Environ()
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	)
}

// git runs one git command in the bare repository and returns its stdout.
// A failure carries git's stderr.
func (r *bareRepo) git(ctx context.Context, args ...string) ([]byte, error) {
	return runGit(ctx, r.dir, nil, nil, args...)
}

func runGit(ctx context.Context, gitDir string, extraEnv []string, stdin []byte, args ...string) ([]byte, error) {
	full := append([]string{"--git-dir=" + gitDir, "-c", "core.quotePath=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(gitEnv(), extraEnv...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// initBare creates the bare repository with HEAD on defaultBranch.
func initBare(ctx context.Context, dir, defaultBranch string) (*bareRepo, error) {
	cmd := exec.CommandContext(ctx, "git", "init", "--quiet", "--bare", "--initial-branch="+defaultBranch, dir)
	cmd.Env = gitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init --bare %s: %w: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return &bareRepo{dir: dir, cache: map[string]any{}}, nil
}

// seedFrom copies every branch and tag of the local repository at path.
// It fetches from the bare side, so no hook of the local repository runs
// and nothing in it changes.
func (r *bareRepo) seedFrom(ctx context.Context, path string) error {
	_, err := r.git(ctx, "fetch", "--quiet", "--no-write-fetch-head", path,
		"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
	return err
}

// seedInitial makes one commit holding README.md on branch.
func (r *bareRepo) seedInitial(ctx context.Context, branch, readme string, when time.Time) error {
	blob, err := runGit(ctx, r.dir, nil, []byte(readme), "hash-object", "-w", "--stdin")
	if err != nil {
		return err
	}
	tree, err := runGit(ctx, r.dir, nil, []byte("100644 blob "+strings.TrimSpace(string(blob))+"\tREADME.md\n"), "mktree")
	if err != nil {
		return err
	}
	date := strconv.FormatInt(when.Unix(), 10) + " +0000"
	env := []string{
		"GIT_AUTHOR_NAME=githubfake", "GIT_AUTHOR_EMAIL=githubfake@example.invalid", "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=githubfake", "GIT_COMMITTER_EMAIL=githubfake@example.invalid", "GIT_COMMITTER_DATE=" + date,
	}
	commit, err := runGit(ctx, r.dir, env, nil, "commit-tree", strings.TrimSpace(string(tree)), "-m", "Initial commit")
	if err != nil {
		return err
	}
	_, err = r.git(ctx, "update-ref", "refs/heads/"+branch, strings.TrimSpace(string(commit)))
	return err
}

// branches returns every branch and the commit it points at. git is asked
// again only when a ref file changed: git updates a ref by renaming a lock
// file over it, so a push always changes the stamp of refs/heads or of
// packed-refs.
func (r *bareRepo) branches(ctx context.Context) (map[string]string, error) {
	stamp, err := r.refsStamp()
	if err != nil {
		return nil, err
	}
	if v, ok := r.cached("branches " + stamp); ok {
		return v.(map[string]string), nil
	}
	out, err := r.git(ctx, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	defer r.store("branches "+stamp, m)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		sha, ref, ok := strings.Cut(line, " ")
		if ok {
			m[strings.TrimPrefix(ref, "refs/heads/")] = sha
		}
	}
	return m, nil
}

// refsStamp summarises the names, sizes and modification times of the
// branch ref files and packed-refs.
func (r *bareRepo) refsStamp() (string, error) {
	var b strings.Builder
	stat := func(path string, info fs.FileInfo) {
		fmt.Fprintf(&b, "%s %d %d\n", path, info.Size(), info.ModTime().UnixNano())
	}
	if info, err := os.Stat(filepath.Join(r.dir, "packed-refs")); err == nil {
		stat("packed-refs", info)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	err := filepath.WalkDir(filepath.Join(r.dir, "refs", "heads"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		stat(path, info)
		return nil
	})
	return b.String(), err
}

// resolveCommit returns the full id of the commit rev names, and false
// when there is no such commit.
func (r *bareRepo) resolveCommit(ctx context.Context, rev string) (string, bool, error) {
	if strings.HasPrefix(rev, "-") || rev == "" {
		return "", false, nil
	}
	// A commit, once there, stays: full ids are cached.
	if v, ok := r.cached("commit " + rev); ok {
		return v.(string), true, nil
	}
	cmd := exec.CommandContext(ctx, "git", "--git-dir="+r.dir, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	cmd.Env = gitEnv()
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("git rev-parse %s: %w", rev, err)
	}
	sha := strings.TrimSpace(string(out))
	if sha == rev {
		r.store("commit "+rev, sha)
	}
	return sha, true, nil
}

// mergeBase returns the best common ancestor of a and b ("" if none).
func (r *bareRepo) mergeBase(ctx context.Context, a, b string) (string, error) {
	key := "merge-base " + a + " " + b
	if v, ok := r.cached(key); ok {
		return v.(string), nil
	}
	cmd := exec.CommandContext(ctx, "git", "--git-dir="+r.dir, "merge-base", a, b)
	cmd.Env = gitEnv()
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		r.store(key, "")
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("git merge-base %s %s: %w", a, b, err)
	}
	base := strings.TrimSpace(string(out))
	r.store(key, base)
	return base, nil
}

// isAncestor reports whether commit a is reachable from b.
func (r *bareRepo) isAncestor(ctx context.Context, a, b string) (bool, error) {
	key := "is-ancestor " + a + " " + b
	if v, ok := r.cached(key); ok {
		return v.(bool), nil
	}
	cmd := exec.CommandContext(ctx, "git", "--git-dir="+r.dir, "merge-base", "--is-ancestor", a, b)
	cmd.Env = gitEnv()
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		r.store(key, false)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("git merge-base --is-ancestor %s %s: %w", a, b, err)
	}
	r.store(key, true)
	return true, nil
}

// mergesCleanly reports whether head merges into base without conflicts.
func (r *bareRepo) mergesCleanly(ctx context.Context, base, head string) (bool, error) {
	key := "merge-tree " + base + " " + head
	if v, ok := r.cached(key); ok {
		return v.(bool), nil
	}
	cmd := exec.CommandContext(ctx, "git", "--git-dir="+r.dir, "merge-tree", "--write-tree", "--no-messages", base, head)
	cmd.Env = gitEnv()
	err := cmd.Run()
	var exit *exec.ExitError
	clean := true
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		clean = false
	case err != nil:
		return false, fmt.Errorf("git merge-tree %s %s: %w", base, head, err)
	}
	r.store(key, clean)
	return clean, nil
}

// diffArgs are the options of every diff the fake computes: GitHub shows
// renames and three lines of context.
var diffArgs = []string{"--no-color", "--no-ext-diff", "--find-renames", "--full-index", "--unified=3", "--src-prefix=a/", "--dst-prefix=b/"}

// diff returns the files changed between the two commits, with hunks.
func (r *bareRepo) diff(ctx context.Context, from, to string) ([]*fileDiff, error) {
	key := "diff " + from + " " + to
	if v, ok := r.cached(key); ok {
		return v.([]*fileDiff), nil
	}
	// --unified would add the patch to the raw listing: the raw call
	// takes the other options only.
	raw, err := r.git(ctx, "diff", "--raw", "-z", "--no-color", "--no-ext-diff", "--find-renames", "--full-index", from, to)
	if err != nil {
		return nil, err
	}
	patch, err := r.git(ctx, append([]string{"diff"}, append(diffArgs, from, to)...)...)
	if err != nil {
		return nil, err
	}
	files, err := parseDiff(raw, patch)
	if err != nil {
		return nil, fmt.Errorf("diff %s %s: %w", from, to, err)
	}
	r.store(key, files)
	return files, nil
}

// diffText is the unified diff between the two commits, as GitHub serves
// it for application/vnd.github.diff.
func (r *bareRepo) diffText(ctx context.Context, from, to string) ([]byte, error) {
	return r.git(ctx, append([]string{"diff"}, append(diffArgs, from, to)...)...)
}

// formatPatch is the mbox series for application/vnd.github.patch.
func (r *bareRepo) formatPatch(ctx context.Context, from, to string) ([]byte, error) {
	return r.git(ctx, "format-patch", "--stdout", "--no-color", from+".."+to)
}

// fileHunks returns the zero-context hunks of path between two commits:
// what moved or changed a commented line.
func (r *bareRepo) fileHunks(ctx context.Context, from, to, path string) ([]hunkRange, error) {
	key := "hunks " + from + " " + to + " " + path
	if v, ok := r.cached(key); ok {
		return v.([]hunkRange), nil
	}
	out, err := r.git(ctx, "diff", "--no-color", "--no-ext-diff", "--unified=0", from, to, "--", path)
	if err != nil {
		return nil, err
	}
	var hs []hunkRange
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "@@ ") {
			continue
		}
		h, err := parseHunkHeader(line)
		if err != nil {
			return nil, err
		}
		hs = append(hs, hunkRange{oldStart: h.oldStart, oldCount: h.oldCount, newStart: h.newStart, newCount: h.newCount})
	}
	r.store(key, hs)
	return hs, nil
}

// commitInfo is what the REST commit object needs from git.
type commitInfo struct {
	sha, tree                  string
	parents                    []string
	authorName, authorEmail    string
	authorDate                 time.Time
	committerName, commitEmail string
	committerDate              time.Time
	message                    string
}

// commits lists the commits reachable from head and not from base, oldest
// first, at most limit.
func (r *bareRepo) commits(ctx context.Context, base, head string, limit int) ([]commitInfo, error) {
	key := fmt.Sprintf("log %s %s %d", base, head, limit)
	if v, ok := r.cached(key); ok {
		return v.([]commitInfo), nil
	}
	out, err := r.git(ctx, "log", "--reverse", "-z", "--format=%H%x1f%T%x1f%P%x1f%an%x1f%ae%x1f%at%x1f%cn%x1f%ce%x1f%ct%x1f%B", base+".."+head)
	if err != nil {
		return nil, err
	}
	var cs []commitInfo
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\x1f", 10)
		if len(f) != 10 {
			return nil, fmt.Errorf("git log: unexpected record %q", rec)
		}
		at, err := strconv.ParseInt(f[5], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("git log: author date: %w", err)
		}
		ct, err := strconv.ParseInt(f[8], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("git log: committer date: %w", err)
		}
		c := commitInfo{sha: f[0], tree: f[1], authorName: f[3], authorEmail: f[4], authorDate: time.Unix(at, 0).UTC(),
			committerName: f[6], commitEmail: f[7], committerDate: time.Unix(ct, 0).UTC(), message: strings.TrimRight(f[9], "\n")}
		if f[2] != "" {
			c.parents = strings.Fields(f[2])
		}
		cs = append(cs, c)
		if len(cs) == limit {
			break
		}
	}
	r.store(key, cs)
	return cs, nil
}

func (r *bareRepo) cached(key string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.cache[key]
	return v, ok
}

func (r *bareRepo) store(key string, v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cache[key] = v
}
