package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// Client calls GitHub's REST and GraphQL APIs for one repository as one
// identity. It is safe for concurrent use; its writes, and those of the
// clients made from it by Reviewer, are serialised and spaced.
type Client struct {
	loc   Location
	token Token
	gh    *gh.Client
	http  *http.Client
	pacer *pacer
	owner string
	repo  string

	mu            sync.Mutex
	defaultBranch string // once read
}

// Option configures a Client.
type Option func(*options)

type options struct {
	minWrite       time.Duration
	report         func(wait time.Duration, why string)
	now            func() time.Time
	sleep          func(ctx context.Context, d time.Duration) error
	maxAttempts    int
	attemptTimeout time.Duration
	backoff        time.Duration
	base           http.RoundTripper
}

// WithMinWriteInterval sets the least time from the end of one write
// (POST, PATCH, PUT, DELETE, GraphQL mutation) to the start of the next;
// the default is one second, as GitHub's best practices ask; 0 turns
// spacing off.
func WithMinWriteInterval(d time.Duration) Option { return func(o *options) { o.minWrite = max(d, 0) } }

// WithWaitReporter sets report, called before every wait for a rate limit
// or a retry with how long and why ("GitHub's secondary rate limit asks to
// wait (retry-after)"). Spacing writes is not reported. report must be
// safe for concurrent use and must not block.
func WithWaitReporter(report func(wait time.Duration, why string)) Option {
	return func(o *options) { o.report = report }
}

// WithClock replaces the clock and the sleep used for every wait (sleep
// must return ctx's error when ctx ends first), so tests of long waits do
// not sleep for real.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(o *options) { o.now, o.sleep = now, sleep }
}

// WithMaxAttempts bounds how many times one call is tried when its answer
// is a 5xx or a timeout (default 4).
func WithMaxAttempts(n int) Option { return func(o *options) { o.maxAttempts = max(n, 1) } }

// WithRequestTimeout bounds each attempt of a request (default 30s); an
// attempt that times out is treated like a 5xx.
func WithRequestTimeout(d time.Duration) Option { return func(o *options) { o.attemptTimeout = d } }

// WithRetryBackoff sets the first wait before retrying a 5xx or a timeout
// (default 1s), doubled at each further try.
func WithRetryBackoff(d time.Duration) Option { return func(o *options) { o.backoff = max(d, 0) } }

// WithTransport sets the HTTP transport requests go out through (default
// http.DefaultTransport).
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.base = rt } }

// New returns a client for loc acting as loc.Token. It makes no request
// (Preflight does). An API URL that does not parse is an error.
func New(loc Location, opts ...Option) (*Client, error) {
	o := options{
		minWrite: time.Second, now: time.Now, sleep: sleepCtx, maxAttempts: 4,
		attemptTimeout: 30 * time.Second, backoff: time.Second, base: http.DefaultTransport,
		report: func(time.Duration, string) {},
	}
	for _, f := range opts {
		f(&o)
	}
	p := &pacer{opts: o, sem: make(chan struct{}, 1), blocked: map[string]time.Time{}}
	return newClient(loc, loc.Token, p)
}

func newClient(loc Location, token Token, p *pacer) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(loc.APIURL, "/") + "/")
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, &PreflightError{Problem: ProblemUnreachable, Err: err,
			Sentence: fmt.Sprintf("the GitHub API URL %q is not an http(s) URL: fix GITHUB_API_URL", loc.APIURL)}
	}
	if _, err := url.Parse(loc.GraphQLURL); err != nil {
		return nil, &PreflightError{Problem: ProblemUnreachable, Err: err,
			Sentence: fmt.Sprintf("the GitHub GraphQL URL %q does not parse: fix GITHUB_GRAPHQL_URL", loc.GraphQLURL)}
	}
	hc := &http.Client{Transport: &transport{base: p.opts.base, token: token, pacer: p}}
	g := gh.NewClient(hc)
	g.BaseURL, g.UploadURL = base, base
	g.UserAgent = "spawn"
	return &Client{loc: loc, token: token, gh: g, http: hc, pacer: p, owner: loc.Owner, repo: loc.Repo}, nil
}

// Reviewer returns a client acting as the location's reviewer token, which
// shares this client's pacing, and false when there is no reviewer token.
func (c *Client) Reviewer() (*Client, bool) {
	if c.loc.ReviewerToken == "" {
		return nil, false
	}
	r, err := newClient(c.loc, c.loc.ReviewerToken, c.pacer)
	if err != nil {
		return nil, false // the same URLs parsed for c
	}
	return r, true
}

// Location returns the location the client was made for.
func (c *Client) Location() Location { return c.loc }

// tokens are every token the client knows, for redaction.
func (c *Client) tokens() []Token { return []Token{c.token, c.loc.Token, c.loc.ReviewerToken} }

// op names a call for errors: "get pull request #3".
func op(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// rest runs one go-github call: a 2xx response that left the primary
// limit used up makes go-github refuse the next call locally until the
// reset; rest waits that out (bounded by ctx) and tries again.
func (c *Client) rest(ctx context.Context, what string, call func() (*gh.Response, error)) error {
	for tries := 0; ; tries++ {
		_, err := call()
		if err == nil {
			return nil
		}
		// go-github refuses locally, without a request, with this message.
		rle, ok := err.(*gh.RateLimitError)
		local := ok && strings.Contains(rle.Message, "not making remote request")
		if !local || tries >= 3 || rle.Rate.Reset.IsZero() {
			return c.apiError(what, err)
		}
		until := rle.Rate.Reset.Time
		if werr := c.pacer.wait(ctx, until.Sub(c.pacer.opts.now())+time.Second,
			"GitHub's primary rate limit is used up until "+until.UTC().Format(time.TimeOnly)+" UTC"); werr != nil {
			return c.apiError(what, rateLimited(werr, until, fmt.Sprintf("the primary rate limit of %d requests an hour is used up", rle.Rate.Limit)))
		}
	}
}

// ensure runs an effect that must happen once: find looks for it and
// create makes it. find runs first (a retried or resumed call finds what an
// earlier one made) and again after every uncertain failure of create
// before create is tried again, at most maxAttempts times.
func (c *Client) ensure(ctx context.Context, what string, find func(context.Context) (bool, error), create func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		found, err := find(ctx)
		if err != nil || found {
			return err
		}
		err = create(ctx)
		if err == nil || !uncertain(ctx, err) || attempt >= c.pacer.opts.maxAttempts {
			return err
		}
		d := c.pacer.backoffFor(attempt)
		if werr := c.pacer.wait(ctx, d, fmt.Sprintf("%s got no clear answer (%s); checking whether it took effect", what, c.failure(err))); werr != nil {
			return fmt.Errorf("%w (and retrying: %w)", err, werr)
		}
	}
}

// failure says briefly how a call failed: "502 Bad Gateway", or the cause.
func (c *Client) failure(err error) string {
	if s := statusOf(err); s != 0 {
		return fmt.Sprintf("%d %s", s, http.StatusText(s))
	}
	return c.redact(rootCause(err).Error())
}
