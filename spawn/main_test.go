package spawn

import (
	"os"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// TestMain declares that this test binary starts agents: proc re-executes
// it as each agent's reaper.
func TestMain(m *testing.M) {
	proc.Main()
	os.Exit(m.Run())
}
