package observability

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonString encodes s as the agent CLIs (JavaScript's JSON.stringify) do:
// quotes, backslashes and control characters escaped, but not <, > and &.
func jsonString(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(s))
	return strings.TrimSuffix(b.String(), "\n")
}

// TestSecretInAnAgentsJSONLineIsRedacted: a secret with a quote and an
// HTML character, as it appears in a line of claude's stream-json output
// (escaped, but without Go's \u003c for <), is redacted.
func TestSecretInAnAgentsJSONLineIsRedacted(t *testing.T) {
	const secret = `p<ss"word&1234`
	r := NewRedactor([]string{"DB_PASSWORD=" + secret})
	line := `{"type":"user","content":` + jsonString(t, "cat .env\nDB_PASSWORD="+secret) + `}`
	require.Contains(t, line, `p<ss\"word&1234`)
	out := r.String(line)
	assert.NotContains(t, out, `p<ss\"word&1234`)
	assert.Contains(t, out, Redacted)

	// Go's own encoding (with \u003c) is still caught.
	b, err := json.Marshal(secret)
	require.NoError(t, err)
	assert.Equal(t, `"`+Redacted+`"`, r.String(string(b)))
}
