package relay

import (
	"bufio"
	"errors"
	"fmt"
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
	defer up.Close()
	u, err := url.Parse(up.URL)
	require.NoError(t, err)
	var budget oneAnswerBudget
	r, err := Start([]Route{{Name: "a", Upstream: u, Credential: key("x-api-key", "real"), Paths: messages, Meter: func() Meter { return &lengthMeter{} }}}, budget.options())
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	k, err := r.Grant("a", "coder")
	require.NoError(t, err)
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

