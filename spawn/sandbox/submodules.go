package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/infinite-improbability-drive/spawn/internal/git"
)

// Submodule is a submodule of the sandbox's commit: its path in the
// worktree and whether the sandbox holds its files.
type Submodule struct {
	Path        string
	Initialised bool
}

// fresh is the coder's store as spawn reads it while the sandbox is being
// made, before any agent ran in it.
func (s *Sandbox) fresh() git.Repo {
	return git.Repo{Dir: s.Path, Env: s.Repo.Env, Config: git.Hardened}
}

// submodules lists the submodules that the worktree's .gitmodules declares
// and its commit records (gitlinks), sorted by path.
func (s *Sandbox) submodules(ctx context.Context) ([]string, error) {
	if _, err := os.Stat(filepath.Join(s.Path, ".gitmodules")); err != nil {
		return nil, nil
	}
	paths, err := gitlinks(ctx, s.fresh())
	if err != nil {
		return nil, fmt.Errorf("list the worktree's submodules: %w", err)
	}
	sort.Strings(paths)
	return paths, nil
}

// InitSubmodules gives the worktree the files of its submodules, without
// the network and without touching the user's git configuration: each
// submodule the user's checkout has initialised is cloned from there
// (sharing its objects, which the sandbox then shows read-only: Objects)
// and checked out at the commit the sandbox's commit records. It returns
// every submodule with whether it was initialised; one the user's
// checkout lacks, or whose recorded commit it does not have, stays an
// empty folder. It runs once, when the sandbox is made, before any agent.
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
	sha, err := s.fresh().Run(ctx, "rev-parse", "HEAD:"+path)
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
	objects, err := objectDirs(filepath.Join(dst, ".git", "objects"))
	if err != nil {
		return false, fmt.Errorf("submodule %s: %w", path, err)
	}
	s.Objects = append(s.Objects, objects[1:]...) // the clone's own objects are in the worktree
	return true, nil
}
