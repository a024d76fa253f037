package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// The git helper is spawn's own binary run where the coder's processes
// run (in the coder's sandbox, or, without one, with the coder's
// environment): it is the only process that runs git on the coder's store
// and worktree. It reads requests (JSON, one after the other) on stdin
// until stdin closes, and answers each with one JSON line on stdout,
// followed, when the answer says so, by a pack of the coder's new objects
// (git's pack format) in frames (see frameWriter) and a line that says
// whether the pack is whole. spawn imports the pack into the user's
// repository with every object verified. One helper serves a run's saves:
// starting it costs a sandbox and an exec.
//
// HelperArg, as the binary's first argument, makes it the helper: Helper
// is its main (internal/entry dispatches it).
const HelperArg = "__spawn-git-helper"

// Helper is the git helper's main: it answers the requests read from in,
// on out, with its errors on errw, and returns the exit code.
func Helper(in io.Reader, out, errw io.Writer) int {
	return helperMain(in, out, errw)
}

// helperMode is what the helper is asked to do.
type helperMode string

const (
	// modeSave commits what the worktree holds and packs the objects of
	// the store's HEAD that the user's repository lacks.
	modeSave helperMode = "save"
	// modeStatus only reports: the paths that differ from HEAD and the
	// submodule leftovers.
	modeStatus helperMode = "status"
)

// helperRequest is what spawn asks of the helper.
type helperRequest struct {
	Mode    helperMode `json:"mode"`
	Message string     `json:"message,omitempty"` // the commit message, for modeSave
	Name    string     `json:"name,omitempty"`    // the committer, "" for spawn's own
	Email   string     `json:"email,omitempty"`
	Base    string     `json:"base"`      // the run's base commit
	Known   string     `json:"published"` // the last commit the user's repository holds of the run
}

// helperAnswer is what the helper says. It comes from the coder's side
// of the sandbox: spawn treats every field as untrusted (object names are
// checked, the pack is verified, text is data).
type helperAnswer struct {
	HeadRef   string       `json:"head_ref"`  // what the store's HEAD names; "" when detached
	Tip       string       `json:"tip"`       // the commit HEAD is at after the save; "" when none
	Committed string       `json:"committed"` // the commit the helper made, "" when none
	Commits   []git.Commit `json:"commits"`   // the store's commits since Known, oldest first, when Tip moved
	Changed   int          `json:"changed"`   // paths that differed from HEAD
	Leftovers []string     `json:"leftovers"` // work in submodules the commit cannot hold
	Pack      bool         `json:"pack"`      // a pack follows the line
	Removed   []string     `json:"removed"`   // pointers planted in the store that the helper removed
	Error     string       `json:"error,omitempty"`
}

// packEnd is the line that follows a pack's frames: whether the pack is
// whole.
type packEnd struct {
	Error string `json:"error,omitempty"`
}

// helperMain answers requests in the current directory (the worktree)
// until in ends.
func helperMain(in io.Reader, out, errw io.Writer) int {
	dec := json.NewDecoder(in)
	w := bufio.NewWriter(out)
	for {
		var req helperRequest
		if err := dec.Decode(&req); errors.Is(err, io.EOF) {
			return 0
		} else if err != nil {
			fmt.Fprintf(errw, "spawn git helper: read the request: %v\n", err)
			return 2
		}
		if err := answer(context.Background(), req, w, errw); err != nil {
			fmt.Fprintf(errw, "spawn git helper: %v\n", err)
			return 2
		}
	}
}

// answer serves req and writes its answer on w: the line, then, when it
// says so, the pack's frames and the line that ends them. It returns an
// error only when w fails: git's errors are the answer's.
func answer(ctx context.Context, req helperRequest, w *bufio.Writer, errw io.Writer) error {
	ans, pack, err := serve(ctx, req)
	if err != nil {
		ans.Error = err.Error()
	}
	ans.Pack = pack != nil
	if err := writeLine(w, ans); err != nil {
		return err
	}
	if pack != nil {
		frames := &frameWriter{w: w}
		pack.Stdout, pack.Stderr = frames, errw
		var end packEnd
		if _, err := proc.Run(ctx, *pack); err != nil {
			end.Error = fmt.Sprintf("pack the objects: %v", err)
		}
		if frames.err != nil {
			return frames.err
		}
		if err := frames.end(); err != nil {
			return err
		}
		if err := writeLine(w, end); err != nil {
			return err
		}
	}
	return w.Flush()
}

func writeLine(w io.Writer, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}

// maxFrame bounds one frame of a pack.
const maxFrame = 1 << 20

// frameWriter writes a pack as frames: each a 4-byte big-endian length
// and as many bytes, ended by a frame of length 0. The pack's length is
// not known before it is written, and the helper's output goes on after.
type frameWriter struct {
	w   io.Writer
	err error // the first write error
}

func (f *frameWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 && f.err == nil {
		chunk := b[:min(len(b), maxFrame)]
		f.err = f.frame(chunk)
		b = b[len(chunk):]
	}
	if f.err != nil {
		return 0, f.err
	}
	return n, nil
}

func (f *frameWriter) frame(b []byte) error {
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(b)))
	if _, err := f.w.Write(size[:]); err != nil {
		return err
	}
	_, err := f.w.Write(b)
	return err
}

// end writes the frame that ends the pack.
func (f *frameWriter) end() error { return f.frame(nil) }

// store is the coder's git store as the helper runs git on it: named by
// GIT_DIR and GIT_WORK_TREE (never discovered from a .git the coder may
// have replaced), hardened, with no configuration but the store's own.
func store(dir string) (git.Repo, error) {
	gitDir := filepath.Join(dir, ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil {
		return git.Repo{}, fmt.Errorf("the worktree's git store %s is gone: %w", gitDir, err)
	}
	if !fi.IsDir() {
		return git.Repo{}, fmt.Errorf("the worktree's git store %s is not the directory spawn made (it is now a %s)", gitDir, kind(fi))
	}
	env := append(os.Environ(), "GIT_DIR="+gitDir, "GIT_WORK_TREE="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	return git.Repo{Dir: dir, Env: env, Config: git.Hardened}, nil
}

func kind(fi os.FileInfo) string {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return "link"
	case fi.Mode().IsRegular():
		return "file"
	}
	return fi.Mode().Type().String()
}

// serve answers req; pack is the command that writes the pack, nil when
// none is needed.
func serve(ctx context.Context, req helperRequest) (ans helperAnswer, pack *proc.Cmd, err error) {
	dir, err := os.Getwd()
	if err != nil {
		return ans, nil, err
	}
	repo, err := store(dir)
	if err != nil {
		return ans, nil, err
	}
	// A store spawn made is a repository of its own: these files would make
	// git take it for another's worktree and follow them elsewhere.
	for _, name := range []string{"commondir", "gitdir"} {
		p := filepath.Join(dir, ".git", name)
		if _, err := os.Lstat(p); err == nil {
			if err := os.Remove(p); err != nil {
				return ans, nil, fmt.Errorf("remove %s, which the coder planted in its git store: %w", p, err)
			}
			ans.Removed = append(ans.Removed, ".git/"+name)
		}
	}
	st, err := repo.Changes(ctx)
	if err != nil {
		return ans, nil, err
	}
	ans.Changed, ans.Tip = len(st.Paths), st.Head
	ans.HeadRef = headRef(ctx, repo, st.Branch)
	ans.Leftovers = leftovers(ctx, repo)
	if req.Mode != modeSave {
		return ans, nil, nil
	}
	paths := st.Paths
	if req.Mode == modeSave {
		var big []string
		paths, big = withoutBig(dir, paths)
		for _, b := range big {
			ans.Leftovers = append(ans.Leftovers, fmt.Sprintf("%s is larger than %s, which spawn does not commit by itself; it stays in %s", b, sizeText(maxAutoCommit), dir))
		}
	}
	if len(paths) > 0 {
		committer := repo
		if req.Name != "" && req.Email != "" {
			committer.Config = append(append([]string(nil), repo.Config...), "user.name="+req.Name, "user.email="+req.Email)
		}
		sha, err := committer.CommitPaths(ctx, req.Message, st, paths)
		if err != nil {
			return ans, nil, err
		}
		if sha != "" {
			ans.Committed, ans.Tip = sha, sha
		}
	}
	if ans.Tip == "" || ans.Tip == req.Known {
		return ans, nil, nil
	}
	switch {
	case st.Head == req.Known && ans.Committed != "":
		// The coder made no commit of its own: spawn's is the one new.
		subject, _, _ := strings.Cut(strings.TrimSpace(req.Message), "\n")
		ans.Commits = []git.Commit{{SHA: ans.Committed, Subject: subject}}
	default:
		since := req.Known
		if !git.IsOID(since) {
			since = req.Base
		}
		if ans.Commits, err = repo.Log(ctx, since, ans.Tip); err != nil {
			return ans, nil, fmt.Errorf("list the commits: %w", err)
		}
	}
	revs := ans.Tip + "\n"
	for _, have := range []string{req.Known, req.Base} {
		if git.IsOID(have) {
			revs += "^" + have + "\n"
		}
	}
	c := proc.Cmd{Path: "git", Args: append(hardenedArgs(repo), "pack-objects", "--revs", "--stdout", "--thin", "--delta-base-offset", "-q"),
		Dir: dir, Env: repo.Env, Stdin: strings.NewReader(revs)}
	return ans, &c, nil
}

// headRef is the ref the store's HEAD names, "" when it is detached: the
// status's branch when it is a name under refs/heads/, else git's answer.
func headRef(ctx context.Context, repo git.Repo, branch string) string {
	if branch != "" && !strings.HasPrefix(branch, "(") && !strings.HasPrefix(branch, "refs/") {
		return "refs/heads/" + branch
	}
	ref, err := repo.Run(ctx, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		return ""
	}
	return ref
}

// maxAutoCommit is the largest file spawn commits by itself: a bigger one
// is more likely a runaway output than work, and committing it would copy
// it twice more (the coder's store, the user's repository).
const maxAutoCommit = 64 << 20

// withoutBig splits paths into those spawn commits and the files (in dir)
// larger than maxAutoCommit.
func withoutBig(dir string, paths []string) (keep, big []string) {
	for _, p := range paths {
		if fi, err := os.Lstat(filepath.Join(dir, p)); err == nil && fi.Mode().IsRegular() && fi.Size() > maxAutoCommit {
			big = append(big, p)
			continue
		}
		keep = append(keep, p)
	}
	return keep, big
}

func sizeText(n int64) string { return fmt.Sprintf("%dMiB", n>>20) }

func hardenedArgs(r git.Repo) []string {
	var out []string
	for _, kv := range r.Config {
		out = append(out, "-c", kv)
	}
	return out
}

// leftovers lists what the branch's commits cannot hold: files written
// into a submodule folder that is not initialised (git ignores them), and
// uncommitted changes inside an initialised submodule (spawn commits the
// superproject only). Each entry is one sentence naming the submodule.
func leftovers(ctx context.Context, repo git.Repo) []string {
	if _, err := os.Lstat(filepath.Join(repo.Dir, ".gitmodules")); err != nil {
		return nil
	}
	paths, err := gitlinks(ctx, repo)
	if err != nil {
		return []string{fmt.Sprintf("the submodules could not be listed (%v); check them in %s", err, repo.Dir)}
	}
	var out []string
	for _, path := range paths {
		dir := filepath.Join(repo.Dir, path)
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			sub := git.Repo{Dir: dir, Env: withoutGitDir(repo.Env), Config: repo.Config}
			status, err := sub.Run(ctx, "status", "--porcelain")
			if err != nil {
				out = append(out, fmt.Sprintf("the status of the submodule %s could not be read (%v); its changes, if any, stay in %s", path, err, dir))
			} else if status != "" {
				out = append(out, fmt.Sprintf("changes inside the submodule %s are not on the branch (spawn commits the superproject only); they stay in %s", path, dir))
			}
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			out = append(out, fmt.Sprintf("the submodule folder %s could not be read (%v)", path, err))
			continue
		}
		if len(entries) > 0 {
			var names []string
			for _, e := range entries {
				names = append(names, filepath.Join(path, e.Name()))
			}
			out = append(out, fmt.Sprintf("files written into the submodule folder %s, which is not initialised in the sandbox, are not on the branch (git ignores them): %s; they stay in %s", path, strings.Join(names, ", "), dir))
		}
	}
	return out
}

// gitlinks lists the paths of the submodules the index records.
func gitlinks(ctx context.Context, repo git.Repo) ([]string, error) {
	out, err := repo.Run(ctx, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, entry := range strings.Split(out, "\x00") {
		// "160000 <sha> <stage>\t<path>" is a gitlink.
		if meta, path, ok := strings.Cut(entry, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
			paths = append(paths, path)
		}
	}
	return paths, nil
}

// withoutGitDir is env without GIT_DIR and GIT_WORK_TREE: git in a
// submodule finds the submodule's own store.
func withoutGitDir(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GIT_DIR=") && !strings.HasPrefix(kv, "GIT_WORK_TREE=") {
			out = append(out, kv)
		}
	}
	return out
}
