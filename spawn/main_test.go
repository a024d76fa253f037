package spawn

import (
	"os"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/entry"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
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

// toolOutput is the last output of the tool call id that claude sent the
// scripted model srv, "" when it sent none.
func toolOutput(srv *modelserver.Server, id string) string {
	var out string
	for _, req := range srv.Requests() {
		for _, res := range req.ToolResults() {
			if res.ID == id {
				out = res.Content
			}
		}
	}
	return out
}
