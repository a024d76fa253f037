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
	var changes []Change
	var errs []error
	restore := func(what, name string, old []byte) {
		path := filepath.Join(g.CommonDir, name)
		now, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("read %s: %w", path, err))
			return
		}
		if bytes.Equal(now, old) {
			return
		}
		err = os.WriteFile(path, old, 0o644)
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", path, err))
		}
		changes = append(changes, Change{What: what + " was changed", Restored: err == nil})
	}
	restore(".git/config", "config", before.config)
	restore("HEAD of the main work tree", "HEAD", before.head)
	for name, old := range before.files {
		path := filepath.Join(g.CommonDir, name)
		if old == nil {
			if _, err := os.Lstat(path); err == nil {
				err = os.Remove(path)
				if err != nil {
					errs = append(errs, fmt.Errorf("remove %s: %w", path, err))
				}
				changes = append(changes, Change{What: ".git/" + name + " was created", Restored: err == nil})
			}
			continue
		}
		restore(".git/"+name, name, old)
	}
	objects, err := objectFiles(filepath.Join(g.CommonDir, "objects"))
	if err != nil {
		errs = append(errs, err)
	}
	for name, old := range before.objects {
		now, ok := objects[name]
		switch {
		case objects == nil:
		case !ok:
			changes = append(changes, Change{What: fmt.Sprintf("the object store's %s was deleted", name)})
		case now.size != old.size || now.ino != old.ino:
			changes = append(changes, Change{What: fmt.Sprintf("the object store's %s was replaced (run git fsck)", name)})
		case now.mtime != old.mtime && !looseObjectIntact(filepath.Join(g.CommonDir, "objects"), name):
			// git itself touches an object it finds again (freshening): a
			// loose object whose time changed is checked against its name.
			changes = append(changes, Change{What: fmt.Sprintf("the object store's %s was changed in place (run git fsck)", name)})
		}
	}

	hooksDir := filepath.Join(g.CommonDir, "hooks")
	now, err := readHooks(hooksDir)
	if err != nil {
		errs = append(errs, err)
	}
	for name, f := range now {
		old, ok := before.hooks[name]
		if ok && bytes.Equal(old.data, f.data) && old.mode == f.mode {
			continue
		}
		path := filepath.Join(hooksDir, name)
		err := os.Remove(path)
		if err == nil && ok {
			err = writeHook(path, old)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restore the hook %s: %w", path, err))
		}
		verb := "was added"
		if ok {
			verb = "was changed"
		}
		changes = append(changes, Change{What: fmt.Sprintf("the hook .git/hooks/%s %s", name, verb), Restored: err == nil})
	}
	for name, old := range before.hooks {
		if _, ok := now[name]; ok {
			continue
		}
		path := filepath.Join(hooksDir, name)
		err := writeHook(path, old)
		if err != nil {
			errs = append(errs, fmt.Errorf("restore the hook %s: %w", path, err))
		}
		changes = append(changes, Change{What: fmt.Sprintf("the hook .git/hooks/%s was deleted", name), Restored: err == nil})
	}

	refs, err := g.refs(ctx)
	if err != nil {
		return sorted(changes), errors.Join(append(errs, err)...)
	}
	for ref, sha := range refs {
		old, ok := before.refs[ref]
		switch {
		case ok && old == sha:
			continue
		case ok:
			_, err := g.Git.Run(ctx, append(safeGit, "update-ref", "-m", "spawn: undo a sandbox's change", "--end-of-options", ref, old, sha)...)
			if err != nil {
				errs = append(errs, fmt.Errorf("move %s back: %w", ref, err))
			}
			changes = append(changes, Change{What: fmt.Sprintf("%s moved from %s to %s", ref, short(old), short(sha)), Restored: err == nil})
		default:
			_, err := g.Git.Run(ctx, append(safeGit, "update-ref", "-d", "--end-of-options", ref, sha)...)
			if err != nil {
				errs = append(errs, fmt.Errorf("delete %s: %w", ref, err))
			}
			changes = append(changes, Change{What: fmt.Sprintf("%s was created at %s", ref, short(sha)), Restored: err == nil})
		}
	}
	for ref, old := range before.refs {
		if _, ok := refs[ref]; ok {
			continue
		}
		_, err := g.Git.Run(ctx, append(safeGit, "update-ref", "-m", "spawn: undo a sandbox's change", "--end-of-options", ref, old, "")...)
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", ref, err))
		}
		changes = append(changes, Change{What: fmt.Sprintf("%s was deleted (it was at %s)", ref, short(old)), Restored: err == nil})
	}

	status, err := g.Git.Run(ctx, append(safeGit, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none")...)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("read the work tree's status: %w", err))
	case status != before.status:
		changes = append(changes, Change{What: fmt.Sprintf("the user's work tree changed (status before: %q, after: %q)", before.status, status), Tree: true})
	}
	return sorted(changes), errors.Join(errs...)
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
