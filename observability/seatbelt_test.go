package observability

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A record of a run on macOS, confined by Seatbelt with rlimits, is valid.
func TestARecordOfASeatbeltRunIsValid(t *testing.T) {
	record, _ := compileSchemas(t)
	rec := full()
	rec.Isolation = &Isolation{Mode: "seatbelt", Network: "model-only", Limits: Limits{Processes: 1024, MemoryBytes: 8 << 30, EnforcedBy: "rlimit"}}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	validate(t, record, b)
}
