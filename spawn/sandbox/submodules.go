package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/git"
)

// Submodule is a submodule of the sandbox's commit: its path in the
// worktree and whether the sandbox holds its files.
type Submodule struct {
	Path        string
	Initialised bool
}

// submodules lists the submodules that the worktree's .gitmodules declares
// and its commit records (gitlinks), sorted by path.
func (s *Sandbox) submodules(ctx context.Context) ([]string, error) {
	if _, err := os.Stat(filepath.Join(s.Path, ".gitmodules")); err != nil {
		return nil, nil
	}
	out, err := s.Tree.Run(ctx, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, fmt.Errorf("list the worktree's submodules: %w", err)
	}
	var paths []string
	for _, entry := range strings.Split(out, "\x00") {
		// "160000 <sha> <stage>\t<path>" is a gitlink.
		if meta, path, ok := strings.Cut(entry, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
			paths = append(paths, path)
		}
	}
	sort.Strings(paths)
	return paths, nil
}

// InitSubmodules gives the worktree the files of its submodules, without
// the network and without touching the user's git configuration: each
// submodule the user's checkout has initialised is cloned from there
// (sharing its objects) and checked out at the commit the sandbox's
// commit records. It returns every submodule with whether it was
// initialised; one the user's checkout lacks, or whose recorded commit it
// does not have, stays an empty folder.
func (s *Sandbox) InitSubmodules(ctx context.Context) ([]Submodule, error) {
	paths, err := s.submodules(ctx)
	if err != nil {
		return nil, err
	}
	var subs []Submodule
	for _, path := range paths {
		src := filepath.Join(s.Repo.Dir, path)
		dst := filepath.Join(s.Path, path)
		sub := Submodule{Path: path}
		if _, err := os.Stat(filepath.Join(src, ".git")); err == nil {
			sub.Initialised, err = s.cloneSubmodule(ctx, path, src, dst)
			if err != nil {
				return subs, err
			}
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

// cloneSubmodule clones src into the empty folder dst and checks out the
// commit the worktree records for path. It reports false, leaving dst
// empty, when src does not have that commit.
func (s *Sandbox) cloneSubmodule(ctx context.Context, path, src, dst string) (bool, error) {
	sha, err := s.Tree.Run(ctx, "rev-parse", "HEAD:"+path)
	if err != nil {
		return false, fmt.Errorf("read the commit of submodule %s: %w", path, err)
	}
	if _, err := (git.Repo{Dir: src, Env: s.Repo.Env}).Run(ctx, "cat-file", "-e", sha+"^{commit}"); err != nil {
		return false, nil
	}
	if err := os.Remove(dst); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("submodule %s: %w", path, err)
	}
	if _, err := s.Repo.Run(ctx, "clone", "--quiet", "--shared", "--no-checkout", src, dst); err != nil {
		return false, fmt.Errorf("clone submodule %s from %s: %w", path, src, err)
	}
	if _, err := (git.Repo{Dir: dst, Env: s.Repo.Env}).Run(ctx, "checkout", "--quiet", "--detach", sha); err != nil {
		return false, fmt.Errorf("check out submodule %s at %s: %w", path, sha, err)
	}
	return true, nil
}

// SubmoduleLeftovers lists what the branch's commits cannot hold: files
// written into a submodule folder that is not initialised (git ignores
// them), and uncommitted changes inside an initialised submodule (spawn
// commits the superproject only). Each entry is one sentence naming the
// submodule.
func (s *Sandbox) SubmoduleLeftovers(ctx context.Context) ([]string, error) {
	paths, err := s.submodules(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, path := range paths {
		dir := filepath.Join(s.Path, path)
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			status, err := (git.Repo{Dir: dir, Env: s.Repo.Env}).Run(ctx, "status", "--porcelain")
			if err != nil {
				return out, fmt.Errorf("read the status of submodule %s: %w", path, err)
			}
			if status != "" {
				out = append(out, fmt.Sprintf("changes inside the submodule %s are not on the branch (spawn commits the superproject only); they stay in %s", path, dir))
			}
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return out, fmt.Errorf("read submodule folder %s: %w", path, err)
		}
		if len(entries) > 0 {
			var names []string
			for _, e := range entries {
				names = append(names, filepath.Join(path, e.Name()))
			}
			out = append(out, fmt.Sprintf("files written into the submodule folder %s, which is not initialised in the sandbox, are not on the branch (git ignores them): %s; they stay in %s", path, strings.Join(names, ", "), dir))
		}
	}
	return out, nil
}
