// Package git runs the git CLI for spawn, through the one exec seam.
package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// ErrNotRepo means the directory is not inside a git work tree.
var ErrNotRepo = errors.New("not a git repository")

// Repo is a git work tree: the user's repository or a spawn worktree.
type Repo struct {
	Dir string   // the top of the work tree
	Env []string // the environment git runs with
	// Config is configuration given to every git command of the Repo
	// (-c KEY=VALUE, in order), over the repository's own: Hardened for a
	// repository whose configuration the coder wrote.
	Config []string
	// ObjectFormat is the repository's hash ("sha1" or "sha256") when
	// OpenAt learned it; "" otherwise.
	ObjectFormat string
	// common is the repository's shared .git directory when Open or
	// AddWorktree learned it on the way; CommonDir asks git otherwise.
	common string
}

// Hardened is the configuration under which spawn's git reads a
// repository the coder wrote: no repository-configured program runs (no
// fsmonitor, hooks, external diff, pager, editor, credential helper,
// signing program, transport), no automatic maintenance runs, and nothing
// is fetched. Filters and textconv drivers still run when the repository
// defines them: git cannot turn those off by name, so such git runs only
// where the coder's own processes run (see spawn/sandbox).
var Hardened = []string{
	"core.fsmonitor=false", "core.hooksPath=/dev/null", "core.pager=cat", "core.editor=false", "core.askPass=",
	"core.sshCommand=false", "credential.helper=", "diff.external=", "protocol.allow=never",
	"commit.gpgSign=false", "tag.gpgSign=false", "gc.auto=0", "maintenance.auto=false",
	"core.untrackedCache=false", "status.showUntrackedFiles=all", "submodule.recurse=false",
}

// args is argv after "git": r's Config as -c pairs, then args.
func (r Repo) args(args []string) []string {
	if len(r.Config) == 0 {
		return args
	}
	out := make([]string, 0, 2*len(r.Config)+len(args))
	for _, kv := range r.Config {
		out = append(out, "-c", kv)
	}
	return append(out, args...)
}

// cmd is git with args in r's work tree.
func (r Repo) cmd(args ...string) proc.Cmd {
	return proc.Cmd{Path: "git", Args: r.args(args), Dir: r.Dir, Env: r.Env}
}

// Commit is one commit on a branch.
type Commit struct {
	SHA     string
	Subject string
}

// Open finds the work tree that holds dir.
func Open(ctx context.Context, dir string, env []string) (Repo, error) {
	r, _, err := OpenAt(ctx, dir, env, "")
	return r, err
}

// OpenAt finds the work tree that holds dir and, unless rev is "", the
// commit rev names: sha is "" when it names none. One git process learns
// the top of the work tree, the repository's .git, its object format and
// the commit.
func OpenAt(ctx context.Context, dir string, env []string, rev string) (r Repo, sha string, err error) {
	args, want := []string{"rev-parse", "--show-toplevel", "--git-common-dir", "--show-object-format"}, 3
	if rev != "" {
		args, want = append(args, "--verify", "--quiet", "--end-of-options", rev+"^{commit}"), 4
	}
	out, err := proc.Run(ctx, proc.Cmd{Path: "git", Args: args, Dir: dir, Env: env})
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	var exit *proc.ExitError
	switch {
	case err == nil && len(lines) == want:
	case err == nil:
		return Repo{}, "", fmt.Errorf("git rev-parse in %s printed %q", dir, out)
	case errors.As(err, &exit) && strings.Contains(exit.Stderr, "not a git repository"):
		return Repo{}, "", fmt.Errorf("%s: %w", dir, ErrNotRepo)
	case rev != "" && errors.As(err, &exit) && exit.Code == 1 && len(lines) == 3:
		// The repository is there; rev names no commit.
	default:
		return Repo{}, "", err
	}
	r = Repo{Dir: lines[0], Env: env, ObjectFormat: lines[2], common: from(dir, lines[1])}
	if len(lines) > 3 {
		sha = lines[3]
	}
	return r, sha, nil
}

// Run runs git with args in the work tree and returns its trimmed stdout.
func (r Repo) Run(ctx context.Context, args ...string) (string, error) {
	out, err := proc.Run(ctx, r.cmd(args...))
	return strings.TrimRight(string(out), "\n"), err
}

// Resolve returns the commit sha that ref names; an error if it names none.
func (r Repo) Resolve(ctx context.Context, ref string) (string, error) {
	return r.Run(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
}

// HasCommits reports whether HEAD points at a commit.
func (r Repo) HasCommits(ctx context.Context) bool {
	_, err := r.Resolve(ctx, "HEAD")
	return err == nil
}

// BranchExists reports whether refs/heads/name exists.
func (r Repo) BranchExists(ctx context.Context, name string) bool {
	_, err := r.Run(ctx, "show-ref", "--verify", "--quiet", "refs/heads/"+name)
	return err == nil
}

// ValidBranchName reports whether git accepts name as a branch name.
func (r Repo) ValidBranchName(ctx context.Context, name string) bool {
	_, err := r.Run(ctx, "check-ref-format", "--branch", name)
	return err == nil
}

// CommonDir is the repository's shared .git directory (absolute), the same
// from the main work tree and from every linked worktree.
func (r Repo) CommonDir(ctx context.Context) (string, error) {
	if r.common != "" {
		return r.common, nil
	}
	dir, err := r.Run(ctx, "rev-parse", "--git-common-dir")
	if err != nil {
		return "", err
	}
	return from(r.Dir, dir), nil
}

// GitDir is the work tree's own git directory (absolute): .git/worktrees/<name>
// for a linked worktree, read from the .git file git wrote in it, without
// a git process; git is asked when there is no such file.
func (r Repo) GitDir(ctx context.Context) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.Dir, ".git"))
	if dir, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: "); err == nil && ok && dir != "" {
		return from(r.Dir, dir), nil
	}
	dir, err := r.Run(ctx, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", err
	}
	return filepath.Clean(dir), nil
}

// AddWorktree creates a linked worktree at path on a new branch started at base.
func (r Repo) AddWorktree(ctx context.Context, path, branch, base string) (Repo, error) {
	if _, err := r.Run(ctx, "worktree", "add", "--quiet", "-b", branch, path, base); err != nil {
		return Repo{}, fmt.Errorf("create worktree: %w", err)
	}
	return Repo{Dir: path, Env: r.Env, common: r.common}, nil
}

// Status returns `git status --porcelain` output: empty means clean.
func (r Repo) Status(ctx context.Context) (string, error) {
	return r.Run(ctx, "status", "--porcelain", "--untracked-files=all")
}

// Status is one `git status` of a work tree.
type Status struct {
	// Head is the sha of the commit HEAD names, "" before the first commit.
	Head string
	// Branch is what status calls HEAD's branch: the name under
	// refs/heads/, "(detached)", or, for a HEAD that names a ref elsewhere,
	// that ref or "(null)".
	Branch string
	// Paths differ from HEAD, in the index or the work tree: untracked
	// files one by one (ignored ones not), both paths of a rename. A
	// submodule whose only changes are inside it (its own uncommitted
	// work) is not listed: the superproject has nothing to commit for it.
	Paths []string
	// unsure are the paths whose staging may leave them as HEAD has them:
	// changed in the index and again in the work tree (perhaps back), or
	// unmerged.
	unsure map[string]bool
	// staged are the paths whose change the index already holds as the
	// work tree has it: a change staged and not touched since, a staged
	// deletion, both paths of a staged rename. Staging them again would
	// change nothing, and git add refuses a path that is in neither the
	// index nor the work tree.
	staged map[string]bool
	// untracked are the paths git does not track yet.
	untracked map[string]bool
}

// changes reports whether staging paths surely makes the index differ
// from HEAD: one of them is untracked, deleted, or changed in the index or
// the work tree only.
func (s Status) changes(paths []string) bool {
	for _, p := range paths {
		if !s.unsure[p] {
			return true
		}
	}
	return false
}

// Changes reads the work tree's Status with one `git status
// --porcelain=v2 -z --branch --untracked-files=all`.
func (r Repo) Changes(ctx context.Context) (Status, error) {
	out, err := proc.Run(ctx, r.cmd("status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all"))
	if err != nil {
		return Status{}, fmt.Errorf("read the status: %w", err)
	}
	return parseStatusV2(string(out)), nil
}

// parseStatusV2 reads `git status --porcelain=v2 -z --branch` output:
// NUL-ended entries, "# branch.oid SHA", "1 XY SUB mH mI mW hH hI PATH",
// "2 XY SUB mH mI mW hH hI Xscore PATH" followed by the original path as
// an entry of its own, "u XY SUB m1 m2 m3 mW h1 h2 h3 PATH", "? PATH".
func parseStatusV2(out string) Status {
	var st Status
	entries := strings.Split(out, "\x00")
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if len(e) < 2 {
			continue
		}
		switch e[0] {
		case '#':
			if oid, ok := strings.CutPrefix(e, "# branch.oid "); ok && oid != "(initial)" {
				st.Head = oid
			}
			if name, ok := strings.CutPrefix(e, "# branch.head "); ok {
				st.Branch = name
			}
		case '?':
			st.Paths = append(st.Paths, e[2:])
			st.untracked = mark(st.untracked, e[2:])
		case '1', '2', 'u':
			n := map[byte]int{'1': 9, '2': 10, 'u': 11}[e[0]]
			f := strings.SplitN(e, " ", n)
			if len(f) < n {
				continue
			}
			if e[0] == '2' {
				i++ // the original path: a rename in the index stays staged
				if i < len(entries) && entries[i] != "" {
					st.Paths = append(st.Paths, entries[i])
					st.staged = mark(st.staged, entries[i])
				}
			}
			// SUB is "N..." for a file, "S<c><m><u>" for a submodule: one
			// whose commit did not change has nothing for the superproject.
			if sub := f[2]; len(sub) == 4 && sub[0] == 'S' && sub[1] == '.' && f[1][0] == '.' {
				continue
			}
			st.Paths = append(st.Paths, f[n-1])
			switch xy := f[1]; {
			case e[0] == 'u' || xy[0] != '.' && xy[1] != '.':
				st.unsure = mark(st.unsure, f[n-1])
			case xy[1] == '.':
				st.staged = mark(st.staged, f[n-1])
			}
		}
	}
	return st
}

// mark adds path to set, made on first use, and returns set.
func mark(set map[string]bool, path string) map[string]bool {
	if set == nil {
		set = map[string]bool{}
	}
	set[path] = true
	return set
}

// CommitAll stages everything in the work tree and commits it with msg. It
// returns the new commit's sha, or "" when there was nothing to commit.
// When git knows no identity, the commit is authored as spawn.
func (r Repo) CommitAll(ctx context.Context, msg string) (string, error) {
	st, err := r.Changes(ctx)
	if err != nil || len(st.Paths) == 0 {
		return "", err
	}
	return r.CommitPaths(ctx, msg, st, st.Paths)
}

// CommitPaths stages paths, some of st.Paths, as they are in the work
// tree (changed, new or deleted; taken literally, never as patterns) and
// commits what the index then holds with msg, on top of st.Head, moving
// HEAD (or the branch it names) from st.Head to the new commit by
// compare-and-swap. The commit is authored as git's configuration says,
// never by an identity git guesses (user.useConfigOnly); when the
// configuration has none, it is authored as spawn. It returns the new
// commit's sha, or "" when the index matches HEAD after staging.
//
// After add, a small index (see quickCommit) is committed by one git
// commit; when every path is a tracked file's and paths are all of
// st.Paths, git commit --all stages them itself, and no git add runs. A
// large index is committed by write-tree, commit-tree and update-ref
// instead: git commit stats every file the index lists again (on 50,000
// files, about 90 ms of a save), more than the two processes it saves.
// HEAD's tree is read only when st cannot tell that staging changes
// something.
func (r Repo) CommitPaths(ctx context.Context, msg string, st Status, paths []string) (string, error) {
	if len(paths) == 0 {
		return "", nil
	}
	var stage []string
	untracked := false
	for _, p := range paths {
		if !st.staged[p] {
			stage = append(stage, p)
			untracked = untracked || st.untracked[p]
		}
	}
	gitDir, quick := r.quickCommit(st, paths)
	if quick && !untracked && len(paths) == len(st.Paths) {
		// Every change status listed is to a tracked file: git commit
		// --all stages them itself.
		return r.commitIndex(ctx, gitDir, msg, "--all")
	}
	if len(stage) > 0 {
		add := r.cmd("--literal-pathspecs", "add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul")
		add.Stdin = strings.NewReader(strings.Join(stage, "\x00") + "\x00")
		if _, err := proc.Run(ctx, add); err != nil {
			return "", fmt.Errorf("stage changes: %w", err)
		}
	}
	if quick {
		return r.commitIndex(ctx, gitDir, msg)
	}
	tree, err := r.Run(ctx, "write-tree")
	if err != nil {
		return "", fmt.Errorf("write the tree: %w", err)
	}
	if st.Head != "" && !st.changes(paths) {
		if headTree, err := r.Run(ctx, "rev-parse", "--verify", "--quiet", st.Head+"^{tree}"); err == nil && headTree == tree {
			return "", nil
		}
	}
	msg = cleanMessage(msg)
	args := []string{"commit-tree", tree}
	if st.Head != "" {
		args = append(args, "-p", st.Head)
	}
	out, err := r.asUser(ctx, msg, args...)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	sha := strings.TrimSpace(out)
	if !IsOID(sha) {
		return "", fmt.Errorf("commit: git named %q, which is not a commit", sha)
	}
	subject, _, _ := strings.Cut(msg, "\n")
	update := []string{"update-ref", "-m", "commit: " + subject, "HEAD", sha}
	if st.Head != "" {
		update = append(update, st.Head)
	}
	if _, err := r.Run(ctx, update...); err != nil {
		return "", fmt.Errorf("commit: move HEAD to %s: %w", sha, err)
	}
	return sha, nil
}

// asUser runs git with args (a command that commits, msg on its stdin)
// as the identity git's configuration names, never one git guesses
// (user.useConfigOnly); when the configuration names none, as spawn.
func (r Repo) asUser(ctx context.Context, msg string, args ...string) (string, error) {
	run := func(identity ...string) (string, error) {
		c := r.cmd(append(identity, args...)...)
		c.Stdin = strings.NewReader(msg)
		out, err := proc.Run(ctx, c)
		return string(out), err
	}
	out, err := run("-c", "user.useConfigOnly=true")
	var exit *proc.ExitError
	if err != nil && errors.As(err, &exit) && noIdentity(exit.Stderr) {
		out, err = run("-c", "user.name=spawn", "-c", "user.email=spawn@localhost")
	}
	return out, err
}

// smallIndex is the largest index, in bytes (about 80 a file), that
// CommitPaths commits with one git commit: beyond it, git commit's stat
// of every file costs more than the two processes it saves.
const smallIndex = 256 << 10

// quickCommit says whether one git commit can make CommitPaths' commit
// just as write-tree, commit-tree and update-ref would, and returns the
// repository's .git directory when it can: the work tree's .git is a
// directory with a small index; staging surely changed something (git
// commit refuses to commit nothing, with an error that is not worth
// telling apart from the others); nothing is half done (git commit would
// make a merge of a merge in progress, take a cherry-pick's author, and
// end either); and HEAD is still st.Head, as the files git keeps it in
// say (git commit moves HEAD from whatever HEAD is when it starts).
func (r Repo) quickCommit(st Status, paths []string) (string, bool) {
	if !st.changes(paths) {
		return "", false
	}
	gitDir := filepath.Join(r.Dir, ".git")
	fi, err := os.Lstat(filepath.Join(gitDir, "index"))
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > smallIndex {
		return "", false
	}
	for _, name := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "sequencer"} {
		if _, err := os.Lstat(filepath.Join(gitDir, name)); !errors.Is(err, os.ErrNotExist) {
			return "", false
		}
	}
	return gitDir, headFromFiles(gitDir) == st.Head
}

// commitIndex commits what the index holds with msg by one git commit,
// given flags, and returns the new commit's sha.
func (r Repo) commitIndex(ctx context.Context, gitDir, msg string, flags ...string) (string, error) {
	// Automatic maintenance would start a process of its own after the
	// commit; the message is already as git's clean-up leaves it.
	args := append([]string{"-c", "maintenance.auto=false", "-c", "gc.auto=0",
		"commit", "--quiet", "--no-verify", "--no-gpg-sign", "--allow-empty-message", "--cleanup=verbatim", "--file=-"}, flags...)
	_, err := r.asUser(ctx, cleanMessage(msg), args...)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if sha := headFromFiles(gitDir); sha != "" {
		return sha, nil
	}
	sha, err := r.Resolve(ctx, "HEAD")
	if err != nil || !IsOID(sha) {
		return "", fmt.Errorf("commit: read the new HEAD: %w", errors.Join(err, fmt.Errorf("git named %q", sha)))
	}
	return sha, nil
}

// headFromFiles is the commit HEAD names as gitDir's files say: HEAD
// itself when it is detached, else the loose ref under refs/heads/ it
// names; "" when they do not say (the ref is packed, or unborn, or kept
// some other way, or a file is a link or a pipe: git is asked then).
func headFromFiles(gitDir string) string {
	head := readSmall(filepath.Join(gitDir, "HEAD"))
	if ref, ok := strings.CutPrefix(head, "ref: "); ok {
		if !strings.HasPrefix(ref, "refs/heads/") || strings.Contains(ref, "..") {
			return ""
		}
		head = readSmall(filepath.Join(gitDir, ref))
	}
	if !IsOID(head) {
		return ""
	}
	return head
}

// readSmall is the first line-sized part of the regular file path
// (openRegular), its white space trimmed; "" when it cannot be read.
func readSmall(path string) string {
	f, err := openRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// cleanMessage is msg as git commit -m stores it (its "whitespace"
// clean-up): trailing white space cut from every line, runs of empty
// lines made one, no empty line first or last, and a final newline.
func cleanMessage(msg string) string {
	var out []string
	blank := false
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimRight(line, " \t\r\v\f")
		if line == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

// noIdentity reports whether git commit's stderr says it has no identity
// to commit as.
func noIdentity(stderr string) bool {
	return strings.Contains(stderr, "auto-detection is disabled") || strings.Contains(stderr, "Please tell me who you are") || strings.Contains(stderr, "empty ident name")
}

// Log lists the commits reachable from to and not from from, oldest first.
func (r Repo) Log(ctx context.Context, from, to string) ([]Commit, error) {
	out, err := r.Run(ctx, "log", "--reverse", "--format=%H%x00%s", from+".."+to)
	if err != nil {
		return nil, err
	}
	var commits []Commit
	for _, line := range strings.Split(out, "\n") {
		sha, subject, ok := strings.Cut(line, "\x00")
		if ok {
			commits = append(commits, Commit{SHA: sha, Subject: subject})
		}
	}
	return commits, nil
}

// RemoveWorktree removes the linked worktree at path, uncommitted changes
// and all, and prunes git's record of it.
func (r Repo) RemoveWorktree(ctx context.Context, path string) error {
	if _, err := r.Run(ctx, "worktree", "remove", "--force", path); err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	return nil
}

// DeleteBranch deletes refs/heads/name, merged or not.
func (r Repo) DeleteBranch(ctx context.Context, name string) error {
	if _, err := r.Run(ctx, "branch", "--quiet", "-D", "--", name); err != nil {
		return fmt.Errorf("delete branch: %w", err)
	}
	return nil
}

// from is path as git printed it in dir: absolute, cleaned.
func from(dir, path string) string {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	return filepath.Clean(path)
}
