package sandbox

import (
	"os"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// TestMain lets the test binary answer as spawn's git helper, which the
// sandbox runs by re-executing its binary with HelperArg.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		proc.Exit(Helper(os.Stdin, os.Stdout, os.Stderr))
	}
	proc.Main()
	os.Exit(m.Run())
}
