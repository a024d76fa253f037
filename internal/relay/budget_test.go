package relay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneAnswerBudget is a run's budget that one answer spends: Allow refuses
// every request once Used was told of an answer.
type oneAnswerBudget struct {
	mu    sync.Mutex
	spent bool
}

func (b *oneAnswerBudget) options() Options {
	return Options{
		Allow: func() error {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.spent {
				return errors.New("the run's cost budget is spent")
			}
			return nil
		},
		Used: func(Usage) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.spent = true
		},
	}
}

// call sends a model request over c the way a hostile program does, by
// hand, followed by extra (bytes past the request's end, "" for none), and
// returns the answer's status line: all it reads.
func call(t *testing.T, c net.Conn, k, extra string) string {
	t.Helper()
	body := `{"stream":true}`
	_, err := fmt.Fprintf(c, "POST /a/v1/messages HTTP/1.1\r\nHost: relay\r\nx-api-key: %s\r\nContent-Length: %d\r\n\r\n%s%s", k, len(body), body, extra)
	require.NoError(t, err)
	status, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSpace(status)
}

// A program the coder runs with the coder's relay key makes calls one
// after another, reading each answer's status line only and hanging up:
// the answer it left is still being read from the model, not yet counted,
// when its next call arrives. Once one answer has spent the budget, the
// next call is refused, however the program hangs up (closing its
// connection, sending a byte past its request first so that the server's
// background read sees a pipelined request and not the close, or, as the
// sandbox's bridge does when the agent closes, only shutting its side
// down), whether the answer streams or has a length, and however fast it
// calls again.
func TestASequentialCallerCannotOutrunTheMeter(t *testing.T) {
	answers := map[string]http.HandlerFunc{
		// The usage comes last, a while after the answer began.
		"streamed": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
			io.WriteString(w, "event: message_delta usage\n\n")
		},
		// The headers come first, the body a while after.
		"with a length": func(w http.ResponseWriter, r *http.Request) {
			const answer = `{"usage":{"output_tokens":5}}`
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
			io.WriteString(w, answer)
		},
	}
	hangUps := map[string]struct {
		network, extra string
		hangUp         func(net.Conn) error
	}{
		"closing":                    {network: "tcp", hangUp: net.Conn.Close},
		"closing after a spare byte": {network: "tcp", extra: "G", hangUp: net.Conn.Close},
		"shutting its side down":     {network: "unix", hangUp: func(c net.Conn) error { return c.(*net.UnixConn).CloseWrite() }},
	}
	for aname, answer := range answers {
		for hname, h := range hangUps {
			t.Run(aname+"/"+hname, func(t *testing.T) {
				up := httptest.NewServer(answer)
				defer up.Close()
				u, err := url.Parse(up.URL)
				require.NoError(t, err)
				for i := range 10 {
					var budget oneAnswerBudget
					r, err := Start([]Route{{Name: "a", Upstream: u, Credential: key("x-api-key", "real"), Paths: messages, Meter: func() Meter { return &lengthMeter{} }}}, budget.options())
					require.NoError(t, err)
					k, err := r.Grant("a", "coder")
					require.NoError(t, err)
					addr := r.ln.Addr().String()
					if h.network == "unix" {
						addr = filepath.Join(t.TempDir(), "relay.sock")
						require.NoError(t, r.ServeUnix(addr))
					}
					first, err := net.Dial(h.network, addr)
					require.NoError(t, err)
					require.Equal(t, "HTTP/1.1 200 OK", call(t, first, k, h.extra), "call %d: the first call spends the budget", i)
					require.NoError(t, h.hangUp(first))
					second, err := net.Dial(h.network, addr)
					require.NoError(t, err)
					require.Equal(t, "HTTP/1.1 402 Payment Required", call(t, second, k, ""), "call %d: the second call came once the first answer's status line was read", i)
					require.NoError(t, second.Close())
					first.Close() // closed already, unless only its side was shut down
					require.NoError(t, r.Close())
				}
			})
		}
	}
}

// A CLI makes requests side by side (claude asks for a title beside its
// main streaming answer): a request made while another answer streams to
// a client still reading it goes upstream at once, and its answer begins
// before the first one ends.
func TestRequestsInFlightTogetherAreNotSerialised(t *testing.T) {
	secondAsked := make(chan struct{})
	var once sync.Once
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Query().Get("n") == "2" {
			once.Do(func() { close(secondAsked) })
			io.WriteString(w, "data: second\n\n")
			return
		}
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select { // the first answer ends only once the second was asked
		case <-secondAsked:
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "data: first ends\n\n")
	}))
	var budget oneAnswerBudget
	r, k := meteredRelay(t, up, budget.options(), "coder")
	ask := func(n int) (*http.Response, error) {
		req, err := http.NewRequest("POST", fmt.Sprintf("%s/v1/messages?n=%d", r.URL("a"), n), strings.NewReader("{}"))
		if err != nil {
			return nil, err
		}
		req.Header.Set("x-api-key", k)
		return http.DefaultClient.Do(req)
	}

	first, err := ask(1)
	require.NoError(t, err)
	defer first.Body.Close()
	events := bufio.NewReader(first.Body)
	line, err := events.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "data: first\n", line)

	second, err := ask(2)
	require.NoError(t, err)
	body, err := io.ReadAll(second.Body)
	require.NoError(t, second.Body.Close())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, second.StatusCode)
	assert.Equal(t, "data: second\n\n", string(body))
	select {
	case <-secondAsked:
	default:
		t.Fatal("the second request never reached the model")
	}
	rest, err := io.ReadAll(events)
	require.NoError(t, err)
	assert.Equal(t, "\ndata: first ends\n\n", string(rest), "the first answer ended after the second")
}

// A non-streaming answer (of a known length, no event stream) is counted
// before its client sees anything of it, its status line included: a
// program that hangs up on it and calls again is checked against a budget
// that holds its cost, however soon the relay learns that it left. It
// arrives whole.
func TestAnAnswerOfAKnownLengthIsCountedBeforeItsClientSeesIt(t *testing.T) {
	const answer = `{"usage":{"output_tokens":5}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, answer)
	}))
	counted := make(chan struct{})
	r, k := meteredRelay(t, up, Options{Used: func(Usage) { close(counted) }}, "coder")

	req, err := http.NewRequest("POST", r.URL("a")+"/v1/messages", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("x-api-key", k)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	select {
	case <-counted:
	default:
		t.Fatal("the answer's status line reached its client before the answer was counted")
	}
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, answer, string(body))
	assert.Equal(t, int64(len(answer)), resp.ContentLength)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
}

// A client that shuts its side down and never reads its answer leaves the
// relay's writes to it blocked: the relay waits for no such answer longer
// than the drain limit (it stops writing to the client then, as it stops
// reading the answer), and the next request goes on.
func TestAClientThatStopsReadingHoldsTheNextRequestBackNoLongerThanTheDrainLimit(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Query().Get("n") == "2" {
			io.WriteString(w, "data: second\n\n")
			return
		}
		chunk := []byte("data: " + strings.Repeat("x", 32<<10) + "\n\n")
		for { // an answer without end, until the relay stops reading it
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	r, k := meteredRelay(t, up, Options{Used: func(Usage) {}, drain: 200 * time.Millisecond}, "coder")

	first, err := net.Dial("tcp", r.ln.Addr().String())
	require.NoError(t, err)
	defer first.Close()
	require.Equal(t, "HTTP/1.1 200 OK", call(t, first, k, ""))
	require.NoError(t, first.(*net.TCPConn).CloseWrite()) // and reads no more

	answered := make(chan string, 1)
	go func() {
		req, err := http.NewRequest("POST", r.URL("a")+"/v1/messages?n=2", strings.NewReader("{}"))
		if err != nil {
			answered <- err.Error()
			return
		}
		req.Header.Set("x-api-key", k)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- string(body)
	}()
	select {
	case got := <-answered:
		assert.Equal(t, "data: second\n\n", got)
	case <-time.After(20 * time.Second):
		t.Fatal("the next request waited on for the answer its client stopped reading")
	}
}
