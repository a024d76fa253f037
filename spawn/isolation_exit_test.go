package spawn

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
)

// A run that caught an agent tampering ends with its own exit code, even
// when the turn failed too; isolation = "bwrap" without bubblewrap is a
// setup error (exit 2) that says how to install it.
func TestTamperAndMissingSandboxHaveTheirExitCodes(t *testing.T) {
	tamper := errors.Join(fault.Errorf(fault.KindSandboxTamper, nil, "claude moved refs/heads/main"), fault.Errorf(fault.KindAgentCrashed, nil, "crashed"))
	assert.Equal(t, fault.ExitTamper, ExitCode(tamper, observability.VerdictNone))
	assert.Equal(t, 7, fault.ExitTamper)
	missing := fault.Errorf(fault.KindNoSandbox, &isolation.Unavailable{Reason: "bubblewrap (bwrap) is not installed"}, "%v", &isolation.Unavailable{Reason: "bubblewrap (bwrap) is not installed"})
	assert.Equal(t, fault.ExitUsage, ExitCode(missing, observability.VerdictNone))
	assert.Contains(t, missing.Error(), "apt-get install bubblewrap")
}
