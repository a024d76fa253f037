// Package relay is a run's model-API relay: an HTTP reverse proxy on
// 127.0.0.1 that the agent CLIs use as their API base. Each agent holds a
// key made for it alone, good for its own route only; the relay accepts
// only such a key, drops it, and adds the real credential on the way
// upstream, so no process an agent starts can read the user's API key, nor
// spend it on another route. It passes only the API paths a route names,
// counts the usage of every answer it forwards, and refuses new requests
// once the run's budget is spent. Responses pass through untouched:
// streamed ones are flushed as they arrive; one of a known length is sent
// once it has been read whole and counted.
//
// The budget is checked when each request arrives. Requests already in
// flight when it is spent are finished and counted: a CLI makes requests
// side by side (claude asks for a title beside its main streaming answer),
// and a request does not wait for another answer whose client is still
// there to read it. But a program making calls one after another, each
// read to its status line only and hung up on, must not have its next
// call checked before the last answer is counted (the relay reads an
// answer to its end to count it, up to drainLimit after its client left).
// So an answer of a known length (a non-streaming one) shows its client
// nothing, its status line included, before it is counted; and no request
// is checked while an answer that arrived before it is uncounted and its
// client has gone away: it waits for that answer's count (Relay.settle),
// at most drainLimit.
//
// Requests side by side are bounded, so that a program holding a seat's
// key cannot have a hundred answers paid by firing a hundred requests at
// once, each checked before any is counted: at most seatFlights (16)
// requests of one seat (one key) are in flight at once, each from before
// its budget check to its answer's count. One more waits for a slot,
// until its client goes away or the relay closes, and is checked once it
// has one (refused if the budget was spent meanwhile). So once an answer
// spends the budget, at most 15 more answers of its seat are paid after
// it, and at most 16 of each other seat. At most seatWaiters (64) of a
// seat's requests wait; one more is refused at once (503).
package relay

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Route is one upstream API behind the relay, served under /<Name>/.
type Route struct {
	Name     string   // path prefix, e.g. "anthropic"
	Upstream *url.URL // the real API base, e.g. https://api.anthropic.com
	// Credential is the header set on every request upstream, asked for
	// each request (an OAuth token the user's own CLI refreshes is read
	// anew). Nil passes the client's own authorization through (a CLI
	// logged in with a token of its own, which the relay cannot replace).
	Credential func() (Header, error)
	// Paths are the requests the route passes: the method and the path
	// after /<Name>, a path.Match pattern ("/v1beta/models/*:generateContent").
	// Any other request is refused (403). Nil passes nothing.
	Paths []Path
	// Meter, when not nil, makes a Meter for each forwarded answer: the
	// relay counts its usage.
	Meter func() Meter
}

// Path is one request a route passes: a method and a path pattern.
type Path struct{ Method, Pattern string }

// Header is one HTTP header.
type Header struct{ Name, Value string }

// Meter reads the usage an answer reports as its body streams through it.
type Meter interface {
	// Observe sees the next bytes of the answer's body, as forwarded.
	Observe(b []byte)
	// Usage is what the answer reported, read once it has ended.
	Usage() Usage
}

// Usage is the tokens one answer reports, for the model it names.
type Usage struct {
	Model                string
	InputTokens          int64 // all input tokens, cached ones included
	CachedTokens         int64
	OutputTokens         int64
	ReportedCostUSD      float64 // when the API reports a price; 0 otherwise
	Seat, Route          string  // who asked, filled in by the relay
	Path                 string
	Status               int
	Duration             time.Duration
	RequestBytes, Answer int64
	// ResetAt is, for an answer that refused the request for a limit (a
	// 429), when the provider says the limit resets; zero when it did not
	// say. LimitMessage is its words for it.
	ResetAt      time.Time
	LimitMessage string
}

// Options are a relay's hooks into its run.
type Options struct {
	// Allow is asked before each request is forwarded; an error refuses
	// it (402, with the error's text): the run's budget is spent. It is
	// asked once no earlier answer whose client has gone away is
	// uncounted, and once the request has one of its seat's 16 slots:
	// a seat has at most 16 requests between Allow and their count at
	// once, so when one answer spends the budget at most 15 more of its
	// seat are to come (see the package's doc).
	Allow func() error
	// Used is told the usage of every answer the relay forwarded, once
	// the answer has been read to its end and before a request that
	// arrives after its client went away is checked with Allow; an
	// answer of a known length is shown to its client only after Used
	// returned.
	Used func(Usage)

	// drain is how long the relay goes on with an answer whose client
	// went away: drainLimit unless a test sets it.
	drain time.Duration
}

// authHeaders are where the CLIs put a key; each is checked against the
// seat's key and removed before a request goes upstream.
var authHeaders = []string{"x-api-key", "Authorization", "x-goog-api-key"}

// Relay is a running relay.
type Relay struct {
	url  string
	ln   net.Listener
	srv  *http.Server
	opts Options
	err  chan error
	n    int // listeners served, each sends its end on err

	mu   sync.Mutex
	keys map[string]grant // key -> whom it was made for
	// recorder, when set, is handed every exchange; player, when set,
	// answers every request instead of the upstream (a replay).
	recorder *Recorder
	player   *Player
	// flights are the requests being relayed, from their arrival to the
	// count of their answer; seq numbers them in their order of arrival.
	flights map[*flight]struct{}
	seq     uint64

	// closed is done once Close was called: no answer is read on for
	// an agent that went away (drainContext) past it.
	closed context.Context
	close  context.CancelFunc
	// closeOnce makes Close's work happen once; closeErr is its result,
	// which every Close returns.
	closeOnce sync.Once
	closeErr  error
}

// grant is whom a key was made for.
type grant struct {
	route, seat string
	// slots holds one token for each of the key's requests that is past
	// its wait and not yet counted: at most seatFlights (see takeSlot).
	slots chan struct{}
	// waiting holds one token for each of the key's requests waiting for
	// a slot: at most seatWaiters.
	waiting chan struct{}
}

// seatFlights is how many requests of one key (one seat) the relay has
// in flight at once, from before their budget check to their answer's
// count. A request beyond it waits; it does not fail. claude makes a side
// request (a title) beside its main answer, and runs the subagents one
// answer asks for side by side, each one request at a time: 16 leaves
// room for a dozen of them. claude 2.1 starts every subagent of one answer
// at once (twenty, if asked for twenty): those past 16 wait their turn.
const seatFlights = 16

// seatWaiters is how many requests of one seat may wait for a slot at
// once. One more is refused at once (503, waitingFull): a program firing
// thousands of requests with a seat's key is not held by the relay, a
// goroutine and a connection each, without bound. A CLI never comes near
// it.
const seatWaiters = 64

// waitingFull starts the answer to a request refused because its seat's
// slots are taken and seatWaiters of its requests wait already.
const waitingFull = "spawn relay: refused: this seat has as many requests waiting as the relay holds; retry once some are answered"

// Start listens on 127.0.0.1 on a free port and relays each route. It
// returns once the relay accepts connections; Close stops it.
func Start(routes []Route, opts Options) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay: listen: %w", err)
	}
	r := &Relay{url: "http://" + ln.Addr().String(), ln: ln, opts: opts, err: make(chan error, 2), n: 1, keys: map[string]grant{}, flights: map[*flight]struct{}{}}
	if r.opts.drain == 0 {
		r.opts.drain = drainLimit
	}
	r.closed, r.close = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.Handle("/"+rt.Name+"/", http.StripPrefix("/"+rt.Name, r.proxy(rt)))
		mux.Handle("/"+rt.Name, http.StripPrefix("/"+rt.Name, r.proxy(rt)))
	}
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute, ConnContext: withConn}
	go func() { r.err <- r.srv.Serve(ln) }()
	return r, nil
}

// Grant makes a key for one seat (an agent of the run) on one route: the
// key the seat's CLI uses as its API key. It opens that route only.
func (r *Relay) Grant(route, seat string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("relay: make a key: %w", err)
	}
	key := "spawn-relay-" + hex.EncodeToString(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys[key] = grant{route: route, seat: seat, slots: make(chan struct{}, seatFlights), waiting: make(chan struct{}, seatWaiters)}
	return key, nil
}

// ServeUnix serves the relay on a new unix socket at path too (for a
// sandbox without a network, whose bridge forwards to it). Call it at
// most once, before Close.
func (r *Relay) ServeUnix(path string) error {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("relay: listen on %s: %w", path, err)
	}
	r.n++
	go func() { r.err <- r.srv.Serve(ln) }()
	return nil
}

// Port is the relay's TCP port on 127.0.0.1.
func (r *Relay) Port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// URL is the base URL of a route, for the agent's *_BASE_URL variable.
func (r *Relay) URL(route string) string { return r.url + "/" + route }

// Close stops the relay and cuts its open connections. It returns the
// server's error, if it failed other than by being closed; a second Close
// returns the first's.
func (r *Relay) Close() error {
	r.closeOnce.Do(func() {
		r.close()
		err := r.srv.Close()
		for i := 0; i < r.n; i++ {
			if serr := <-r.err; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
				err = errors.Join(err, fmt.Errorf("relay: %w", serr))
			}
		}
		r.closeErr = err
	})
	return r.closeErr
}

// Refusals the relay answers itself, before anything goes upstream.
const (
	// BudgetSpent starts the answer to a request made once the run's
	// budget is spent.
	BudgetSpent = "spawn relay: refused: "
	// notAllowed is the answer to a request for a path the route does not pass.
	notAllowed = "spawn relay: this API path is not one the agent's CLI needs"
)

// proxy relays one route: it refuses a request without a key made for
// this route (401), for a path the route does not pass (403) or once the
// budget is spent (402); holds a request beyond its seat's slots until
// one is free (takeSlot); replaces the key with the route's credential;
// flushes streamed responses at once; and meters each answer.
func (r *Relay) proxy(rt Route) http.Handler {
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(rt.Upstream)
			pr.Out.Host = rt.Upstream.Host
			for _, h := range authHeaders {
				pr.Out.Header.Del(h)
			}
			q := pr.Out.URL.Query()
			if q.Has("key") {
				q.Del("key")
				pr.Out.URL.RawQuery = q.Encode()
			}
			if cred, ok := pr.In.Context().Value(credKey{}).(Header); ok {
				pr.Out.Header.Set(cred.Name, cred.Value)
			}
			if pr.In.Context().Value(taping{}) != nil {
				// The transport asks for gzip and undoes it: the
				// cassette keeps answers as the agent read them.
				pr.Out.Header.Del("Accept-Encoding")
			}
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, upstreamError(rt.Upstream.Host, err), http.StatusBadGateway)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		g, ok := r.authorized(req)
		switch {
		case req.Method == http.MethodHead && (req.URL.Path == "" || req.URL.Path == "/"):
			w.WriteHeader(http.StatusOK) // a CLI's warm-up: nothing to forward
			return
		case !ok || g.route != rt.Name:
			http.Error(w, "spawn relay: this key is not one the run gave for this API", http.StatusUnauthorized)
			return
		case !passes(rt.Paths, req.Method, req.URL.Path):
			http.Error(w, notAllowed+" ("+req.Method+" "+req.URL.Path+")", http.StatusForbidden)
			return
		}
		f, land := r.takeOff(req)
		defer land()
		free, err := r.takeSlot(req.Context(), f, g)
		if errors.Is(err, errWaitingFull) {
			http.Error(w, waitingFull, http.StatusServiceUnavailable)
			return
		}
		if err != nil {
			return // the client went away, or the relay is closing: no one to answer
		}
		defer free()
		if err := r.settle(req.Context(), f); err != nil {
			return // the client went away, or the relay is closing: no one to answer
		}
		if r.opts.Allow != nil {
			if err := r.opts.Allow(); err != nil {
				http.Error(w, BudgetSpent+err.Error(), http.StatusPaymentRequired)
				return
			}
		}
		if f.gone() {
			return // nothing goes upstream for a client that went away
		}
		// The agent's request is read whole before anything goes upstream:
		// the transport reads a request's body on a goroutine of its own,
		// which may outlive the proxy when the upstream fails, and a read of
		// the agent's connection after the answer made the server panic and
		// cut the connection the agent's next request came on.
		if err := wholeBody(req); err != nil {
			code := http.StatusBadRequest
			if errors.Is(err, errRequestTooLarge) {
				code = http.StatusRequestEntityTooLarge
			}
			http.Error(w, "spawn relay: cannot read the request: "+err.Error(), code)
			return
		}
		rec, play := r.tapes()
		var tape *tapeReq
		if rec != nil || play != nil {
			var err error
			if req, tape, err = readTape(req, play != nil); err != nil {
				http.Error(w, "spawn relay: cannot read the request: "+err.Error(), http.StatusBadRequest)
				return
			}
		}
		if rt.Credential != nil && play == nil {
			cred, err := rt.Credential()
			if err != nil {
				http.Error(w, "spawn relay: no credential for "+rt.Name+": "+err.Error(), http.StatusUnauthorized)
				return
			}
			req = req.WithContext(contextWith(req, cred))
		}
		start := time.Now()
		mw := &meteredWriter{ResponseWriter: w}
		if rt.Meter != nil {
			mw.meter = rt.Meter()
		}
		if rec != nil {
			mw.tape = &bytes.Buffer{}
		}
		// What the answer cost is counted whatever happens to the agent
		// that asked: an agent that goes away mid-answer (killed, or a
		// program that reads the status line and hangs up) leaves the
		// relay reading the answer to its end, at most drainLimit after
		// it left, and the answer's usage is metered all the same, before
		// the flight lands. An answer held for its count is sent after
		// it, unless the proxy gave up on it midway (it panics with
		// http.ErrAbortHandler: the client's connection is cut).
		whole := false
		defer func() {
			r.used(g.seat, rt.Name, req, mw, start)
			f.count()
			free()
			if whole {
				mw.release()
			}
		}()
		if play != nil {
			play.answer(mw, g.seat, rt.Name, req.Method, withoutKey(req), tape.body())
		} else {
			ctx, stop := r.drainContext(req.Context(), f, r.opts.drain)
			defer stop()
			p.ServeHTTP(mw, req.WithContext(ctx))
		}
		whole = true
		if rec != nil {
			rec.Add(tape.exchange(g.seat, rt.Name, req, mw, start))
		}
	})
}

// maxRequestBody bounds the request the relay reads whole (wholeBody):
// the model APIs take at most 32 MB. A request is read once it holds one of
// its seat's slots, so a seat's key, whoever holds it, has the relay hold at
// most seatFlights such bodies at once.
const maxRequestBody = 32 << 20

// errRequestTooLarge is wholeBody's error for a body over maxRequestBody.
var errRequestTooLarge = fmt.Errorf("its body is longer than %d MiB", maxRequestBody>>20)

// wholeBody reads req's body into memory and makes it req's body, with its
// length: nothing reads the agent's connection for the request after this.
// A body longer than maxRequestBody is an error.
func wholeBody(req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	if req.ContentLength > maxRequestBody {
		return errors.Join(errRequestTooLarge, req.Body.Close())
	}
	b, err := io.ReadAll(io.LimitReader(req.Body, maxRequestBody+1))
	if err == nil && len(b) > maxRequestBody {
		err = errRequestTooLarge
	}
	if cerr := req.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	req.Body, req.ContentLength, req.TransferEncoding = io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return nil
}

// drainLimit is how long the relay goes on with an answer whose agent
// went away, reading it to meter it whole and writing it to the agent.
const drainLimit = 30 * time.Second

// drainContext is a context for the upstream request of f, a client
// request whose context is parent: it is not cancelled when the client
// goes away (f.left is done), only limit after that, when the relay is
// closed, or by stop. At that limit the relay stops writing to the client
// too (a client that shut its side down and reads no more would hold a
// write, and the answer's count, forever; requests wait for that count).
func (r *Relay) drainContext(parent context.Context, f *flight, limit time.Duration) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	unclosed := context.AfterFunc(r.closed, cancel)
	unwatch := context.AfterFunc(f.left, func() {
		t := time.AfterFunc(limit, func() {
			cancel()
			f.cut()
		})
		context.AfterFunc(ctx, func() { t.Stop() })
	})
	return ctx, func() { unwatch(); unclosed(); cancel() }
}

// used tells the run what one request to route used: the answer's usage
// as its meter read it, its status, size and duration, and a usage
// limit's reset time.
func (r *Relay) used(seat, route string, req *http.Request, mw *meteredWriter, start time.Time) {
	if r.opts.Used == nil {
		return
	}
	u := Usage{}
	if mw.meter != nil {
		u = mw.meter.Usage()
	}
	u.Seat, u.Route, u.Path, u.Status = seat, route, req.URL.Path, mw.status
	u.Duration, u.RequestBytes, u.Answer = time.Since(start), req.ContentLength, mw.n
	if mw.limited {
		at, msg := resetFromBody(mw.body, time.Now())
		if mw.resetAt.IsZero() {
			mw.resetAt = at
		}
		u.ResetAt, u.LimitMessage = mw.resetAt, msg
	}
	r.opts.Used(u)
}

// credKey is the context key of the credential a request goes upstream with.
type credKey struct{}

func contextWith(req *http.Request, cred Header) context.Context {
	return context.WithValue(req.Context(), credKey{}, cred)
}

// passes reports whether one of paths admits method and p.
func passes(paths []Path, method, p string) bool {
	for _, allowed := range paths {
		if allowed.Method != method {
			continue
		}
		if ok, err := path.Match(allowed.Pattern, p); err == nil && ok {
			return true
		}
	}
	return false
}

// authorized returns whom the key req carries (where a CLI puts one) was
// made for.
func (r *Relay) authorized(req *http.Request) (grant, bool) {
	cands := []string{req.Header.Get("x-api-key"), req.Header.Get("x-goog-api-key"), req.URL.Query().Get("key")}
	if a := req.Header.Get("Authorization"); a != "" {
		cands = append(cands, strings.TrimSpace(strings.TrimPrefix(a, "Bearer ")))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, g := range r.keys {
		for _, c := range cands {
			if subtle.ConstantTimeCompare([]byte(c), []byte(key)) == 1 {
				return g, true
			}
		}
	}
	return grant{}, false
}

// meteredWriter forwards an answer to the client and through the meter,
// counting its bytes and keeping its status. An answer of a known length
// that is no event stream (a non-streaming one, which its client reads
// whole anyway) is held, its status line included, until release: the
// relay counts it before its client sees any of it.
type meteredWriter struct {
	http.ResponseWriter
	meter  Meter
	status int
	n      int64 // the answer's bytes written to the client, or held for it
	// held is the answer kept from the client until release, when hold.
	hold bool
	held bytes.Buffer
	// A 429's reset time, from its headers, else its body (kept up to
	// maxLimitBody).
	limited bool
	resetAt time.Time
	body    []byte
	// tape, when not nil, keeps the whole answer for the cassette.
	tape *bytes.Buffer
	// gone is the error writing to the agent met: it went away.
	gone error
}

// maxLimitBody bounds the body of a 429 the relay reads for its reset time.
const maxLimitBody = 64 << 10

// maxHeld bounds the answer the relay holds until it is counted: a longer
// one passes as it arrives.
const maxHeld = 32 << 20

// WriteHeader keeps the answer's status, and sends it on unless the
// answer is held. An informational status (1xx) passes at once.
func (m *meteredWriter) WriteHeader(code int) {
	if code < http.StatusOK {
		m.ResponseWriter.WriteHeader(code)
		return
	}
	m.status = code
	if code == http.StatusTooManyRequests {
		m.limited = true
		m.resetAt = resetFromHeaders(m.ResponseWriter.Header(), time.Now())
	}
	if m.hold = holdable(m.ResponseWriter.Header()); !m.hold {
		m.ResponseWriter.WriteHeader(code)
	}
}

// holdable reports whether an answer with header h has a known length,
// at most maxHeld, and is no event stream.
func holdable(h http.Header) bool {
	n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 || n > maxHeld {
		return false
	}
	ct, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return ct != "text/event-stream"
}

func (m *meteredWriter) Write(b []byte) (int, error) {
	if m.status == 0 {
		m.WriteHeader(http.StatusOK)
	}
	// The whole answer is metered, whether or not the agent is still
	// there to read it: upstream, it is paid for. A write the agent is
	// gone for is no error to the proxy, which reads on to the answer's
	// end (see drainContext).
	if m.meter != nil && m.status < 300 {
		m.meter.Observe(b)
	}
	if m.limited && len(m.body) < maxLimitBody {
		m.body = append(m.body, b[:min(len(b), maxLimitBody-len(m.body))]...)
	}
	if m.hold {
		m.held.Write(b)
		m.n += int64(len(b))
		if m.tape != nil {
			m.tape.Write(b)
		}
		return len(b), nil
	}
	m.forward(b)
	return len(b), nil
}

// forward writes b to the client, unless it went away.
func (m *meteredWriter) forward(b []byte) {
	if m.gone != nil {
		return
	}
	n, err := m.ResponseWriter.Write(b)
	m.n += int64(n)
	if m.tape != nil {
		m.tape.Write(b[:n])
	}
	if err != nil {
		m.gone = err
	}
}

// release sends a held answer to the client: call it once the answer was
// counted.
func (m *meteredWriter) release() {
	if !m.hold {
		return
	}
	m.hold = false
	m.ResponseWriter.WriteHeader(m.status)
	if m.gone == nil {
		if _, err := m.ResponseWriter.Write(m.held.Bytes()); err != nil {
			m.gone = err
		}
	}
	m.held = bytes.Buffer{}
}

// Flush passes the proxy's flushes on, but for a held answer.
func (m *meteredWriter) Flush() {
	if m.hold {
		return
	}
	if f, ok := m.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (m *meteredWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }
