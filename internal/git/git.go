// Package git runs the git CLI for spawn, through the one exec seam.
package git

import (
	"context"
	"errors"
	"fmt"
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
	// Paths differ from HEAD, in the index or the work tree: untracked
	// files one by one (ignored ones not), both paths of a rename. A
	// submodule whose only changes are inside it (its own uncommitted
	// work) is not listed: the superproject has nothing to commit for it.
	Paths []string
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
		case '?':
			st.Paths = append(st.Paths, e[2:])
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
				}
			}
			// SUB is "N..." for a file, "S<c><m><u>" for a submodule: one
			// whose commit did not change has nothing for the superproject.
			if sub := f[2]; len(sub) == 4 && sub[0] == 'S' && sub[1] == '.' && f[1][0] == '.' {
				continue
			}
			st.Paths = append(st.Paths, f[n-1])
		}
	}
	return st
}

// CommitAll stages everything in the work tree and commits it with msg. It
// returns the new commit's sha, or "" when there was nothing to commit.
// When git knows no identity, the commit is authored as spawn.
func (r Repo) CommitAll(ctx context.Context, msg string) (string, error) {
	st, err := r.Changes(ctx)
	if err != nil || len(st.Paths) == 0 {
		return "", err
	}
	return r.CommitPaths(ctx, msg, st.Paths)
}

// CommitPaths stages paths as they are in the work tree (changed, new or
// deleted; taken literally, never as patterns) and commits what the index
// then holds with msg. The commit is authored as git's configuration says,
// never by an identity git guesses (user.useConfigOnly); when the
// configuration has none, the commit is made again, authored as spawn. It
// returns the new commit's sha, or "" when the index matches HEAD after
// staging (the paths held nothing to commit). Two git processes, add and commit, whose summary line gives the
// sha (core.abbrev=no); rev-parse only if that line is not as expected.
func (r Repo) CommitPaths(ctx context.Context, msg string, paths []string) (string, error) {
	if len(paths) == 0 {
		return "", nil
	}
	list := strings.Join(paths, "\x00") + "\x00"
	add := r.cmd("--literal-pathspecs", "add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul")
	add.Stdin = strings.NewReader(list)
	if _, err := proc.Run(ctx, add); err != nil {
		return "", fmt.Errorf("stage changes: %w", err)
	}
	// maintenance.auto=false: a commit of spawn's does not start git's
	// automatic maintenance (a process at every commit, and a repack of the
	// user's repository in the middle of a run when it finds work).
	commit := []string{"-c", "core.abbrev=no", "-c", "maintenance.auto=false", "commit", "--no-verify", "-m", msg}
	out, err := proc.Run(ctx, r.cmd(append([]string{"-c", "user.useConfigOnly=true"}, commit...)...))
	var exit *proc.ExitError
	if err != nil && errors.As(err, &exit) && noIdentity(exit.Stderr) {
		out, err = proc.Run(ctx, r.cmd(append([]string{"-c", "user.name=spawn", "-c", "user.email=spawn@localhost"}, commit...)...))
	}
	if err != nil {
		if errors.As(err, &exit) && nothingToCommit(string(out)+exit.Stderr) {
			return "", nil
		}
		return "", fmt.Errorf("commit: %w", err)
	}
	if sha := summarySHA(string(out)); sha != "" {
		return sha, nil
	}
	return r.Resolve(ctx, "HEAD")
}

// summarySHA is the full sha in the first line of git commit's summary,
// "[branch SHA] subject" (also "[branch (root-commit) SHA] subject"), as
// core.abbrev=no prints it; "" when the line is not of that form.
func summarySHA(out string) string {
	first, _, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(first, "[") {
		return ""
	}
	inside, _, ok := strings.Cut(first[1:], "] ")
	if !ok {
		inside, ok = strings.CutSuffix(first[1:], "]")
		if !ok {
			return ""
		}
	}
	f := strings.Fields(inside)
	if len(f) < 2 {
		return ""
	}
	sha := f[len(f)-1]
	if len(sha) != 40 && len(sha) != 64 {
		return ""
	}
	for _, c := range sha {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
	}
	return sha
}

// noIdentity reports whether git commit's stderr says it has no identity
// to commit as.
func noIdentity(stderr string) bool {
	return strings.Contains(stderr, "auto-detection is disabled") || strings.Contains(stderr, "Please tell me who you are") || strings.Contains(stderr, "empty ident name")
}

// nothingToCommit reports whether git commit's output says the index
// matches HEAD.
func nothingToCommit(out string) bool {
	return strings.Contains(out, "nothing to commit") || strings.Contains(out, "no changes added to commit") || strings.Contains(out, "nothing added to commit")
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
