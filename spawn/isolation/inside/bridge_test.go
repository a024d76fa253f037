package inside

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

	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/relay"
)

// A program in a model-only sandbox calls the model through the bridge,
// reads an answer's status line, hangs up and calls again at once: the
// bridge carries the hang-up to the relay before the next call, which is
// refused once the first answer spent the budget, though that answer
// streams on for a while after its status line.
func TestTheBridgeCarriesAHangUpBeforeTheNextCall(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, "event: message_delta usage\n\n")
	}))
	defer up.Close()
	u, err := url.Parse(up.URL)
	require.NoError(t, err)
	for i := range 20 {
		var mu sync.Mutex
		spent := false
		r, err := relay.Start([]relay.Route{{Name: "a", Upstream: u, Paths: []relay.Path{{Method: "POST", Pattern: "/v1/messages"}}}}, relay.Options{
			Allow: func() error {
				mu.Lock()
				defer mu.Unlock()
				if spent {
					return errors.New("spent")
				}
				return nil
			},
			Used: func(relay.Usage) {
				mu.Lock()
				defer mu.Unlock()
				spent = true
			},
		})
		require.NoError(t, err)
		k, err := r.Grant("a", "coder")
		require.NoError(t, err)
		sock := filepath.Join(t.TempDir(), "relay.sock")
		require.NoError(t, r.ServeUnix(sock))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go forward(ln, sock)

		call := func() string {
			c, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			body := `{"stream":true}`
			_, err = fmt.Fprintf(c, "POST /a/v1/messages HTTP/1.1\r\nHost: relay\r\nx-api-key: %s\r\nContent-Length: %d\r\n\r\n%s", k, len(body), body)
			require.NoError(t, err)
			status, err := bufio.NewReader(c).ReadString('\n')
			require.NoError(t, err)
			return strings.TrimSpace(status)
		}
		require.Equal(t, "HTTP/1.1 200 OK", call(), "call %d", i)
		require.Equal(t, "HTTP/1.1 402 Payment Required", call(), "call %d: the next call after a hang-up", i)
		require.NoError(t, ln.Close())
		require.NoError(t, r.Close())
	}
}
