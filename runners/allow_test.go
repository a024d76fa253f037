package runners

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A refused call is turned into the rule that would allow it, narrow
// enough to name the program and its subcommand.
func TestClaudeAllowRuleNamesTheCommand(t *testing.T) {
	for _, tt := range []struct {
		tool, input, want string
	}{
		{"Bash", `{"command":"go vet ./..."}`, "Bash(go vet:*)"},
		{"Bash", `{"command":"make"}`, "Bash(make:*)"},
		{"Bash", `{"command":"npm run build -- --prod"}`, "Bash(npm run:*)"},
		{"Bash", `{"command":"curl -s https://example.com"}`, "Bash(curl:*)"},
		{"Bash", `{"command":"cd sub && go build"}`, ""},
		{"Bash", `{"command":"$(evil)"}`, ""},
		{"Bash", `{}`, ""},
		{"WebFetch", `{"url":"https://example.com"}`, "WebFetch"},
	} {
		assert.Equal(t, tt.want, ClaudeAllowRule(tt.tool, json.RawMessage(tt.input)), tt.input)
	}
}
