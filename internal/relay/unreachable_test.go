package relay

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
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

// lockedBuffer is a bytes.Buffer that goroutines may write at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Once a request whose upstream failed is answered, nothing reads the
// agent's connection but the relay's server, which reads the next request
// there: the transport that failed to send the request upstream still read
// its body after the answer, and the server panicked ("invalid concurrent
// Body.Read call", on spawn's stderr) and cut the connection. Requests go
// one after another on one connection, as a CLI sends them.
func TestAFailedUpstreamLeavesTheAgentsConnectionToTheRelay(t *testing.T) {
	var logged lockedBuffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	hangup, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer hangup.Close()
	go func() {
		for {
			c, err := hangup.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	u, err := url.Parse("http://" + hangup.Addr().String())
	require.NoError(t, err)
	r, err := Start([]Route{{Name: "anthropic", Upstream: u, Credential: key("x-api-key", "sk-real"), Paths: messages}}, Options{})
	require.NoError(t, err)
	open := true
	defer func() {
		if open {
			require.NoError(t, r.Close())
		}
	}()
	k, err := r.Grant("anthropic", "coder")
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for range 20 {
		req, err := http.NewRequest("POST", r.URL("anthropic")+"/v1/messages", strings.NewReader(`{"model":"m","messages":[]}`))
		require.NoError(t, err)
		req.Header.Set("x-api-key", k)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, errors.Join(err, resp.Body.Close()))
		require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	}
	open = false
	require.NoError(t, r.Close()) // the server's log is whole
	assert.NotContains(t, logged.String(), "panic", "the relay's server")
}
