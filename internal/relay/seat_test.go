package relay

import (
	"context"
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

// heldModel is a model whose answers wait until release is called. It
// counts the requests that reach it, by the seat their query names
// (?seat=), at once and in all, and keeps every query it saw.
type heldModel struct {
	held    chan struct{}
	release func()
	mu      sync.Mutex
	now     map[string]int // requests being answered, by seat
	peak    map[string]int // the most of them at once
	total   map[string]int
	asked   []string // the queries seen
}

func newHeldModel() *heldModel {
	m := &heldModel{held: make(chan struct{}), now: map[string]int{}, peak: map[string]int{}, total: map[string]int{}}
	m.release = sync.OnceFunc(func() { close(m.held) })
	return m
}

func (m *heldModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seat := r.URL.Query().Get("seat")
	io.Copy(io.Discard, r.Body) // and the server sees the relay hang up
	m.mu.Lock()
	m.now[seat]++
	m.total[seat]++
	m.peak[seat] = max(m.peak[seat], m.now[seat])
	m.asked = append(m.asked, r.URL.RawQuery)
	m.mu.Unlock()
	select {
	case <-m.held:
	case <-r.Context().Done():
	}
	m.mu.Lock()
	m.now[seat]--
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "data: answer\n\n")
}

// at reads the model's counts of seat under its lock.
func (m *heldModel) at(seat string) (now, peak, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now[seat], m.peak[seat], m.total[seat]
}

// ask posts a model request with key k and query q and reads its answer
// whole; safe on any goroutine.
func ask(ctx context.Context, r *Relay, k, q string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", r.URL("a")+"/v1/messages?"+q, strings.NewReader("{}"))
	if err != nil {
		return 0, err
	}
	req.Header.Set("x-api-key", k)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// fire sends n requests with key k at once, each with the query
// seat=<seat>&n=<i>, and returns a channel that gets each one's status
// (or error) as it is answered.
func fire(r *Relay, k, seat string, n int) <-chan string {
	got := make(chan string, n)
	for i := range n {
		go func() {
			code, err := ask(context.Background(), r, k, fmt.Sprintf("seat=%s&n=%d", seat, i))
			if err != nil {
				got <- err.Error()
				return
			}
			got <- fmt.Sprint(code)
		}()
	}
	return got
}

// statuses collects n answers from got, failing after a while.
func statuses(t *testing.T, got <-chan string, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for range n {
		select {
		case s := <-got:
			seen[s]++
		case <-time.After(30 * time.Second):
			t.Fatalf("%d answers of %d came, %v", len(seen), n, seen)
		}
	}
	return seen
}

// waiting is how many of key's requests wait for a slot.
func (r *Relay) waiting(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keys[key].waiting)
}

// inFlight is how many requests the relay has between their arrival and
// their answer's count, waiting for a slot or not.
func (r *Relay) inFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.flights)
}

// A program run with the coder's relay key fires 40 requests at once: no
// more than seatFlights of them reach the model together; the others wait
// for a slot, none fails, and every one is answered in the end.
func TestASeatHasNoMoreThanItsSlotsUpstreamAtOnce(t *testing.T) {
	model := newHeldModel()
	up := httptest.NewServer(model)
	defer model.release()
	r, k := meteredRelay(t, up, Options{Allow: func() error { return nil }, Used: func(Usage) {}}, "coder")

	const n = 40
	got := fire(r, k, "coder", n)
	require.Eventually(t, func() bool { return r.inFlight() == n }, 10*time.Second, 5*time.Millisecond, "every request arrives")
	require.Eventually(t, func() bool { now, _, _ := model.at("coder"); return now >= seatFlights }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return r.waiting(k) == n-seatFlights }, 10*time.Second, 5*time.Millisecond, "the others wait for a slot")
	now, _, _ := model.at("coder")
	assert.Equal(t, seatFlights, now, "requests of one seat at the model at once")
	model.release()

	assert.Equal(t, map[string]int{"200": n}, statuses(t, got, n), "every request waited for its slot and was answered")
	_, peak, total := model.at("coder")
	assert.Equal(t, seatFlights, peak)
	assert.Equal(t, n, total)
}

// Once one answer has spent the budget, requests fired at once with one
// key have had at most seatFlights answers paid in all (the one that spent
// it and seatFlights-1 more): a request that waited for a slot while the
// budget was spent is refused.
func TestRequestsFiredAtOnceOvershootTheBudgetByLessThanASeatsSlots(t *testing.T) {
	var mu sync.Mutex
	now, peak, total := 0, 0, 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now++
		total++
		peak = max(peak, now)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		now--
		mu.Unlock()
		io.WriteString(w, "event: message_delta usage\n\n")
	}))
	var budget oneAnswerBudget
	r, k := meteredRelay(t, up, budget.options(), "coder")

	const n = 40
	seen := statuses(t, fire(r, k, "coder", n), n)
	mu.Lock()
	defer mu.Unlock()
	assert.LessOrEqual(t, peak, seatFlights, "requests at the model at once")
	assert.LessOrEqual(t, total, seatFlights, "answers paid in all")
	assert.Equal(t, total, seen["200"], "every answer paid reached its client")
	assert.Equal(t, n-total, seen["402"], "every other request was refused for the budget")
}

// The coder's requests holding all of its slots hold back none of the
// reviewer's: each key has slots of its own.
func TestEachSeatHasSlotsOfItsOwn(t *testing.T) {
	model := newHeldModel()
	up := httptest.NewServer(model)
	defer model.release()
	r, coder := meteredRelay(t, up, Options{Allow: func() error { return nil }, Used: func(Usage) {}}, "coder")
	reviewer, err := r.Grant("a", "reviewer")
	require.NoError(t, err)

	const n = 30
	coders := fire(r, coder, "coder", n)
	require.Eventually(t, func() bool { now, _, _ := model.at("coder"); return now >= seatFlights }, 10*time.Second, 5*time.Millisecond)
	reviewers := fire(r, reviewer, "reviewer", n)
	require.Eventually(t, func() bool { return r.inFlight() == 2*n }, 10*time.Second, 5*time.Millisecond, "every request arrives")
	require.Eventually(t, func() bool { now, _, _ := model.at("reviewer"); return now >= seatFlights }, 10*time.Second, 5*time.Millisecond,
		"the reviewer's requests reach the model while the coder's fill its slots")
	for _, key := range []string{coder, reviewer} {
		require.Eventually(t, func() bool { return r.waiting(key) == n-seatFlights }, 10*time.Second, 5*time.Millisecond, "the others wait for a slot")
	}
	for _, seat := range []string{"coder", "reviewer"} {
		now, _, _ := model.at(seat)
		assert.Equal(t, seatFlights, now, "the %s's requests at the model at once", seat)
	}
	model.release()

	assert.Equal(t, map[string]int{"200": n}, statuses(t, coders, n))
	assert.Equal(t, map[string]int{"200": n}, statuses(t, reviewers, n))
	for _, seat := range []string{"coder", "reviewer"} {
		_, peak, total := model.at(seat)
		assert.Equal(t, seatFlights, peak, seat)
		assert.Equal(t, n, total, seat)
	}
}

// A client that gives up while its request waits for a slot leaves: its
// request never reaches the model, and it frees no slot it did not take
// (the next request waits as it would have).
func TestAClientThatGivesUpWaitingForASlotNeverReachesTheModel(t *testing.T) {
	model := newHeldModel()
	up := httptest.NewServer(model)
	defer model.release()
	r, k := meteredRelay(t, up, Options{Allow: func() error { return nil }, Used: func(Usage) {}}, "coder")

	// The seat's slots are all taken.
	held := fire(r, k, "coder", seatFlights)
	require.Eventually(t, func() bool { now, _, _ := model.at("coder"); return now == seatFlights }, 10*time.Second, 5*time.Millisecond)

	// One more request waits, and its client gives up.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := ask(ctx, r, k, "seat=coder&n=gave-up")
		gaveUp <- err
	}()
	require.Eventually(t, func() bool { return r.waiting(k) == 1 }, 10*time.Second, 5*time.Millisecond, "the request waits for a slot")
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	require.Eventually(t, func() bool { return r.inFlight() == seatFlights }, 10*time.Second, 5*time.Millisecond,
		"the relay lets go of a request whose client left while it waited for a slot")

	// The next request still finds every slot taken.
	next := fire(r, k, "coder", 1)
	require.Eventually(t, func() bool { return r.waiting(k) == 1 }, 10*time.Second, 5*time.Millisecond,
		"the next request waits: the one that gave up freed no slot it had not taken")
	_, _, total := model.at("coder")
	assert.Equal(t, seatFlights, total, "requests at the model before any answer ended")

	model.release()
	assert.Equal(t, map[string]int{"200": seatFlights}, statuses(t, held, seatFlights))
	assert.Equal(t, map[string]int{"200": 1}, statuses(t, next, 1))
	_, peak, total := model.at("coder")
	assert.Equal(t, seatFlights, peak)
	assert.Equal(t, seatFlights+1, total)
	model.mu.Lock()
	defer model.mu.Unlock()
	assert.NotContains(t, model.asked, "seat=coder&n=gave-up")
}

// Closing the relay ends every request, those waiting for a slot
// included: none is left behind.
func TestClosingTheRelayEndsTheWaitForASlot(t *testing.T) {
	model := newHeldModel()
	up := httptest.NewServer(model)
	defer up.Close()
	defer model.release()
	u, err := url.Parse(up.URL)
	require.NoError(t, err)
	r, err := Start([]Route{{Name: "a", Upstream: u, Credential: key("x-api-key", "real"), Paths: messages, Meter: func() Meter { return &lengthMeter{} }}},
		Options{Allow: func() error { return nil }, Used: func(Usage) {}})
	require.NoError(t, err)
	k, err := r.Grant("a", "coder")
	require.NoError(t, err)

	got := fire(r, k, "coder", seatFlights+4)
	require.Eventually(t, func() bool { return r.inFlight() == seatFlights+4 }, 10*time.Second, 5*time.Millisecond, "every request arrives")
	require.Eventually(t, func() bool { now, _, _ := model.at("coder"); return now == seatFlights }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, r.Close())
	require.Eventually(t, func() bool { return r.inFlight() == 0 }, 10*time.Second, 5*time.Millisecond, "every request ended")
	for range seatFlights + 4 {
		<-got
	}
	_, _, total := model.at("coder")
	assert.Equal(t, seatFlights, total, "no request that waited went upstream")
}

// A program that fires more requests than a seat has slots and room to
// wait has the rest refused at once (503), each freeing its connection,
// rather than held by the relay without bound; those that waited are
// answered in the end.
func TestRequestsBeyondASeatsWaitingRoomAreRefused(t *testing.T) {
	model := newHeldModel()
	up := httptest.NewServer(model)
	defer model.release()
	r, k := meteredRelay(t, up, Options{Allow: func() error { return nil }, Used: func(Usage) {}}, "coder")

	held := fire(r, k, "coder", seatFlights+seatWaiters)
	require.Eventually(t, func() bool { return r.inFlight() == seatFlights+seatWaiters }, 10*time.Second, 5*time.Millisecond, "every request arrives")
	// Those with a slot reach the model, all of them before any answer:
	// a request that had its slot and had not reached the model when
	// the model was let go arrived after the first answers.
	require.Eventually(t, func() bool { now, _, _ := model.at("coder"); return now == seatFlights }, 10*time.Second, 5*time.Millisecond,
		"a seat's slots' requests reach the model")
	const extra = 10
	assert.Equal(t, map[string]int{"503": extra}, statuses(t, fire(r, k, "coder", extra), extra), "the requests beyond the waiting room")
	model.release()
	assert.Equal(t, map[string]int{"200": seatFlights + seatWaiters}, statuses(t, held, seatFlights+seatWaiters))
	_, peak, total := model.at("coder")
	assert.Equal(t, seatFlights, peak)
	assert.Equal(t, seatFlights+seatWaiters, total)
}
