package relay

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var messages = []Path{{"POST", "/v1/messages"}}

func key(name, value string) func() (Header, error) {
	return func() (Header, error) { return Header{name, value}, nil }
}

// send sends a POST of body to target by client, with the key k in
// x-api-key, and returns the status and the answer's body.
func send(t testing.TB, client *http.Client, target, k string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", target, body)
	require.NoError(t, err)
	req.Header.Set("x-api-key", k)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	said, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(said)
}

// do sends a POST of "{}" to target with the key k and returns the status
// and the answer's body.
func do(t testing.TB, target, k string) (int, string) {
	t.Helper()
	return send(t, http.DefaultClient, target, k, strings.NewReader("{}"))
}

// relayTo starts a relay with one route, "anthropic", to upstream, closed
// when the test ends, and returns it with a key made for the coder's seat.
func relayTo(t testing.TB, upstream string) (*Relay, string) {
	t.Helper()
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	r, err := Start([]Route{{Name: "anthropic", Upstream: u, Credential: key("x-api-key", "sk-real"), Paths: messages}}, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	k, err := r.Grant("anthropic", "coder")
	require.NoError(t, err)
	return r, k
}

// An agent holding only the key its seat was given reaches the model API,
// which sees the user's real key and never the seat's.
func TestAgentWithItsSeatsKeyReachesTheAPIWithTheRealKey(t *testing.T) {
	var seen http.Header
	var path string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, path = r.Header.Clone(), r.URL.Path
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/base")
	r, err := Start([]Route{{Name: "anthropic", Upstream: u, Credential: key("x-api-key", "sk-real-secret"), Paths: messages}}, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	k, err := r.Grant("anthropic", "coder")
	require.NoError(t, err)

	code, body := do(t, r.URL("anthropic")+"/v1/messages", k)
	assert.Equal(t, 200, code)
	assert.Equal(t, "ok", body)
	assert.Equal(t, "sk-real-secret", seen.Get("x-api-key"))
	assert.Equal(t, "/base/v1/messages", path)

	// Anyone else on the machine, without a key the run gave, is refused.
	code, _ = do(t, r.URL("anthropic")+"/v1/messages", "guess")
	assert.Equal(t, http.StatusUnauthorized, code)
}

// A seat's key opens its own route only, and only the API paths its CLI
// needs: the coder cannot spend the reviewer's credential, nor reach
// another endpoint of its own provider.
func TestAKeyOpensItsOwnRouteAndPathsOnly(t *testing.T) {
	var hits int
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	r, err := Start([]Route{
		{Name: "anthropic", Upstream: u, Credential: key("x-api-key", "a"), Paths: messages},
		{Name: "gemini", Upstream: u, Credential: key("x-goog-api-key", "g"), Paths: []Path{{"POST", "/v1beta/models/*:streamGenerateContent"}}},
	}, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	coder, err := r.Grant("anthropic", "coder")
	require.NoError(t, err)

	code, body := do(t, r.URL("gemini")+"/v1beta/models/gemini-2.5-pro:streamGenerateContent", coder)
	assert.Equal(t, http.StatusUnauthorized, code, body)
	code, body = do(t, r.URL("anthropic")+"/v1/files", coder)
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.Contains(t, body, "not one the agent's CLI needs")
	code, _ = do(t, r.URL("anthropic")+"/v1/messages", coder)
	assert.Equal(t, 200, code)
	assert.Equal(t, 1, hits, "only the allowed request went upstream")
}

// lengthMeter reports the answer's length as its output tokens.
type lengthMeter struct{ n int64 }

func (m *lengthMeter) Observe(b []byte) { m.n += int64(len(b)) }
func (m *lengthMeter) Usage() Usage     { return Usage{Model: "m", OutputTokens: m.n} }

// The relay counts what every answer it forwards reports, whoever asked
// (the CLI or a program the agent ran), and once the run's budget is spent
// it forwards nothing more.
func TestTheRelayCountsEveryAnswerAndRefusesOnceTheBudgetIsSpent(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "twelve bytes") }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	var mu sync.Mutex
	var used []Usage
	spent := false
	r, err := Start([]Route{{Name: "a", Upstream: u, Credential: key("x-api-key", "real"), Paths: messages, Meter: func() Meter { return &lengthMeter{} }}},
		Options{
			Allow: func() error {
				mu.Lock()
				defer mu.Unlock()
				if spent {
					return errors.New("the run's cost budget is spent")
				}
				return nil
			},
			Used: func(u Usage) {
				mu.Lock()
				defer mu.Unlock()
				used = append(used, u)
				spent = true
			},
		})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	k, err := r.Grant("a", "coder")
	require.NoError(t, err)
	code, _ := do(t, r.URL("a")+"/v1/messages", k)
	assert.Equal(t, 200, code)
	code, body := do(t, r.URL("a")+"/v1/messages", k)
	assert.Equal(t, http.StatusPaymentRequired, code)
	assert.Contains(t, body, BudgetSpent)
	require.Len(t, used, 1)
	assert.Equal(t, int64(12), used[0].OutputTokens)
	assert.Equal(t, "coder", used[0].Seat)
	assert.Equal(t, 200, used[0].Status)
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
	r, err := Start([]Route{{Name: "gemini", Upstream: u, Credential: key("x-goog-api-key", "real"),
		Paths: []Path{{"POST", "/v1beta/models/*:streamGenerateContent"}}, Meter: func() Meter { return &lengthMeter{} }}}, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	k, err := r.Grant("gemini", "reviewer")
	require.NoError(t, err)

	req, _ := http.NewRequest("POST", r.URL("gemini")+"/v1beta/models/m:streamGenerateContent?alt=sse", nil)
	req.Header.Set("x-goog-api-key", k)
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
	r, err := Start([]Route{{Name: "a", Upstream: u, Credential: key("x-api-key", "real"), Paths: messages, Meter: func() Meter { return &lengthMeter{} }}}, Options{Used: func(Usage) {}})
	require.NoError(b, err)
	defer r.Close()
	k, err := r.Grant("a", "bench")
	require.NoError(b, err)
	get := func(b *testing.B, target string) {
		for i := 0; i < b.N; i++ {
			req, _ := http.NewRequest("POST", target, strings.NewReader("{}"))
			req.Header.Set("x-api-key", k)
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

// An agent that reads an answer's status line and hangs up (a program
// dodging the budget, or a CLI killed mid-answer) does not take the
// answer's cost with it: the relay reads the answer to its end and counts
// all of it before it forwards the next request.
func TestAnAnswerIsCountedWholeWhenTheAgentHangsUpEarly(t *testing.T) {
	second := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first part, ")
		w.(http.Flusher).Flush()
		<-second // the rest comes once the agent has hung up
		io.WriteString(w, "then the usage")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	used := make(chan Usage, 1)
	r, err := Start([]Route{{Name: "a", Upstream: u, Credential: key("x-api-key", "real"), Paths: messages, Meter: func() Meter { return &lengthMeter{} }}},
		Options{Used: func(u Usage) { used <- u }})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	k, err := r.Grant("a", "spender")
	require.NoError(t, err)

	req, err := http.NewRequest("POST", r.URL("a")+"/v1/messages", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("x-api-key", k)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	require.NoError(t, resp.Body.Close()) // hangs up before the answer's end
	close(second)

	var got Usage
	select {
	case got = <-used:
	case <-time.After(10 * time.Second):
		t.Fatal("the answer was never counted")
	}
	assert.Equal(t, int64(len("first part, then the usage")), got.OutputTokens, "the whole answer is counted")
	assert.Equal(t, "spender", got.Seat)
}

// An answer can begin as soon as the model has read the request, while
// the relay is still finishing the request's body (the last read, which
// finds its end): the answer arrives whole. Before, the relay's server
// closed the request's body at the answer's first write, the transport's
// last read failed, and the relay dropped the upstream connection
// mid-answer (gemini: "other side closed", a flake of the stories). The
// window is narrow: many requests go through.
func TestAnAnswerThatStartsBeforeTheRequestEndsArrivesWhole(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			t.Errorf("upstream read: %v", err)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(time.Millisecond)
		io.WriteString(w, "data: two\n\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	r, err := Start([]Route{{Name: "gemini", Upstream: u, Credential: key("x-goog-api-key", "real"), Paths: []Path{{"POST", "/v1/stream"}}}}, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	k, err := r.Grant("gemini", "reviewer")
	require.NoError(t, err)
	body := strings.Repeat("x", 34<<10) // a reviewer's request: written past the transport's buffer
	for i := range 200 {
		req, err := http.NewRequest("POST", r.URL("gemini")+"/v1/stream", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("x-goog-api-key", k)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		answer, err := io.ReadAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		require.NoError(t, err, "request %d: the answer broke off after %q", i, answer)
		require.Equal(t, "data: one\n\ndata: two\n\n", string(answer), "request %d", i)
	}
}

// meteredRelay starts a relay with one route, "a", to the model up serves
// (the route's credential "real", each answer metered by its length),
// with opts, and grants seat its key k. When the test ends the relay is
// closed, then up.
func meteredRelay(t *testing.T, up *httptest.Server, opts Options, seat string) (r *Relay, k string) {
	t.Helper()
	t.Cleanup(up.Close)
	u, err := url.Parse(up.URL)
	require.NoError(t, err)
	r, err = Start([]Route{{Name: "a", Upstream: u, Credential: key("x-api-key", "real"), Paths: messages, Meter: func() Meter { return &lengthMeter{} }}}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	k, err = r.Grant("a", seat)
	require.NoError(t, err)
	return r, k
}

// The relay reads a request whole before it goes upstream, up to the
// model APIs' own limit: the body reaches the model as the agent sent it,
// streamed or not, and a longer one is refused (413) without reaching it.
func TestARequestReachesTheModelWholeUpToTheAPIsLimit(t *testing.T) {
	var got []int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		got = append(got, len(b))
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	r, k := relayTo(t, up.URL)
	sendN := func(n int, streamed bool) (int, string) {
		var body io.Reader = bytes.NewReader(bytes.Repeat([]byte("x"), n))
		if streamed {
			body = io.MultiReader(body) // no length: sent chunked
		}
		return send(t, http.DefaultClient, r.URL("anthropic")+"/v1/messages", k, body)
	}
	code, said := sendN(maxRequestBody, false)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", said)
	code, said = sendN(1000, true)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", said)
	for _, streamed := range []bool{true, false} {
		code, said = sendN(maxRequestBody+1, streamed)
		assert.Equal(t, http.StatusRequestEntityTooLarge, code, "streamed %v", streamed)
		assert.Contains(t, said, "longer than 32 MiB")
	}
	assert.Equal(t, []int{maxRequestBody, 1000}, got, "what reached the model")
}

// Closing a relay a second time returns at once, with the first Close's
// result: it waited forever for listeners the first had already seen end.
func TestClosingARelayTwiceReturns(t *testing.T) {
	u, err := url.Parse("http://127.0.0.1:1")
	require.NoError(t, err)
	r, err := Start([]Route{{Name: "anthropic", Upstream: u, Credential: key("x-api-key", "sk-real"), Paths: messages}}, Options{})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	second := make(chan error, 1)
	go func() { second <- r.Close() }()
	select {
	case err := <-second:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the second Close has not returned after 10 s")
	}
}
