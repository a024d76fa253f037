package observability

import (
	"bytes"
	"encoding/json"
	"os"
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

// BenchmarkRedactorBytes: a stream's worth of Go source (no secret in it)
// through a run's Redactor: four API keys and two tokens, their JSON
// forms.
func BenchmarkRedactorBytes(b *testing.B) {
	src, err := os.ReadFile("redact.go")
	if err != nil {
		b.Fatal(err)
	}
	text := bytes.Repeat(src, (1<<20)/len(src)+1)
	r := RedactorOf("sk-ant-bench-0123456789abcdef", "sk-bench-0123456789abcdefghij", "AIzaBench0123456789abcdefghij",
		"ghp_benchtoken0123456789", "spawn-relay-coder-5f0c2a9e1b7d4c36", `pass"word<1234>`)
	b.SetBytes(int64(len(text)))
	for range b.N {
		if out := r.Bytes(text); len(out) != len(text) {
			b.Fatal("redacted")
		}
	}
}
