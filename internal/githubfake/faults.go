package githubfake

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FaultKind says how an injected fault answers.
type FaultKind int

const (
	// ServerError answers Status (default 502) with {"message": ...}.
	// With AfterEffect the request is carried out first and only its
	// answer is lost, as when a gateway times out after the backend
	// committed.
	ServerError FaultKind = iota + 1
	// SecondaryRateLimit answers Status (403, the default, or 429) with
	// GitHub's "You have exceeded a secondary rate limit" body, and a
	// retry-after header when RetryAfter is set. The request has no effect.
	SecondaryRateLimit
	// PrimaryRateLimit answers as when the hourly limit is used up:
	// x-ratelimit-remaining: 0 and x-ratelimit-reset ResetIn from now
	// (default one minute). REST gets Status (403, the default, or 429)
	// and "API rate limit exceeded for user ID ..."; GraphQL gets HTTP 200
	// with a RATE_LIMITED error unless Status is set.
	PrimaryRateLimit
	// BadCredentials answers 401 "Bad credentials", as for a revoked token.
	BadCredentials
)

// String names the kind, as in the request log.
func (k FaultKind) String() string {
	switch k {
	case ServerError:
		return "ServerError"
	case SecondaryRateLimit:
		return "SecondaryRateLimit"
	case PrimaryRateLimit:
		return "PrimaryRateLimit"
	case BadCredentials:
		return "BadCredentials"
	default:
		return "FaultKind(" + strconv.Itoa(int(k)) + ")"
	}
}

// Fault is a failure injected into the next Times requests that match
// Method and Path.
type Fault struct {
	Kind FaultKind
	// Method matches the request method; "" matches any.
	Method string
	// Path matches the request path without any /api/v3 prefix, segment by
	// segment: a segment "*" or "{name}" matches any one segment, so the
	// OpenAPI template "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"
	// works as is. "/graphql" matches GraphQL requests.
	Path string
	// GraphQLField, for "/graphql", matches only operations selecting this
	// top-level field (such as "resolveReviewThread").
	GraphQLField string
	// Times is how many matching requests fail; 0 means 1.
	Times int
	// Status overrides the kind's default status.
	Status int
	// AfterEffect (ServerError only) performs the request before failing
	// its answer.
	AfterEffect bool
	// RetryAfter (SecondaryRateLimit only) sets retry-after, in whole
	// seconds rounded up; 0 sends none.
	RetryAfter time.Duration
	// ResetIn (PrimaryRateLimit only) places x-ratelimit-reset.
	ResetIn time.Duration
}

// String describes the fault, as in Request.Fault and in Verify's errors.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(f.Kind.String())
	if f.Status != 0 {
		fmt.Fprintf(&b, " %d", f.Status)
	}
	if f.AfterEffect {
		b.WriteString(" after the effect")
	}
	method := f.Method
	if method == "" {
		method = "*"
	}
	fmt.Fprintf(&b, " on %s %s", method, f.Path)
	if f.GraphQLField != "" {
		fmt.Fprintf(&b, " (%s)", f.GraphQLField)
	}
	return b.String()
}

type faultState struct {
	Fault
	left int
}

// Inject arms f. Faults are matched in the order they were injected; each
// matching request uses up one of a fault's Times. Close (and Verify)
// report a fault not used up.
func (s *Server) Inject(f Fault) error {
	if f.Times == 0 {
		f.Times = 1
	}
	switch {
	case f.Kind < ServerError || f.Kind > BadCredentials:
		return fmt.Errorf("githubfake: unknown fault kind %d", f.Kind)
	case f.Times < 0:
		return errors.New("githubfake: Fault.Times must not be negative")
	case !strings.HasPrefix(f.Path, "/"):
		return fmt.Errorf("githubfake: Fault.Path %q must start with /", f.Path)
	case f.AfterEffect && f.Kind != ServerError:
		return errors.New("githubfake: only a ServerError can come after the effect")
	case f.Kind == ServerError && f.Status != 0 && (f.Status < 500 || f.Status > 599):
		return fmt.Errorf("githubfake: a ServerError needs a 5xx status, not %d", f.Status)
	case (f.Kind == SecondaryRateLimit || f.Kind == PrimaryRateLimit) && f.Status != 0 && f.Status != 403 && f.Status != 429 && f.Status != 200:
		return fmt.Errorf("githubfake: a rate limit answers 403 or 429, not %d", f.Status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultState{Fault: f, left: f.Times})
	return nil
}

// matchFault uses up and returns the first armed fault matching the
// request. s.mu is held.
func (s *Server) matchFault(method, path string, graphQL bool, fields []string) *faultState {
	if graphQL {
		path = "/graphql"
	}
	for _, f := range s.faults {
		if f.left == 0 || (f.Method != "" && !strings.EqualFold(f.Method, method)) || !pathMatches(f.Path, path) {
			continue
		}
		if f.GraphQLField != "" && !contains(fields, f.GraphQLField) {
			continue
		}
		f.left--
		return f
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func pathMatches(pattern, path string) bool {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		wild := p == "*" || (strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"))
		if !wild && !strings.EqualFold(p, xs[i]) {
			return false
		}
	}
	return true
}

// faultReply builds the answer of an injected fault.
func (s *Server) faultReply(f *faultState, c *call, b *bucket, graphQL bool) *reply {
	switch f.Kind {
	case ServerError:
		status := f.Status
		if status == 0 {
			status = http.StatusBadGateway
		}
		msg := http.StatusText(status)
		if status == http.StatusInternalServerError {
			msg = "Server Error"
		}
		return &reply{status: status, value: map[string]any{"message": msg}}
	case SecondaryRateLimit:
		status := f.Status
		if status == 0 {
			status = http.StatusForbidden
		}
		rep := errorReply(&apiError{status: status, body: basicError(
			"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "+
				"If you reach out to GitHub Support for help, please include the request ID "+
				fmt.Sprintf("FAKE:%04X.", s.requestNo), docSecondaryLimit, status)})
		if f.RetryAfter > 0 {
			rep.header = http.Header{"Retry-After": {strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds())))}}
		}
		return rep
	case PrimaryRateLimit:
		resetIn := f.ResetIn
		if resetIn == 0 {
			resetIn = time.Minute
		}
		rep := s.primaryLimitReply(c, b, graphQL, f.Status)
		rep.header.Set("X-RateLimit-Remaining", "0")
		rep.header.Set("X-RateLimit-Used", strconv.Itoa(b.limit))
		rep.header.Set("X-RateLimit-Reset", strconv.FormatInt(s.cfg.clock().Add(resetIn).Unix(), 10))
		return rep
	default:
		doc := docREST
		if graphQL {
			doc = docGraphQL
		}
		return errorReply(&apiError{status: http.StatusUnauthorized, body: basicError("Bad credentials", doc, http.StatusUnauthorized)})
	}
}

// primaryLimitReply is GitHub's answer once the hourly limit is used up.
// status 0 means the default: 403 for REST, 200 for GraphQL.
func (s *Server) primaryLimitReply(c *call, b *bucket, graphQL bool, status int) *reply {
	who := "127.0.0.1"
	if c.viewer != nil {
		who = fmt.Sprintf("user ID %d", c.viewer.id)
	}
	var rep *reply
	if graphQL && (status == 0 || status == http.StatusOK) {
		rep = &reply{status: http.StatusOK, value: map[string]any{"errors": []any{map[string]any{
			"type": "RATE_LIMITED", "message": "API rate limit already exceeded for " + who + ".",
		}}}}
	} else {
		if status == 0 || status == http.StatusOK {
			status = http.StatusForbidden
		}
		rep = errorReply(&apiError{status: status, body: basicError(
			"API rate limit exceeded for "+who+". If you reach out to GitHub Support for help, please include the request ID "+
				fmt.Sprintf("FAKE:%04X.", s.requestNo), docPrimaryLimit, status)})
	}
	rep.header = http.Header{}
	rep.header.Set("X-RateLimit-Remaining", "0")
	rep.header.Set("X-RateLimit-Used", strconv.Itoa(b.limit))
	rep.header.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	return rep
}

// bucket is one identity's primary rate limit for one resource (core or
// graphql) over an hour-long window that starts with its first request.
type bucket struct {
	resource string
	limit    int
	used     int
	reset    time.Time
}

// bucket returns the bucket of a (nil: anonymous, 60 an hour). s.mu is held.
func (s *Server) bucket(a *account, resource string) *bucket {
	key, limit := "anonymous", 60
	if a != nil {
		key, limit = a.login, a.limit
	}
	key += "\x00" + resource
	b := s.buckets[key]
	if b == nil {
		b = &bucket{resource: resource, limit: limit}
		s.buckets[key] = b
	}
	return b
}

func (b *bucket) roll(now time.Time) {
	if b.reset.IsZero() || !now.Before(b.reset) {
		b.used = 0
		b.reset = now.Add(time.Hour).Truncate(time.Second)
	}
}

// take counts one request; it reports true (and counts nothing) when the
// limit is already used up.
func (b *bucket) take(now time.Time) bool {
	b.roll(now)
	if b.used >= b.limit {
		return true
	}
	b.used++
	return false
}

func (b *bucket) refund() {
	if b.used > 0 {
		b.used--
	}
}

// setHeaders writes the x-ratelimit-* headers every response carries.
func (b *bucket) setHeaders(h http.Header, now time.Time) {
	b.roll(now)
	h.Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, b.limit-b.used)))
	h.Set("X-RateLimit-Used", strconv.Itoa(b.used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", b.resource)
}
