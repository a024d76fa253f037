package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxRateLimitWaits bounds how many rate limits one request waits out
// before its answer is returned as it is.
const maxRateLimitWaits = 6

// secondaryBackoff is the first wait for a secondary rate limit that
// names no time, doubled at each further one.
const secondaryBackoff = time.Minute

// errAttemptTimeout is one attempt of a request taking longer than the
// request timeout.
var errAttemptTimeout = errors.New("the GitHub API did not answer in time")

// errPastDeadline is a wait that would outlast the caller's deadline.
var errPastDeadline = errors.New("the wait would outlast the deadline")

// callClass says how a request may be treated: writes are serialised and
// spaced; idempotent requests are repeated after a 5xx or a timeout.
type callClass struct {
	write      bool
	idempotent bool
}

type classKey struct{}

// withClass marks the requests made under ctx.
func withClass(ctx context.Context, cls callClass) context.Context {
	return context.WithValue(ctx, classKey{}, cls)
}

func classify(req *http.Request) callClass {
	if cls, ok := req.Context().Value(classKey{}).(callClass); ok {
		return cls
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		return callClass{idempotent: true}
	case http.MethodPost:
		return callClass{write: true}
	default:
		return callClass{write: true, idempotent: true}
	}
}

// pacer is the state shared by every client of one run: the write lock,
// the last write, the primary limit known used up.
type pacer struct {
	opts options
	sem  chan struct{} // held by the write in flight

	mu        sync.Mutex
	lastWrite time.Time
	// blocked holds, by limitKey, when a primary limit used up resets.
	blocked map[string]time.Time
}

// limitKey names a primary limit: each identity (token) has one per
// resource. GraphQL has its own; the REST calls spawn makes are all "core".
func limitKey(token Token, res string) string { return token.Reveal() + "\x00" + res }

func resource(req *http.Request) string {
	if strings.HasSuffix(req.URL.Path, "/graphql") {
		return "graphql"
	}
	return "core"
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait reports and sleeps d, unless d would outlast ctx's deadline
// (errPastDeadline, at once) or ctx ends first (its error).
func (p *pacer) wait(ctx context.Context, d time.Duration, why string) error {
	if d <= 0 {
		return ctx.Err()
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return fmt.Errorf("%s: waiting %s: %w", why, d.Round(time.Second), errPastDeadline)
	}
	p.opts.report(d, why)
	return p.opts.sleep(ctx, d)
}

// backoffFor is the wait before try attempt+1 after a 5xx or a timeout.
func (p *pacer) backoffFor(attempt int) time.Duration {
	return p.opts.backoff << min(attempt-1, 10)
}

// acquireWrite takes the write lock and waits out the spacing since the
// last write. The returned func releases the lock.
func (p *pacer) acquireWrite(ctx context.Context) (func(), error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release := func() {
		p.mu.Lock()
		p.lastWrite = p.opts.now()
		p.mu.Unlock()
		<-p.sem
	}
	p.mu.Lock()
	gap := p.opts.minWrite - p.opts.now().Sub(p.lastWrite)
	p.mu.Unlock()
	if gap > 0 && p.opts.minWrite > 0 {
		if err := p.opts.sleep(ctx, gap); err != nil {
			<-p.sem
			return nil, err
		}
	}
	return release, nil
}

// waitPrimary waits until the primary limit key, when known to be used
// up, resets.
func (p *pacer) waitPrimary(ctx context.Context, key string) error {
	p.mu.Lock()
	until := p.blocked[key]
	p.mu.Unlock()
	if until.IsZero() {
		return nil
	}
	d := until.Sub(p.opts.now())
	if d <= 0 {
		return nil
	}
	if err := p.wait(ctx, d+time.Second, "GitHub's primary rate limit is used up until "+until.UTC().Format(time.TimeOnly)+" UTC"); err != nil {
		return rateLimited(err, until, "API rate limit exceeded")
	}
	return nil
}

// rateLimited turns a refused rate-limit wait into a *RateLimitError,
// keeping a cancelled context's error.
func rateLimited(err error, until time.Time, msg string) error {
	if errors.Is(err, errPastDeadline) {
		return &RateLimitError{Until: until, Message: msg}
	}
	return err
}

// transport sends requests with the token, serialises and spaces writes,
// waits out rate limits, and retries what may be retried. It reads every
// answer whole, so an attempt's timeout never cuts a body being read.
type transport struct {
	base  http.RoundTripper
	token Token
	pacer *pacer
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	p := t.pacer
	cls := classify(req)
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		if cerr := req.Body.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
	}
	if cls.write {
		release, err := p.acquireWrite(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	failures, limits := 0, 0
	for {
		if err := p.waitPrimary(ctx, limitKey(t.token, resource(req))); err != nil {
			return nil, err
		}
		resp, data, err := t.attempt(ctx, req, body)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			failures++
			if !cls.idempotent || failures >= p.opts.maxAttempts {
				return nil, err
			}
			if werr := p.wait(ctx, p.backoffFor(failures), fmt.Sprintf("GitHub did not answer %s %s (%v); retrying", req.Method, req.URL.Path, err)); werr != nil {
				return nil, errors.Join(err, werr)
			}
			continue
		}
		if d, why, until, limited := p.rateLimit(resp, data, limits); limited {
			limits++
			if limits > maxRateLimitWaits {
				return responseWith(resp, data), nil
			}
			if werr := p.wait(ctx, d, why); werr != nil {
				return nil, rateLimited(werr, until, gitHubMessage(data))
			}
			continue
		}
		p.observe(t.token, resource(req), resp)
		if resp.StatusCode >= 500 && cls.idempotent && failures+1 < p.opts.maxAttempts {
			failures++
			if werr := p.wait(ctx, p.backoffFor(failures), fmt.Sprintf("GitHub answered %s %s with %d; retrying", req.Method, req.URL.Path, resp.StatusCode)); werr != nil {
				return nil, errors.Join(fmt.Errorf("%d %s", resp.StatusCode, gitHubMessage(data)), werr)
			}
			continue
		}
		return responseWith(resp, data), nil
	}
}

// attempt sends req once with its own timeout and reads the answer whole.
func (t *transport) attempt(ctx context.Context, req *http.Request, body []byte) (*http.Response, []byte, error) {
	actx, cancel := context.WithTimeoutCause(ctx, t.pacer.opts.attemptTimeout, errAttemptTimeout)
	defer cancel()
	r := req.Clone(actx)
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	if t.token != "" {
		r.Header.Set("Authorization", "Bearer "+t.token.Reveal())
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		if context.Cause(actx) == errAttemptTimeout {
			return nil, nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, errAttemptTimeout)
		}
		return nil, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if context.Cause(actx) == errAttemptTimeout {
			return nil, nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, errAttemptTimeout)
		}
		return nil, nil, fmt.Errorf("read answer of %s %s: %w", req.Method, req.URL.Path, err)
	}
	return resp, data, nil
}

func responseWith(resp *http.Response, data []byte) *http.Response {
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	return resp
}

// observe notes a primary limit used up by this very answer, so the next
// request waits for the reset instead of being refused.
func (p *pacer) observe(token Token, res string, resp *http.Response) {
	if resp.Header.Get("X-RateLimit-Remaining") != "0" {
		return
	}
	reset, ok := resetTime(resp.Header)
	if !ok {
		return
	}
	if r := resp.Header.Get("X-RateLimit-Resource"); r != "" {
		res = r
	}
	key := limitKey(token, res)
	p.mu.Lock()
	if reset.After(p.blocked[key]) {
		p.blocked[key] = reset
	}
	p.mu.Unlock()
}

func resetTime(h http.Header) (time.Time, bool) {
	v, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil || v <= 0 {
		return time.Time{}, false
	}
	return time.Unix(v, 0), true
}

// rateLimit reads a rate-limited answer: how long to wait and why.
// A secondary limit waits retry-after, else until x-ratelimit-reset when
// x-ratelimit-remaining is 0, else a minute doubled at each further one; a
// primary limit (x-ratelimit-remaining 0 on a 403 or 429, or GraphQL's
// RATE_LIMITED) waits until the reset.
func (p *pacer) rateLimit(resp *http.Response, data []byte, earlier int) (time.Duration, string, time.Time, bool) {
	status := resp.StatusCode
	exhausted := resp.Header.Get("X-RateLimit-Remaining") == "0"
	graphQLLimited := status == http.StatusOK && exhausted && bytes.Contains(data, []byte(`"RATE_LIMITED"`))
	if status != http.StatusForbidden && status != http.StatusTooManyRequests && !graphQLLimited {
		return 0, "", time.Time{}, false
	}
	msg := strings.ToLower(gitHubMessage(data))
	reset, hasReset := resetTime(resp.Header)
	retryAfter := resp.Header.Get("Retry-After")
	secondary := strings.Contains(msg, "secondary rate limit") || strings.Contains(msg, "abuse") || retryAfter != ""
	switch {
	case secondary && retryAfter != "":
		if s, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && s >= 0 {
			d := time.Duration(s) * time.Second
			return d, fmt.Sprintf("GitHub's secondary rate limit asks to wait %s (retry-after)", d), p.opts.now().Add(d), true
		}
		fallthrough
	case secondary && exhausted && hasReset:
		return reset.Sub(p.opts.now()) + time.Second, "GitHub's secondary rate limit lasts until x-ratelimit-reset " + reset.UTC().Format(time.TimeOnly) + " UTC", reset, true
	case secondary:
		d := secondaryBackoff << min(earlier, 6)
		return d, fmt.Sprintf("GitHub's secondary rate limit named no time; backing off %s", d), p.opts.now().Add(d), true
	case (exhausted || graphQLLimited) && hasReset:
		return reset.Sub(p.opts.now()) + time.Second, "GitHub's primary rate limit is used up until " + reset.UTC().Format(time.TimeOnly) + " UTC", reset, true
	}
	return 0, "", time.Time{}, false
}

// gitHubMessage is the "message" of a GitHub error body (or the first
// GraphQL error's), "" when there is none.
func gitHubMessage(data []byte) string {
	var body struct {
		Message string `json:"message"`
		Errors  []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(data, &body) != nil {
		return ""
	}
	if body.Message == "" && len(body.Errors) > 0 {
		return body.Errors[0].Message
	}
	return body.Message
}
