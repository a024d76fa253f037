package spawn

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

// When an agent fails, the user reads the line that says why (not its last
// line, not a stack frame), classified, with what to do about it.
func TestAFailedAgentsCauseIsShownAndClassified(t *testing.T) {
	tests := []struct {
		name, stderr, cause string
		kind                fault.Kind
		says                string
	}{
		{
			name:   "gemini without a key",
			stderr: "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.\nUpdate your environment and try again (no reload needed if using .env)!\n",
			cause:  "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.",
			kind:   fault.KindAuth, says: "set its API key or log in to it",
		},
		{
			name:   "gemini's noise and a stack trace around the cause",
			stderr: "256-color support not detected\nRipgrep is not available. Falling back to GrepTool.\nError: connect ECONNREFUSED 127.0.0.1:9\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)\n",
			cause:  "Error: connect ECONNREFUSED 127.0.0.1:9",
			kind:   fault.KindUnreachable, says: "the API base URL",
		},
		{
			name:   "claude cannot connect",
			stderr: "API Error: Unable to connect to API (ConnectionRefused)",
			cause:  "API Error: Unable to connect to API (ConnectionRefused)",
			kind:   fault.KindUnreachable, says: "check the network",
		},
		{
			name:   "claude not logged in",
			stderr: "Not logged in · Please run /login",
			cause:  "Not logged in · Please run /login",
			kind:   fault.KindAuth, says: "log in to it",
		},
		{
			name:   "claude quoting the relay's answer for a host without DNS",
			stderr: "API Error: 502 spawn relay: unreachable: nonexistent.invalid: the DNS lookup of nonexistent.invalid failed (no such host) . This is a server-side issue, usually temporary",
			cause:  "API Error: 502 spawn relay: unreachable: nonexistent.invalid: the DNS lookup of nonexistent.invalid failed (no such host) . This is a server-side issue, usually temporary",
			kind:   fault.KindUnreachable, says: "gemini could not reach the model API at nonexistent.invalid: the DNS lookup of nonexistent.invalid failed (no such host); check the network",
		},
		{
			name:   "claude 2.1.332 quoting the relay's answer for a refused connection",
			stderr: "API Error: 502 spawn relay: unreachable: 127.0.0.1:9: the connection was refused. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:44523).",
			cause:  "API Error: 502 spawn relay: unreachable: 127.0.0.1:9: the connection was refused. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:44523).",
			kind:   fault.KindUnreachable, says: "gemini could not reach the model API at 127.0.0.1:9: the connection was refused; check the network",
		},
		{
			name:   "gemini quoting the relay's answer in JSON",
			stderr: "Attempt 3 failed: {\"error\":{\"message\":\"spawn relay: unreachable: nonexistent.invalid: the DNS lookup of nonexistent.invalid failed (no such host)\\n\",\"code\":502,\"status\":\"Bad Gateway\"}}. Max attempts reached",
			cause:  "Attempt 3 failed: {\"error\":{\"message\":\"spawn relay: unreachable: nonexistent.invalid: the DNS lookup of nonexistent.invalid failed (no such host)\\n\",\"code\":502,\"status\":\"Bad Gateway\"}}. Max attempts reached",
			kind:   fault.KindUnreachable, says: "at nonexistent.invalid: the DNS lookup of nonexistent.invalid failed (no such host); check",
		},
		{
			name:   "something else",
			stderr: "starting\nSegmentation fault\n",
			cause:  "Segmentation fault",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cause := causeLine(tt.stderr)
			assert.Equal(t, tt.cause, cause)
			kind, msg := failure("gemini", "GOOGLE_GEMINI_BASE_URL", cause)
			assert.Equal(t, tt.kind, kind)
			assert.Contains(t, msg, tt.says)
			assert.NotContains(t, msg, "HTTP 0")
		})
	}
}
