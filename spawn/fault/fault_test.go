package fault

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// Every kind exits with the code README.md documents for it; without a
// failure, the verdict decides between 0 and 3. A kind spawn does not know
// exits as an internal failure.
func TestEveryKindExitsWithItsDocumentedCode(t *testing.T) {
	for kind, want := range map[Kind]int{
		KindUsage: 2, KindConfig: 2, KindRepo: 2, KindNotImplemented: 2, KindMissingCLI: 2, KindNoSandbox: 2,
		KindSandboxGone: 1, KindInternal: 1, "no_such_kind": 1,
		KindAgentCrashed: 4, KindAgentFailed: 4, KindModelAPI: 4, KindAuth: 4, KindRateLimited: 4, KindModelUnavailable: 4, KindUnreachable: 4,
		KindTimeout: 5, KindBudget: 5, KindUsageLimit: 5,
		KindGitHub: 6, KindSandboxTamper: 7, KindInterrupted: 130,
	} {
		assert.Equal(t, want, kind.ExitCode(observability.VerdictChangesRequested), kind)
	}
	assert.Equal(t, ExitOK, Kind("").ExitCode(observability.VerdictApproved))
	assert.Equal(t, ExitOK, Kind("").ExitCode(observability.VerdictNone))
	for _, v := range []observability.Verdict{observability.VerdictChangesRequested, observability.VerdictNotConverged, observability.VerdictReviewFailed} {
		assert.Equal(t, ExitNotApproved, Kind("").ExitCode(v), v)
	}
}

// An *Error says its sentence and keeps its cause for errors.Is.
func TestAnErrorSaysItsSentenceAndKeepsItsCause(t *testing.T) {
	cause := errors.New("disk full")
	err := Errorf(KindInternal, cause, "cannot write %s: %v", "record.json", cause)
	assert.Equal(t, "cannot write record.json: disk full", err.Error())
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, KindInternal, err.Kind)
}
