package relay

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// Record has the relay hand rec every exchange it relays from now on,
// once the answer has ended (nil stops it). The answer streams to the
// agent as it arrives: rec keeps a copy.
func (r *Relay) Record(rec *Recorder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recorder = rec
}

// Play has p answer every request from now on instead of the upstream
// (nil gives the requests back to the upstream): a replay, in which no
// request leaves the relay.
func (r *Relay) Play(p *Player) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.player = p
}

func (r *Relay) tapes() (*Recorder, *Player) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recorder, r.player
}

// taping is the context key that marks a request whose answer is taped.
type taping struct{}

// tapeReq is a request as the cassette keeps it.
type tapeReq struct {
	header http.Header
	body   string // decompressed
}

// readTape reads req's body for the cassette and returns req with a body
// that gives the same bytes again.
func readTape(req *http.Request) (*http.Request, *tapeReq, error) {
	t := &tapeReq{header: stripAuth(req.Header)}
	var raw []byte
	if req.Body != nil {
		var err error
		if raw, err = io.ReadAll(req.Body); err != nil {
			return req, nil, err
		}
		if err := req.Body.Close(); err != nil {
			return req, nil, err
		}
	}
	t.body = string(raw)
	if strings.EqualFold(req.Header.Get("Content-Encoding"), "gzip") {
		if zr, err := gzip.NewReader(bytes.NewReader(raw)); err == nil {
			if b, err := io.ReadAll(zr); err == nil {
				t.body = string(b)
			}
		}
	}
	out := req.WithContext(context.WithValue(req.Context(), taping{}, true))
	out.Body = io.NopCloser(bytes.NewReader(raw))
	out.ContentLength = int64(len(raw))
	return out, t, nil
}

// exchange is the request with the answer mw forwarded.
func (t *tapeReq) exchange(seat, route string, req *http.Request, mw *meteredWriter, start time.Time) Exchange {
	status := mw.status
	if status == 0 {
		status = http.StatusOK
	}
	return Exchange{Seat: seat, Route: route, Method: req.Method, Path: withoutKey(req), Header: t.header, Request: t.body,
		Status: status, ResponseHeader: mw.ResponseWriter.Header().Clone(), Response: mw.tape.String(),
		Start: start.UTC(), DurationMS: time.Since(start).Milliseconds()}
}
