package watcher

import (
	"os"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// TestMain lets the test binary serve as the agents' reaper.
func TestMain(m *testing.M) {
	proc.Main()
	os.Exit(m.Run())
}
