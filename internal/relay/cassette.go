package relay

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// CassetteSchema names the cassette format: a gzip stream of JSON lines,
// a CassetteHeader first, then one Exchange a line in the order the
// answers ended.
const CassetteSchema = "spawn.cassette/v1"

// DefaultCassetteLimit is the bound of a run's cassette on disk (64 MiB,
// compressed): recording stops before a write would pass it.
const DefaultCassetteLimit = 64 << 20

// CassetteHeader is a cassette's first line: its schema and the run's
// Context when it began.
type CassetteHeader struct {
	Schema  string  `json:"schema"`
	Context Context `json:"context"`
}

// Exchange is one request an agent made through the relay and the answer
// it got, as the cassette keeps it: redacted, without the seat's key.
type Exchange struct {
	// Seq numbers the exchanges of a cassette from 1, in the order the
	// relay was handed them.
	Seq int `json:"seq"`
	// Seat is who asked (the seat's relay key says it), Route the API.
	Seat  string `json:"seat"`
	Route string `json:"route"`
	// Method and Path are the request's; Path is the path after the
	// route's prefix, with its query ("/v1/messages?beta=true").
	Method string `json:"method"`
	Path   string `json:"path"`
	// Header is the request's headers without the key.
	Header http.Header `json:"header"`
	// Request is the request's body (decompressed). In a cassette on disk
	// it may be a change of the seat's earlier request Base: that
	// request's first Prefix bytes, then Request, then its last Suffix
	// bytes. ReadCassette undoes it.
	Request string `json:"request"`
	Base    int    `json:"base,omitempty"`
	Prefix  int    `json:"prefix,omitempty"`
	Suffix  int    `json:"suffix,omitempty"`
	// Status, ResponseHeader and Response are the answer as the agent got
	// it (decompressed).
	Status         int         `json:"status"`
	ResponseHeader http.Header `json:"response_header"`
	Response       string      `json:"response"`
	Start          time.Time   `json:"start"`
	DurationMS     int64       `json:"duration_ms"`
}

// CassetteSummary is what a recorder wrote.
type CassetteSummary struct {
	Bytes     int64 // the file's size
	Exchanges int   // exchanges written
	// Truncated is set when recording stopped at the bound.
	Truncated bool
}

// Recorder writes a run's cassette. Add hands it an exchange and returns
// at once; one goroutine redacts, encodes, compresses and writes, so the
// relay never waits for the disk. It is safe for concurrent use.
type Recorder struct {
	limit  int64
	redact func(string) string
	full   func(limit int64)

	mu     sync.Mutex
	queue  []Exchange
	seq    int
	closed bool
	wake   chan struct{}
	done   chan struct{}

	// Owned by the writing goroutine until done is closed.
	f       *os.File
	counted *countingWriter
	gz      *gzip.Writer
	last    map[string]Exchange // seat -> its last request written whole
	sum     CassetteSummary
	err     error
}

// NewRecorder creates the cassette at path (it must not exist) with h as
// its first line, to hold at most limit bytes (DefaultCassetteLimit when
// 0). redact is applied to every text it writes (nil writes them as they
// are); full, when not nil, is told once, from the writing goroutine, when
// an exchange would pass the bound and recording stops. Close finishes the
// file.
func NewRecorder(path string, h CassetteHeader, limit int64, redact func(string) string, full func(limit int64)) (*Recorder, error) {
	if limit <= 0 {
		limit = DefaultCassetteLimit
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("relay: create the cassette: %w", err)
	}
	r := &Recorder{limit: limit, redact: redact, full: full, wake: make(chan struct{}, 1), done: make(chan struct{}),
		f: f, last: map[string]Exchange{}}
	r.counted = &countingWriter{w: f}
	// BestSpeed: every run records, and at the default level compressing a
	// solo run's few exchanges took a sixth of spawn's own CPU time.
	if r.gz, err = gzip.NewWriterLevel(r.counted, gzip.BestSpeed); err != nil {
		return nil, errors.Join(fmt.Errorf("relay: %w", err), f.Close())
	}
	h.Schema = CassetteSchema
	lits := map[string]string{}
	for k, v := range h.Context.Literals {
		lits[k] = redact(v)
	}
	h.Context.Literals = lits
	if err := r.writeLine(h); err != nil {
		return nil, errors.Join(err, f.Close(), os.Remove(path))
	}
	go r.loop()
	return r, nil
}

// Add queues e for writing, numbering it. It never blocks on the disk;
// after Close it does nothing.
func (r *Recorder) Add(e Exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.seq++
	e.Seq = r.seq
	r.queue = append(r.queue, e)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Close writes what is queued, ends the compressed stream and closes the
// file. It returns what was written and the first error writing met.
func (r *Recorder) Close() (CassetteSummary, error) {
	r.mu.Lock()
	already := r.closed
	r.closed = true
	r.mu.Unlock()
	if !already {
		close(r.wake)
	}
	<-r.done
	return r.sum, r.err
}

// loop writes the queue until Close.
func (r *Recorder) loop() {
	defer close(r.done)
	for {
		_, open := <-r.wake
		r.mu.Lock()
		batch := r.queue
		r.queue = nil
		r.mu.Unlock()
		for _, e := range batch {
			r.write(e)
		}
		if !open {
			break
		}
	}
	err := r.gz.Close()
	if r.err == nil && !r.sum.Truncated {
		r.err = err
	}
	if cerr := r.f.Close(); r.err == nil {
		r.err = cerr
	}
	r.sum.Bytes = r.counted.n
	if r.err != nil {
		r.err = fmt.Errorf("relay: write the cassette: %w", r.err)
	}
}

// write redacts e, makes its request a change of the seat's last one,
// and writes it, unless that could pass the bound: then recording stops.
func (r *Recorder) write(e Exchange) {
	if r.err != nil || r.sum.Truncated {
		return
	}
	e.Request, e.Response, e.Path = r.redact(e.Request), r.redact(e.Response), r.redact(e.Path)
	e.Header, e.ResponseHeader = redactHeader(e.Header, r.redact), redactHeader(e.ResponseHeader, r.redact)
	whole := e.Request
	if prev, ok := r.last[e.Seat]; ok {
		e.Base, e.Prefix, e.Suffix = prev.Seq, commonPrefix(prev.Request, whole), 0
		e.Suffix = commonSuffix(prev.Request[e.Prefix:], whole[e.Prefix:])
		e.Request = whole[e.Prefix : len(whole)-e.Suffix]
		if e.Prefix+e.Suffix < 64 { // not worth it
			e.Base, e.Prefix, e.Suffix, e.Request = 0, 0, 0, whole
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		r.err = err
		return
	}
	// Deflate's worst case adds 5 bytes per 16 KiB block; a flush, 5 more.
	if worst := r.counted.n + int64(len(b)) + int64(len(b))/16384*5 + 64; worst > r.limit {
		r.sum.Truncated = true
		if r.full != nil {
			r.full(r.limit)
		}
		return
	}
	if err := r.writeRaw(b); err != nil {
		r.err = err
		return
	}
	r.last[e.Seat] = Exchange{Seq: e.Seq, Request: whole}
	r.sum.Exchanges++
}

func (r *Recorder) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return r.writeRaw(b)
}

// writeRaw writes one line and flushes it to the file: a run that dies
// leaves a cassette readable up to its last exchange.
func (r *Recorder) writeRaw(b []byte) error {
	if _, err := r.gz.Write(append(b, '\n')); err != nil {
		return err
	}
	return r.gz.Flush()
}

func redactHeader(h http.Header, redact func(string) string) http.Header {
	out := http.Header{}
	for k, vs := range h {
		for _, v := range vs {
			out.Add(k, redact(v))
		}
	}
	return out
}

// commonPrefix is the length of the longest common prefix of a and b,
// cut back to a rune's start.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	for n > 0 && n < len(b) && !utf8.RuneStart(b[n]) {
		n--
	}
	return n
}

// commonSuffix is the length of the longest common suffix of a and b,
// cut to a rune's start.
func commonSuffix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	for n > 0 && !utf8.RuneStart(b[len(b)-n]) {
		n--
	}
	return n
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// ReadCassette reads the cassette at path: its header and its exchanges,
// each request whole again. A cassette whose run died while writing it
// ends early: what was written before is returned, without an error.
func ReadCassette(path string) (h CassetteHeader, xs []Exchange, err error) {
	f, err := os.Open(path)
	if err != nil {
		return h, nil, err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return h, nil, fmt.Errorf("%s is not a cassette: %w", path, err)
	}
	br := bufio.NewReaderSize(zr, 1<<20)
	whole := map[int]string{}
	for first := true; ; first = false {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			return h, xs, fmt.Errorf("read %s: %w", path, rerr)
		}
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		if complete {
			if first {
				if err := json.Unmarshal(line, &h); err != nil || h.Schema != CassetteSchema {
					return h, nil, fmt.Errorf("%s is not a cassette of this spawn (schema %q, want %q)", path, h.Schema, CassetteSchema)
				}
			} else {
				var e Exchange
				if err := json.Unmarshal(line, &e); err != nil {
					return h, xs, fmt.Errorf("read %s: exchange %d: %w", path, len(xs)+1, err)
				}
				if e.Base > 0 {
					base, ok := whole[e.Base]
					if !ok || e.Prefix+e.Suffix > len(base) {
						return h, xs, fmt.Errorf("read %s: exchange %d changes exchange %d, which it does not hold", path, e.Seq, e.Base)
					}
					e.Request = base[:e.Prefix] + e.Request + base[len(base)-e.Suffix:]
					e.Base, e.Prefix, e.Suffix = 0, 0, 0
				}
				whole[e.Seq] = e.Request
				xs = append(xs, e)
			}
		}
		if rerr != nil {
			if first && !complete {
				return h, nil, fmt.Errorf("%s is not a cassette: it is empty", path)
			}
			return h, xs, nil
		}
	}
}

// WriteCassette writes h and xs as a new cassette at path, each request
// whole: for tools and tests that edit a cassette.
func WriteCassette(path string, h CassetteHeader, xs []Exchange) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	zw := gzip.NewWriter(f)
	enc := json.NewEncoder(zw)
	h.Schema = CassetteSchema
	if err := enc.Encode(h); err != nil {
		return err
	}
	for _, e := range xs {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return zw.Close()
}

// stripAuth is h without the headers that carry a key.
func stripAuth(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range authHeaders {
		out.Del(k)
	}
	return out
}

// withoutKey is a request's path and query without a key in the query.
func withoutKey(req *http.Request) string {
	p := req.URL.Path
	q := req.URL.Query()
	if q.Has("key") {
		q.Del("key")
	}
	if enc := q.Encode(); enc != "" {
		p += "?" + enc
	}
	return strings.TrimSpace(p)
}
