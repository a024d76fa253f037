package relay

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// Player answers a replay's requests from a cassette: nothing goes to a
// model. A request is matched by its seat, route, method, path and body,
// each side normalised with its own run's Context (Normalise): the first
// exchange of the cassette not yet used that matches answers it, its
// recorded answer made for this run (the recorded run's paths in it are
// this run's). A request that matches none is answered 400 and is the
// divergence the replay reports (the first one only). Safe for
// concurrent use.
type Player struct {
	xs       []Exchange
	keys     []string         // each exchange's request, normalised with recorded
	masks    []*regexp.Regexp // for a request with redacted secrets: what it matches; nil otherwise
	recorded Context
	live     func() Context
	redact   func(string) string

	mu       sync.Mutex
	used     []bool
	answered int
	missed   int
	first    *Divergence
}

// Divergence is the first request of a replay that no recorded request
// matched, and the recorded request it was compared with: the seat's
// first one not yet answered ("" when the cassette held no more of the
// seat's). Both are normalised and Readable; Diff is their line diff.
type Divergence struct {
	Seat     string `json:"seat"`
	Route    string `json:"route"`
	Method   string `json:"method"`
	Path     string `json:"path"`
	Seq      int    `json:"seq"` // the recorded exchange compared; 0 for none
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Diff     string `json:"diff"`
}

// PlayResult is what a player did.
type PlayResult struct {
	Answered int // requests answered from the cassette
	Missed   int // requests no recorded one matched
	Unused   int // recorded exchanges no request asked for
	// Divergence is the first request missed; nil when none was.
	Divergence *Divergence
}

// NewPlayer answers from xs (a cassette's exchanges, ReadCassette's),
// normalising them with recorded (the recorded run's Context) and each
// request with live() (this run's, asked for each request: its commits
// grow). redact is applied to a request before it is compared (the
// cassette's are redacted); nil applies nothing. redacted is what the
// cassette's redactor wrote for a secret: there a request of the replay
// may hold any text (a secret the replay's environment does not name).
func NewPlayer(xs []Exchange, recorded Context, live func() Context, redact func(string) string, redacted string) *Player {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	p := &Player{xs: xs, recorded: recorded, live: live, redact: redact, used: make([]bool, len(xs))}
	for _, e := range xs {
		k := Normalise(e.Request, recorded)
		p.keys = append(p.keys, k)
		var mask *regexp.Regexp
		if redacted != "" && strings.Contains(k, redacted) {
			parts := strings.Split(k, redacted)
			for i := range parts {
				parts[i] = regexp.QuoteMeta(parts[i])
			}
			mask, _ = regexp.Compile(`^` + strings.Join(parts, `(?s:.+?)`) + `$`) // nil (exact match) if it cannot be compiled
		}
		p.masks = append(p.masks, mask)
	}
	return p
}

// matches reports whether the normalised request key matches exchange i.
func (p *Player) matches(i int, key string) bool {
	if p.masks[i] != nil {
		return p.masks[i].MatchString(key)
	}
	return p.keys[i] == key
}

// Result is what the player did so far.
func (p *Player) Result() PlayResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := PlayResult{Answered: p.answered, Missed: p.missed, Divergence: p.first}
	for _, u := range p.used {
		if !u {
			r.Unused++
		}
	}
	return r
}

// answer answers req (its body read into body) of seat on route, path
// being its path after the route's prefix, with its query.
func (p *Player) answer(w http.ResponseWriter, seat, route, method, path, body string) {
	live := p.live()
	key := Normalise(p.redact(body), live)
	p.mu.Lock()
	found, candidate := -1, -1
	for i, e := range p.xs {
		if p.used[i] || e.Seat != seat || e.Route != route || e.Method != method || Normalise(e.Path, p.recorded) != Normalise(path, live) {
			if !p.used[i] && e.Seat == seat && candidate < 0 {
				candidate = i
			}
			continue
		}
		if candidate < 0 {
			candidate = i
		}
		if p.matches(i, key) {
			found = i
			break
		}
	}
	if found < 0 {
		p.missed++
		if p.first == nil {
			d := &Divergence{Seat: seat, Route: route, Method: method, Path: path, Replayed: Readable(key)}
			if candidate >= 0 {
				d.Seq, d.Recorded = p.xs[candidate].Seq, Readable(p.keys[candidate])
			}
			d.Diff = Diff(d.Recorded, d.Replayed, 200)
			p.first = d
		}
		p.mu.Unlock()
		http.Error(w, fmt.Sprintf("spawn replay: no request of the cassette matches this one (%s %s of the %s seat); the replay diverged from the recorded run here", method, path, seat), http.StatusBadRequest)
		return
	}
	p.used[found] = true
	p.answered++
	e := p.xs[found]
	p.mu.Unlock()
	for k, vs := range e.ResponseHeader {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Content-Encoding", "Connection":
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(e.Status)
	if _, err := io.WriteString(w, rebase(e.Response, p.recorded, live)); err != nil {
		return // the agent is gone: nothing to tell it
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
