package relay

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An upstream the relay cannot reach is answered 502 with a body that
// names the host and why it could not be reached, distinct from an
// upstream that was reached and failed.
func TestUnreachableUpstreamIsNamedWithItsCause(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	hangup, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer hangup.Close()
	go func() {
		for {
			c, err := hangup.Accept()
			if err != nil {
				return
			}
			c.Close() // reached, then gone: not unreachable
		}
	}()
	for _, tt := range []struct {
		name, upstream, want string
	}{
		{"dns", "http://nonexistent.invalid", UnreachablePrefix + "nonexistent.invalid: the DNS lookup of nonexistent.invalid failed (no such host)"},
		{"refused", "http://" + refusedAddr, UnreachablePrefix + refusedAddr + ": the connection was refused"},
		{"tls", "https://" + strings.TrimPrefix(plain.URL, "http://"), UnreachablePrefix + strings.TrimPrefix(plain.URL, "http://") + ": the TLS handshake failed"},
		{"reached", "http://" + hangup.Addr().String(), "spawn relay: upstream failed: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.upstream)
			require.NoError(t, err)
			r, err := Start([]Route{{Name: "anthropic", Upstream: u, Credential: key("x-api-key", "sk-real"), Paths: messages}}, Options{})
			require.NoError(t, err)
			defer func() { require.NoError(t, r.Close()) }()
			k, err := r.Grant("anthropic", "coder")
			require.NoError(t, err)
			code, body := do(t, r.URL("anthropic")+"/v1/messages", k)
			assert.Equal(t, http.StatusBadGateway, code)
			assert.True(t, strings.HasPrefix(body, tt.want), "the body %q starts with %q", body, tt.want)
			if tt.name == "reached" {
				assert.NotContains(t, body, UnreachablePrefix)
			}
		})
	}
}
