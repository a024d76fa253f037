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

// tapeReq is a request as the cassette keeps it: its headers without
// the key, and its body as it was read.
type tapeReq struct {
	header  http.Header
	raw     *bytes.Buffer
	gzipped bool
}

// body is the request's body, decompressed.
func (t *tapeReq) body() string {
	if t.gzipped {
		if zr, err := gzip.NewReader(bytes.NewReader(t.raw.Bytes())); err == nil {
			if b, err := io.ReadAll(zr); err == nil {
				return string(b)
			}
		}
	}
	return t.raw.String()
}

// readTape returns req marked as taped, with its body kept as it is read:
// read whole now when whole (a replay answers from it), else copied as
// the proxy sends it upstream, so that recording does not hold it back.
func readTape(req *http.Request, whole bool) (*http.Request, *tapeReq, error) {
	t := &tapeReq{header: stripAuth(req.Header), raw: &bytes.Buffer{}, gzipped: strings.EqualFold(req.Header.Get("Content-Encoding"), "gzip")}
	out := req.WithContext(context.WithValue(req.Context(), taping{}, true))
	if req.Body == nil || req.Body == http.NoBody {
		return out, t, nil
	}
	if !whole {
		out.Body = teeBody{Reader: io.TeeReader(req.Body, t.raw), Closer: req.Body}
		return out, t, nil
	}
	if _, err := t.raw.ReadFrom(req.Body); err != nil {
		return req, nil, err
	}
	if err := req.Body.Close(); err != nil {
		return req, nil, err
	}
	out.Body = io.NopCloser(bytes.NewReader(t.raw.Bytes()))
	return out, t, nil
}

// teeBody is a request body copied into the cassette as it is read.
type teeBody struct {
	io.Reader
	io.Closer
}

// exchange is the request with the answer mw forwarded.
func (t *tapeReq) exchange(seat, route string, req *http.Request, mw *meteredWriter, start time.Time) Exchange {
	status := mw.status
	if status == 0 {
		status = http.StatusOK
	}
	return Exchange{Seat: seat, Route: route, Method: req.Method, Path: withoutKey(req), Header: t.header, Request: t.body(),
		Status: status, ResponseHeader: mw.ResponseWriter.Header().Clone(), Response: mw.tape.String(),
		Start: start.UTC(), DurationMS: time.Since(start).Milliseconds()}
}
