package spawn

import (
	"os"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/entry"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
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
