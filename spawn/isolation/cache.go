package isolation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// Cache is where the coder's toolchain caches live: the [sandbox] cache
// setting.
type Cache string

// Caches, from the most shared to the least.
const (
	// CacheShared is one cache spawn keeps for every repository of the user.
	CacheShared Cache = "shared"
	// CacheRepository is a cache spawn keeps for each repository: the runs
	// of one repository share it, no other repository's do.
	CacheRepository Cache = "repository"
	// CacheNone is a fresh, empty cache for every agent session.
	CacheNone Cache = "none"
)

// ParseCache returns the cache s names.
func ParseCache(s string) (Cache, error) {
	switch c := Cache(s); c {
	case CacheShared, CacheRepository, CacheNone:
		return c, nil
	}
	return "", fmt.Errorf("unknown cache %q (want repository, shared or none)", s)
}

// CacheDirs are the toolchain caches a coder writes, inside a cache
// directory, with the variable that points each tool at its own.
var CacheDirs = []struct{ Dir, Var string }{
	{"go-build", "GOCACHE"},
	{"npm", "npm_config_cache"},
	{"pip", "PIP_CACHE_DIR"},
	{"yarn", "YARN_CACHE_FOLDER"},
}

// Dirs are the user's directories the environment names, as the caller
// read them once: "" for a variable that is not set.
type Dirs struct {
	Home       string // HOME
	CacheHome  string // XDG_CACHE_HOME
	SpawnCache string // SPAWN_CACHE_DIR
}

// CacheDir is the directory of the toolchain caches spawn keeps for the
// repository whose git directory is repoGit, as mode says, under
// SPAWN_CACHE_DIR, else $XDG_CACHE_HOME/spawn (~/.cache/spawn) of dirs:
// never the user's own caches, which a coder could poison. It is made,
// with its CacheDirs, private to the user. "" for CacheNone.
func CacheDir(dirs Dirs, mode Cache, repoGit string) (string, error) {
	if mode == CacheNone {
		return "", nil
	}
	root := dirs.SpawnCache
	if root == "" {
		base := dirs.CacheHome
		if base == "" {
			home := dirs.Home
			if home == "" {
				return "", fmt.Errorf("no HOME to keep the toolchain caches in; set SPAWN_CACHE_DIR")
			}
			base = filepath.Join(home, ".cache")
		}
		root = filepath.Join(base, "spawn")
	}
	dir := filepath.Join(root, "shared")
	if mode != CacheShared {
		sum := sha256.Sum256([]byte(filepath.Clean(repoGit)))
		dir = filepath.Join(root, "repos", hex.EncodeToString(sum[:8]))
	}
	for _, c := range CacheDirs {
		if err := os.MkdirAll(filepath.Join(dir, c.Dir), 0o700); err != nil {
			return "", fmt.Errorf("make the toolchain cache %s: %w", dir, err)
		}
	}
	return dir, nil
}
