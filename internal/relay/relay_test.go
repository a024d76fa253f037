package relay

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An agent holding only the run's throwaway key reaches the model API,
// which sees the user's real key and never the throwaway one.
func TestAgentWithTheThrowawayKeyReachesTheAPIWithTheRealKey(t *testing.T) {
	var seen http.Header
	var path string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, path = r.Header.Clone(), r.URL.Path
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/base")
	r, err := Start([]Route{{Name: "anthropic", Upstream: u, Credential: Header{"x-api-key", "sk-real-secret"}}})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()

	req, _ := http.NewRequest("POST", r.URL("anthropic")+"/v1/messages", strings.NewReader("{}"))
	req.Header.Set("x-api-key", r.Key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "ok", string(body))
	assert.Equal(t, "sk-real-secret", seen.Get("x-api-key"))
	assert.Equal(t, "/base/v1/messages", path)

	// Anyone else on the machine, without the run's key, is refused.
	req, err = http.NewRequest("POST", r.URL("anthropic")+"/v1/messages", nil)
	require.NoError(t, err)
	req.Header.Set("x-api-key", "guess")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// A streamed answer reaches the agent event by event, not when the
// upstream finishes.
func TestStreamedAnswerPassesThroughAsItArrives(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: second\n\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	r, err := Start([]Route{{Name: "gemini", Upstream: u, Credential: Header{"x-goog-api-key", "real"}}})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()

	req, _ := http.NewRequest("POST", r.URL("gemini")+"/v1beta/models/m:streamGenerateContent?alt=sse", nil)
	req.Header.Set("x-goog-api-key", r.Key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "data: first\n", line, "the first event arrived while the upstream still held the second")
	close(release)
}

// BenchmarkRelayAddedLatency is the relay's cost per model request: the
// same request straight to the upstream and through the relay.
func BenchmarkRelayAddedLatency(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	r, err := Start([]Route{{Name: "a", Upstream: u, Credential: Header{"x-api-key", "real"}}})
	require.NoError(b, err)
	defer r.Close()
	get := func(b *testing.B, target string) {
		for i := 0; i < b.N; i++ {
			req, _ := http.NewRequest("POST", target, strings.NewReader("{}"))
			req.Header.Set("x-api-key", r.Key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("direct", func(b *testing.B) { get(b, up.URL+"/v1/messages") })
	b.Run("relayed", func(b *testing.B) { get(b, r.URL("a")+"/v1/messages") })
}
