package spawn

import (
	"os"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/entry"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
)

// TestMain lets the test binary stand in for spawn's: it answers as
// spawn's own processes (entry.Dispatch: an agent's reaper, claude's
// hooks, the model bridge, the git helper), and declares that its tests
// start agents.
func TestMain(m *testing.M) {
	if code, ok := entry.Dispatch(os.Args); ok {
		proc.Exit(code)
	}
	proc.Main()
	os.Exit(m.Run())
}

// testConfig is config.Default with the coder's toolchain caches shared
// (the "shared" cache, in the folder testenv.Env's SPAWN_CACHE_DIR names
// for the whole test run), as testenv.Env's SPAWN_CACHE=shared asks of a
// spawn that reads its configuration: the stories hand Run a Config, and
// with a cache per repository every `go test` a coder runs compiled the
// standard library anew. The tests of the cache modes set theirs.
func testConfig() config.Config {
	cfg := config.Default()
	cfg.Sandbox.Cache = isolation.CacheShared
	return cfg
}
