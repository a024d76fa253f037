// Package relay is a run's model-API relay: an HTTP reverse proxy on
// 127.0.0.1 that the agent CLIs use as their API base. The agents hold a
// throwaway key made for the run; the relay accepts only that key, drops
// it, and adds the real credential on the way upstream, so no process an
// agent starts can read the user's API key. Responses, streamed ones
// included, pass through untouched and are flushed as they arrive.
package relay

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

// Route is one upstream API behind the relay, served under /<Name>/.
type Route struct {
	Name     string   // path prefix, e.g. "anthropic"
	Upstream *url.URL // the real API base, e.g. https://api.anthropic.com
	// Credential is the header set on every request upstream (e.g.
	// "x-api-key" with the user's key). A zero Credential passes the
	// client's own authorization through (a CLI logged in with a token of
	// its own, which the relay cannot replace).
	Credential Header
}

// Header is one HTTP header.
type Header struct{ Name, Value string }

// authHeaders are where the CLIs put a key; each is checked against the
// throwaway key and removed before a request goes upstream.
var authHeaders = []string{"x-api-key", "Authorization", "x-goog-api-key"}

// Relay is a running relay.
type Relay struct {
	// Key is the run's throwaway key: the agents use it as their API key.
	Key string
	url string
	ln  net.Listener
	srv *http.Server
	err chan error
	n   int // listeners served, each sends its end on err
}

// Start listens on 127.0.0.1 on a free port and relays each route. It
// returns once the relay accepts connections; Close stops it.
func Start(routes []Route) (*Relay, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay: listen: %w", err)
	}
	r := &Relay{Key: key, url: "http://" + ln.Addr().String(), ln: ln, err: make(chan error, 2), n: 1}
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.Handle("/"+rt.Name+"/", http.StripPrefix("/"+rt.Name, r.proxy(rt)))
	}
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() { r.err <- r.srv.Serve(ln) }()
	return r, nil
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
// server's error, if it failed other than by being closed.
func (r *Relay) Close() error {
	err := r.srv.Close()
	for i := 0; i < r.n; i++ {
		if serr := <-r.err; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, fmt.Errorf("relay: %w", serr))
		}
	}
	return err
}

// proxy relays one route: it refuses a request without the throwaway key
// (401), replaces the key with the route's credential, and flushes
// streamed responses at once.
func (r *Relay) proxy(rt Route) http.Handler {
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(rt.Upstream)
			pr.Out.Host = rt.Upstream.Host
			if rt.Credential.Name != "" {
				for _, h := range authHeaders {
					pr.Out.Header.Del(h)
				}
				q := pr.Out.URL.Query()
				if q.Has("key") {
					q.Del("key")
					pr.Out.URL.RawQuery = q.Encode()
				}
				pr.Out.Header.Set(rt.Credential.Name, rt.Credential.Value)
			}
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, upstreamError(rt.Upstream.Host, err), http.StatusBadGateway)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if rt.Credential.Name != "" && !r.authorized(req) {
			http.Error(w, "spawn relay: this key is not the run's", http.StatusUnauthorized)
			return
		}
		p.ServeHTTP(w, req)
	})
}

// authorized reports whether req carries the throwaway key where a CLI
// puts one.
func (r *Relay) authorized(req *http.Request) bool {
	cands := []string{req.Header.Get("x-api-key"), req.Header.Get("x-goog-api-key"), req.URL.Query().Get("key")}
	if a := req.Header.Get("Authorization"); a != "" {
		cands = append(cands, strings.TrimSpace(strings.TrimPrefix(a, "Bearer ")))
	}
	ok := false
	for _, c := range cands {
		if subtle.ConstantTimeCompare([]byte(c), []byte(r.Key)) == 1 {
			ok = true
		}
	}
	return ok
}

func newKey() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("relay: make a key: %w", err)
	}
	return "spawn-relay-" + hex.EncodeToString(b), nil
}
