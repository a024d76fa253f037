package relay

import (
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
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
	hangup := hangupAddr(t)
	for _, tt := range []struct {
		name, upstream, want string
	}{
		{"dns", "http://nonexistent.invalid", UnreachablePrefix + "nonexistent.invalid: the DNS lookup of nonexistent.invalid failed (no such host)"},
		{"refused", "http://" + refusedAddr, UnreachablePrefix + refusedAddr + ": the connection was refused"},
		{"tls", "https://" + strings.TrimPrefix(plain.URL, "http://"), UnreachablePrefix + strings.TrimPrefix(plain.URL, "http://") + ": the TLS handshake failed"},
		{"reached", "http://" + hangup, "spawn relay: upstream failed: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, k := relayTo(t, tt.upstream)
			code, body := do(t, r.URL("anthropic")+"/v1/messages", k)
			assert.Equal(t, http.StatusBadGateway, code)
			assert.True(t, strings.HasPrefix(body, tt.want), "the body %q starts with %q", body, tt.want)
			if tt.name == "reached" {
				assert.NotContains(t, body, UnreachablePrefix)
			}
		})
	}
}

// Once a request whose upstream failed is answered, nothing reads the
// agent's connection but the relay's server, which reads the next request
// there: the transport that failed to send the request upstream still read
// its body after the answer, and the server panicked ("invalid concurrent
// Body.Read call", on spawn's stderr) and cut the connection. Requests go
// one after another on one connection, as a CLI sends them.
func TestAFailedUpstreamLeavesTheAgentsConnectionToTheRelay(t *testing.T) {
	var logged testenv.SyncBuffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	r, k := relayTo(t, "http://"+hangupAddr(t))
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for range 20 {
		code, said := send(t, client, r.URL("anthropic")+"/v1/messages", k, strings.NewReader(`{"model":"m","messages":[]}`))
		require.Equal(t, http.StatusBadGateway, code)
		require.True(t, strings.HasPrefix(said, "spawn relay: upstream failed: "), "the answer %q", said)
	}
	require.NoError(t, r.Close()) // the server's log is whole
	assert.NotContains(t, logged.String(), "panic", "the relay's server")
}

// hangupAddr is the address of a listener that closes each connection it
// accepts (the upstream is reached, then gone), closed when the test ends.
func hangupAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ln.Close()) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}
