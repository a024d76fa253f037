package isolation

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Git is what the tamper detector needs of the user's repository: git run
// in its main work tree.
type Git interface {
	Run(ctx context.Context, args ...string) (string, error)
}

// Guard watches what the user relies on in one repository while a run's
// agents work without a sandbox: every ref outside the run's own (Own),
// the main work tree's HEAD, .git/config, the hooks directory, the files
// of .git/info (exclude, attributes, grafts, sparse-checkout) and .git's
// shallow, the pointers of the user's own linked worktrees
// (.git/worktrees/*/{HEAD,commondir,gitdir}), the objects already in the
// store (a loose object or a pack replaced or removed in place), and the
// work tree's status. It never reads what it guards through a git command
// that the guarded files could configure (hooks, fsmonitor) before those
// files are restored.
type Guard struct {
	Git       Git
	CommonDir string // the repository's .git
	// Own reports whether a ref belongs to the run (its branch, and the
	// namespace the branch lives in): those may move.
	Own func(ref string) bool
}

// Snapshot is the guarded state at one moment.
type Snapshot struct {
	refs    map[string]string     // ref -> object id
	head    []byte                // the HEAD file
	config  []byte                // .git/config
	hooks   map[string]file       // path relative to the hooks directory -> content
	files   map[string][]byte     // other guarded files, relative to .git (nil: absent)
	objects map[string]objectFile // objects/ file -> what it was
	status  string                // the main work tree's status
}

// objectFile is an object store's file as stat saw it.
type objectFile struct {
	size  int64
	mtime int64
	ino   uint64
}

type file struct {
	data []byte
	mode fs.FileMode
}

// Change is one difference between two snapshots: what changed, and
// whether the guard put it back.
type Change struct {
	What     string // e.g. "refs/heads/main moved from 1a2b3c to 4d5e6f"
	Restored bool
	// Tree marks a change of the user's work tree: the user may have made
	// it during the run, and spawn never undoes it.
	Tree bool
}

// safeGit are options for every git command the guard runs: the user's
// hooks and fsmonitor are not run even if an agent configured them.
var safeGit = []string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"}

// Take snapshots the guarded state.
func (g Guard) Take(ctx context.Context) (Snapshot, error) {
	s := Snapshot{refs: map[string]string{}, hooks: map[string]file{}}
	var err error
	if s.head, err = os.ReadFile(filepath.Join(g.CommonDir, "HEAD")); err != nil {
		return s, fmt.Errorf("snapshot HEAD: %w", err)
	}
	if s.config, err = os.ReadFile(filepath.Join(g.CommonDir, "config")); err != nil {
		return s, fmt.Errorf("snapshot .git/config: %w", err)
	}
	if s.hooks, err = readHooks(filepath.Join(g.CommonDir, "hooks")); err != nil {
		return s, err
	}
	if s.refs, err = g.refs(ctx); err != nil {
		return s, err
	}
	if s.files, err = g.guardedFiles(); err != nil {
		return s, err
	}
	if s.objects, err = objectFiles(filepath.Join(g.CommonDir, "objects")); err != nil {
		return s, err
	}
	if s.status, err = g.Git.Run(ctx, append(safeGit, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none")...); err != nil {
		return s, fmt.Errorf("snapshot the work tree's status: %w", err)
	}
	return s, nil
}

func (g Guard) refs(ctx context.Context) (map[string]string, error) {
	out, err := g.Git.Run(ctx, append(safeGit, "for-each-ref", "--format=%(refname) %(objectname)")...)
	if err != nil {
		return nil, fmt.Errorf("snapshot refs: %w", err)
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		ref, sha, ok := strings.Cut(line, " ")
		if ok && !g.Own(ref) {
			refs[ref] = sha
		}
	}
	return refs, nil
}

// guardedFiles reads the files of .git that are neither config, HEAD
// nor hooks but steer git all the same, by their path relative to .git; a
// file that does not exist is there with a nil content.
func (g Guard) guardedFiles() (map[string][]byte, error) {
	names := []string{"info/exclude", "info/attributes", "info/grafts", "info/sparse-checkout", "shallow", "commondir"}
	if wts, err := os.ReadDir(filepath.Join(g.CommonDir, "worktrees")); err == nil {
		for _, wt := range wts {
			for _, f := range []string{"HEAD", "commondir", "gitdir"} {
				names = append(names, filepath.Join("worktrees", wt.Name(), f))
			}
		}
	}
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(g.CommonDir, n))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("snapshot .git/%s: %w", n, err)
		}
		out[n] = b
	}
	return out, nil
}

// objectFiles stats the loose objects and packs of an object store.
func objectFiles(dir string) (map[string]objectFile, error) {
	out := map[string]objectFile{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(dir, p); rel == "info" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		of := objectFile{size: info.Size(), mtime: info.ModTime().UnixNano()}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			of.ino = st.Ino
		}
		out[rel] = of
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot the objects: %w", err)
	}
	return out, nil
}

// looseObjectIntact reports whether the loose object at name (xx/yyyy...)
// in the object store dir still holds the object its name says: its
// content, inflated, hashes to the name. Any other file counts as intact.
func looseObjectIntact(dir, name string) bool {
	sub, rest, ok := strings.Cut(filepath.ToSlash(name), "/")
	id := sub + rest
	if !ok || len(sub) != 2 || (len(id) != 40 && len(id) != 64) {
		return true
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return false
	}
	defer f.Close()
	z, err := zlib.NewReader(f)
	if err != nil {
		return false
	}
	h := sha1.New()
	if len(id) == 64 {
		h = sha256.New()
	}
	if _, err := io.Copy(h, z); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == id
}

func readHooks(dir string) (map[string]file, error) {
	hooks := map[string]file{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == dir {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		var data []byte
		if info.Mode().Type() == fs.ModeSymlink {
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			data = []byte(target)
		} else if data, err = os.ReadFile(path); err != nil {
			return err
		}
		hooks[rel] = file{data: data, mode: info.Mode()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot hooks: %w", err)
	}
	return hooks, nil
}

// Check compares the state now with before and undoes what it safely can:
// .git/config, HEAD and the hooks are rewritten from before (first, so that
// no git command runs a hook or fsmonitor an agent planted), then every
// ref outside the run's own that moved, appeared or vanished is put back.
// A change to the user's work tree is reported, never touched. The changes
// are sorted; err reports what could not be read or restored.
func (g Guard) Check(ctx context.Context, before Snapshot) ([]Change, error) {
	c := &check{g: g, before: before}
	c.files()
	c.objects()
	c.hooks()
	if err := c.refs(ctx); err != nil {
		return sorted(c.changes), errors.Join(append(c.errs, err)...)
	}
	c.tree(ctx)
	return sorted(c.changes), errors.Join(c.errs...)
}

// check is one Guard.Check: the changes found since before, and what
// could not be read or restored.
type check struct {
	g       Guard
	before  Snapshot
	changes []Change
	errs    []error
}

// change notes a change; restored says it was undone, err why it was not.
func (c *check) change(what string, err error) {
	if err != nil {
		c.errs = append(c.errs, err)
	}
	c.changes = append(c.changes, Change{What: what, Restored: err == nil})
}

// restore rewrites the git directory's file name from old when it
// changed.
func (c *check) restore(what, name string, old []byte) {
	path := filepath.Join(c.g.CommonDir, name)
	now, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.errs = append(c.errs, fmt.Errorf("read %s: %w", path, err))
		return
	}
	if bytes.Equal(now, old) {
		return
	}
	if err = os.WriteFile(path, old, 0o644); err != nil {
		err = fmt.Errorf("restore %s: %w", path, err)
	}
	c.change(what+" was changed", err)
}

// files puts back .git/config, HEAD and the files of .git/info, and
// removes such a file an agent created.
func (c *check) files() {
	c.restore(".git/config", "config", c.before.config)
	c.restore("HEAD of the main work tree", "HEAD", c.before.head)
	for name, old := range c.before.files {
		if old != nil {
			c.restore(".git/"+name, name, old)
			continue
		}
		path := filepath.Join(c.g.CommonDir, name)
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		err := os.Remove(path)
		if err != nil {
			err = fmt.Errorf("remove %s: %w", path, err)
		}
		c.change(".git/"+name+" was created", err)
	}
}

// objects reports an object file deleted, replaced or changed in place;
// git cannot undo that (run git fsck).
func (c *check) objects() {
	dir := filepath.Join(c.g.CommonDir, "objects")
	objects, err := objectFiles(dir)
	if err != nil {
		c.errs = append(c.errs, err)
	}
	for name, old := range c.before.objects {
		now, ok := objects[name]
		switch {
		case objects == nil:
		case !ok:
			c.changes = append(c.changes, Change{What: fmt.Sprintf("the object store's %s was deleted", name)})
		case now.size != old.size || now.ino != old.ino:
			c.changes = append(c.changes, Change{What: fmt.Sprintf("the object store's %s was replaced (run git fsck)", name)})
		case now.mtime != old.mtime && !looseObjectIntact(dir, name):
			// git itself touches an object it finds again (freshening): a
			// loose object whose time changed is checked against its name.
			c.changes = append(c.changes, Change{What: fmt.Sprintf("the object store's %s was changed in place (run git fsck)", name)})
		}
	}
}

// hooks puts back every hook added, changed or deleted.
func (c *check) hooks() {
	hooksDir := filepath.Join(c.g.CommonDir, "hooks")
	now, err := readHooks(hooksDir)
	if err != nil {
		c.errs = append(c.errs, err)
	}
	for name, f := range now {
		old, ok := c.before.hooks[name]
		if ok && bytes.Equal(old.data, f.data) && old.mode == f.mode {
			continue
		}
		path := filepath.Join(hooksDir, name)
		err := os.Remove(path)
		if err == nil && ok {
			err = writeHook(path, old)
		}
		if err != nil {
			err = fmt.Errorf("restore the hook %s: %w", path, err)
		}
		verb := "was added"
		if ok {
			verb = "was changed"
		}
		c.change(fmt.Sprintf("the hook .git/hooks/%s %s", name, verb), err)
	}
	for name, old := range c.before.hooks {
		if _, ok := now[name]; ok {
			continue
		}
		path := filepath.Join(hooksDir, name)
		err := writeHook(path, old)
		if err != nil {
			err = fmt.Errorf("restore the hook %s: %w", path, err)
		}
		c.change(fmt.Sprintf("the hook .git/hooks/%s was deleted", name), err)
	}
}

// refs puts back every ref outside the run's own that moved, appeared or
// vanished. The error says the refs could not be read.
func (c *check) refs(ctx context.Context) error {
	refs, err := c.g.refs(ctx)
	if err != nil {
		return err
	}
	undo := func(what string, doing string, args ...string) {
		_, err := c.g.Git.Run(ctx, append(safeGit, append([]string{"update-ref"}, args...)...)...)
		if err != nil {
			err = fmt.Errorf("%s: %w", doing, err)
		}
		c.change(what, err)
	}
	for ref, sha := range refs {
		old, ok := c.before.refs[ref]
		switch {
		case ok && old == sha:
		case ok:
			undo(fmt.Sprintf("%s moved from %s to %s", ref, short(old), short(sha)), "move "+ref+" back",
				"-m", "spawn: undo a sandbox's change", "--end-of-options", ref, old, sha)
		default:
			undo(fmt.Sprintf("%s was created at %s", ref, short(sha)), "delete "+ref, "-d", "--end-of-options", ref, sha)
		}
	}
	for ref, old := range c.before.refs {
		if _, ok := refs[ref]; !ok {
			undo(fmt.Sprintf("%s was deleted (it was at %s)", ref, short(old)), "restore "+ref,
				"-m", "spawn: undo a sandbox's change", "--end-of-options", ref, old, "")
		}
	}
	return nil
}

// tree reports a change to the user's work tree, never touched.
func (c *check) tree(ctx context.Context) {
	status, err := c.g.Git.Run(ctx, append(safeGit, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none")...)
	switch {
	case err != nil:
		c.errs = append(c.errs, fmt.Errorf("read the work tree's status: %w", err))
	case status != c.before.status:
		c.changes = append(c.changes, Change{What: fmt.Sprintf("the user's work tree changed (status before: %q, after: %q)", c.before.status, status), Tree: true})
	}
}

func writeHook(path string, f file) error {
	if f.mode.Type() == fs.ModeSymlink {
		return os.Symlink(string(f.data), path)
	}
	if err := os.WriteFile(path, f.data, f.mode.Perm()); err != nil {
		return err
	}
	return os.Chmod(path, f.mode.Perm())
}

func sorted(cs []Change) []Change {
	sort.Slice(cs, func(i, j int) bool { return cs[i].What < cs[j].What })
	return cs
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
