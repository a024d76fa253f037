package githubfake

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// maxBody bounds what the fake reads of a request body (GitHub's own limit
// for a comment is far lower).
const maxBody = 25 << 20

// Option configures a Server.
type Option func(*config)

type config struct {
	dir    string
	clock  func() time.Time
	errorf func(format string, args ...any)
	logf   func(format string, args ...any)
}

// WithDir makes the server keep its bare repositories under dir, which the
// caller owns. Without it Start uses a temporary directory that Close
// removes, and New uses t.TempDir().
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithClock sets the clock used for timestamps and rate-limit windows.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// WithErrorf sets where the server reports its own faults: a response that
// does not match the OpenAPI description, a request for an operation it
// does not serve, an internal error, a fault injected but never used.
// New reports through t.Errorf. errorf must be safe for concurrent use.
func WithErrorf(errorf func(format string, args ...any)) Option {
	return func(c *config) { c.errorf = errorf }
}

// WithLogf makes the server log one line per request through logf,
// typically testing.T.Logf.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(c *config) { c.logf = logf }
}

// Server is a running fake of GitHub's REST and GraphQL APIs. Its state
// (repositories, pull requests, reviews, comments, threads, statuses) is
// changed only through the API and the Add/Set methods. It is safe for
// concurrent use; requests are served one at a time.
type Server struct {
	cfg    config
	sp     *spec
	srv    *httptest.Server
	url    string
	ownDir bool
	once   sync.Once

	mu        sync.Mutex
	accounts  map[string]*account // lower-case login
	tokens    map[string]*account
	repos     map[string]*repoState // lower-case owner/name
	nodes     map[string]any        // GraphQL node id -> state
	nextID    int64
	faults    []*faultState
	requests  []Request
	problems  []string
	buckets   map[string]*bucket
	requestNo int
}

// Start starts a server on 127.0.0.1 with a free port. The caller must
// call Close.
func Start(opts ...Option) (*Server, error) {
	cfg := config{clock: time.Now, errorf: func(string, ...any) {}, logf: func(string, ...any) {}}
	for _, o := range opts {
		o(&cfg)
	}
	sp, err := loadSpec()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		sp:       sp,
		accounts: map[string]*account{},
		tokens:   map[string]*account{},
		repos:    map[string]*repoState{},
		nodes:    map[string]any{},
		buckets:  map[string]*bucket{},
		nextID:   1000,
	}
	if s.cfg.dir == "" {
		dir, err := os.MkdirTemp("", "githubfake-")
		if err != nil {
			return nil, fmt.Errorf("githubfake: %w", err)
		}
		s.cfg.dir, s.ownDir = dir, true
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.url = s.srv.URL
	return s, nil
}

// New starts a server for a test: its repositories live in t.TempDir(),
// its faults are reported through t.Errorf, and t.Cleanup closes it. A
// failure to start fails the test at once.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	base := []Option{WithDir(t.TempDir()), WithErrorf(t.Errorf)}
	s, err := Start(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// URL returns the REST base URL ("http://127.0.0.1:PORT", no trailing
// slash), what GITHUB_API_URL would hold. The server also answers under
// /api/v3, as GitHub Enterprise Server does.
func (s *Server) URL() string { return s.url }

// GraphQLURL returns the GraphQL endpoint, URL()+"/graphql". The server
// also answers at /api/graphql.
func (s *Server) GraphQLURL() string { return s.url + "/graphql" }

// Close stops the server once every request in flight has been answered,
// reports (through the errorf of WithErrorf) every injected fault that was
// not used up, and removes the repositories when Start created their
// directory. It is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		s.srv.Close()
		if err := s.Verify(); err != nil {
			s.cfg.errorf("githubfake: %v", err)
		}
		if s.ownDir {
			if err := os.RemoveAll(s.cfg.dir); err != nil {
				s.cfg.errorf("githubfake: remove %s: %v", s.cfg.dir, err)
			}
		}
	})
}

// Problems returns every fault of the server itself reported so far
// (responses that broke the OpenAPI description, unsupported operations,
// internal errors), in order.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// problem records and reports a fault of the fake. s.mu is held.
func (s *Server) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.problems = append(s.problems, msg)
	s.cfg.errorf("githubfake: %s", msg)
}

func (s *Server) now() time.Time { return s.cfg.clock().UTC().Truncate(time.Second) }

// AddUser registers an identity: requests bearing token act as login,
// with perm on every repository (SetPermission overrides it per
// repository). The login of a repository's owner is admin there.
func (s *Server) AddUser(login, token string, perm Permission, opts ...UserOption) error {
	if login == "" || token == "" {
		return errors.New("githubfake: AddUser needs a login and a token")
	}
	if !perm.valid() {
		return fmt.Errorf("githubfake: unknown permission %q", perm)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.tokens[token]; dup {
		return fmt.Errorf("githubfake: token of %s already registered", login)
	}
	a := s.accounts[strings.ToLower(login)]
	if a == nil {
		a = s.newAccount(login, "User")
	} else if a.token != "" {
		return fmt.Errorf("githubfake: user %s already registered", login)
	}
	a.token, a.perm, a.limit, a.typ = token, perm, 5000, "User"
	for _, o := range opts {
		o(a)
	}
	s.tokens[token] = a
	return nil
}

// UserOption configures an identity added by AddUser.
type UserOption func(*account)

// ActionsToken makes the identity a workflow's GITHUB_TOKEN: a Bot whose
// 403s say "Resource not accessible by integration", that cannot resolve
// review threads (viewerCanResolve is false), whose content writes need
// write permission, that may create or approve pull requests only where
// AllowActionsPullRequests is set, and whose primary limit is 1,000 an
// hour. Its login is usually "github-actions[bot]".
func ActionsToken() UserOption {
	return func(a *account) { a.actions, a.typ, a.limit = true, "Bot", 1000 }
}

// Scopes makes the identity's token a classic personal access token (or
// OAuth token) with these scopes: every response to its requests carries
// them in X-OAuth-Scopes ("repo, workflow"), as GitHub's do. Without it
// the token is fine-grained (or an app's): GitHub sends no such header.
func Scopes(scopes ...string) UserOption {
	return func(a *account) { a.scopes = append([]string{}, scopes...) }
}

// RateLimit sets the identity's primary rate limit per hour (default
// 5,000): once used up, requests get GitHub's 403 with
// x-ratelimit-remaining: 0 until the window resets.
func RateLimit(perHour int) UserOption { return func(a *account) { a.limit = perHour } }

// newAccount creates an account; s.mu is held.
func (s *Server) newAccount(login, typ string) *account {
	a := &account{login: login, typ: typ, perm: PermissionNone, limit: 5000}
	a.id = s.newID()
	prefix := "U"
	if typ == "Organization" {
		prefix = "O"
	}
	a.nodeID = s.nodeID(prefix, a.id, a)
	s.accounts[strings.ToLower(login)] = a
	return a
}

// RepoOption configures a repository added by AddRepo.
type RepoOption func(*repoOptions)

type repoOptions struct {
	seed       string
	public     bool
	actionsPRs bool
}

// SeedFrom fills the new repository with every branch and tag of the
// local repository at path (fetched from the bare side: no hook of path
// runs and nothing in it changes). Without it the repository starts with
// one commit holding README.md.
func SeedFrom(path string) RepoOption { return func(o *repoOptions) { o.seed = path } }

// Public makes the repository public: anyone, anonymous requests
// included, can read it. Repositories are private by default.
func Public() RepoOption { return func(o *repoOptions) { o.public = true } }

// AllowActionsPullRequests turns on "Allow GitHub Actions to create and
// approve pull requests" (off by default, as on new repositories).
func AllowActionsPullRequests() RepoOption { return func(o *repoOptions) { o.actionsPRs = true } }

// AddRepo creates owner/name with a bare repository whose HEAD is
// defaultBranch. Tests push to it with git at RemoteURL. The owner is the
// registered user of that login, or else an organisation.
func (s *Server) AddRepo(owner, name, defaultBranch string, opts ...RepoOption) error {
	var o repoOptions
	for _, f := range opts {
		f(&o)
	}
	if owner == "" || name == "" || defaultBranch == "" {
		return errors.New("githubfake: AddRepo needs an owner, a name and a default branch")
	}
	key := strings.ToLower(owner + "/" + name)
	s.mu.Lock()
	_, dup := s.repos[key]
	s.mu.Unlock()
	if dup {
		return fmt.Errorf("githubfake: repository %s/%s already exists", owner, name)
	}
	ctx := context.Background()
	dir := filepath.Join(s.cfg.dir, owner, name+".git")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("githubfake: %w", err)
	}
	g, err := initBare(ctx, dir, defaultBranch)
	if err != nil {
		return fmt.Errorf("githubfake: %w", err)
	}
	now := s.now()
	if o.seed != "" {
		err = g.seedFrom(ctx, o.seed)
	} else {
		err = g.seedInitial(ctx, defaultBranch, "# "+name+"\n", now)
	}
	if err != nil {
		return fmt.Errorf("githubfake: seed %s/%s: %w", owner, name, err)
	}
	if _, ok, err := g.resolveCommit(ctx, "refs/heads/"+defaultBranch); err != nil || !ok {
		return errors.Join(fmt.Errorf("githubfake: %s/%s has no branch %q", owner, name, defaultBranch), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ownerAcct := s.accounts[strings.ToLower(owner)]
	if ownerAcct == nil {
		ownerAcct = s.newAccount(owner, "Organization")
	}
	r := &repoState{
		owner: ownerAcct, name: name, defaultBranch: defaultBranch, git: g,
		private: !o.public, actionsPRs: o.actionsPRs, perms: map[string]Permission{},
		created: now, pushed: now, nextNumber: 1, statuses: map[string][]*statusState{},
	}
	r.id = s.newID()
	r.nodeID = s.nodeID("R", r.id, r)
	s.repos[key] = r
	return nil
}

// SetPermission gives login perm on owner/repo, overriding the permission
// given to AddUser.
func (s *Server) SetPermission(owner, repo, login string, perm Permission) error {
	if !perm.valid() {
		return fmt.Errorf("githubfake: unknown permission %q", perm)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[strings.ToLower(owner+"/"+repo)]
	if r == nil {
		return fmt.Errorf("githubfake: no repository %s/%s", owner, repo)
	}
	r.perms[strings.ToLower(login)] = perm
	return nil
}

// RemoteURL returns the path of owner/repo's bare repository, for `git
// push` and `git fetch`, or "" when there is no such repository.
func (s *Server) RemoteURL(owner, repo string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.repos[strings.ToLower(owner+"/"+repo)]; r != nil {
		return r.git.dir
	}
	return ""
}

// permission is what a (nil: anonymous) has on r.
func (s *Server) permission(a *account, r *repoState) Permission {
	p := PermissionNone
	switch {
	case a == nil:
	case r.perms[strings.ToLower(a.login)] != "":
		p = r.perms[strings.ToLower(a.login)]
	case strings.EqualFold(a.login, r.owner.login):
		p = PermissionAdmin
	default:
		p = a.perm
	}
	if !r.private && !p.atLeast(PermissionRead) {
		p = PermissionRead
	}
	return p
}

// Request is one request the server answered, for tests to inspect.
type Request struct {
	Time          time.Time
	Method        string
	Path          string // as received, /api/v3 prefix included
	Query         string
	Operation     string   // OpenAPI operationId, "graphql", or "" when nothing matched
	GraphQLFields []string // top-level fields a GraphQL operation selected
	Login         string   // "" when anonymous or the token was bad
	Status        int      // what the client got
	EffectStatus  int      // for a fault injected after the effect: what the fake had answered
	Fault         string   // the injected fault that answered, if any
	Body          []byte
	ResponseBody  []byte
}

// Requests returns a copy of every request answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Body = bytes.Clone(r.Body)
		r.ResponseBody = bytes.Clone(r.ResponseBody)
		r.GraphQLFields = append([]string(nil), r.GraphQLFields...)
		out[i] = r
	}
	return out
}

// reply is an answer before the common headers are added.
type reply struct {
	status int
	header http.Header
	value  any    // marshalled as JSON unless raw is set
	raw    []byte // a non-JSON body (diffs)
	ctype  string
}

// call is one REST or GraphQL request being served.
type call struct {
	s      *Server
	ctx    context.Context
	r      *http.Request
	op     string
	params map[string]string
	query  url.Values
	body   []byte
	viewer *account
	base   string // REST base as the client used it (with /api/v3 if it did)
	path   string // canonical path, without /api/v3
	docURL string
	header http.Header // headers the handler adds (Link, Location)
	repo   *repoState
	in     *openapi3filter.RequestValidationInput
}

var gqlPaths = map[string]bool{"/graphql": true, "/api/graphql": true}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requestNo++
	requestID := fmt.Sprintf("FAKE:%04X:%06X", s.requestNo, s.requestNo*7919)

	path, prefix := r.URL.EscapedPath(), ""
	if rest, ok := strings.CutPrefix(path, "/api/v3"); ok && (rest == "" || rest[0] == '/') {
		path, prefix = rest, "/api/v3"
	}
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	c := &call{
		s: s, ctx: r.Context(), r: r, query: r.URL.Query(), body: body,
		base: s.url + prefix, path: path, docURL: docREST, header: http.Header{},
	}
	entry := Request{Time: s.cfg.clock(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body}
	isGraphQL := gqlPaths[r.URL.Path]
	resource := "core"
	var route *routers.Route
	if isGraphQL {
		resource, entry.Operation, c.op = "graphql", "graphql", "graphql"
		entry.GraphQLFields = graphQLFields(body)
	} else if rt, params, err := s.sp.route(r.Method, path, r.URL.RawQuery); err == nil {
		route, c.params, c.op = rt, params, rt.Operation.OperationID
		entry.Operation = c.op
		if u := s.sp.docURL[c.op]; u != "" {
			c.docURL = u
		}
	}

	viewer, tokenOK := s.authenticate(r)
	c.viewer = viewer
	if viewer != nil {
		entry.Login = viewer.login
	}
	b := s.bucket(viewer, resource)

	var rep *reply
	fault := s.matchFault(r.Method, path, isGraphQL, entry.GraphQLFields)
	switch {
	case fault != nil && !fault.AfterEffect:
		rep = s.faultReply(fault, c, b, isGraphQL)
		entry.Fault = fault.String()
	case !tokenOK:
		doc := docREST
		if isGraphQL {
			doc = docGraphQL
		}
		rep = errorReply(&apiError{status: http.StatusUnauthorized, body: basicError("Bad credentials", doc, http.StatusUnauthorized)})
	default:
		if c.op != "rate-limit/get" {
			if exhausted := b.take(s.cfg.clock()); exhausted {
				rep = s.primaryLimitReply(c, b, isGraphQL, 0)
				break
			}
		}
		if v := r.Header.Get("X-GitHub-Api-Version"); v != "" && v != supportedVersion && v != supportedVersion2 {
			rep = errorReply(&apiError{status: http.StatusBadRequest, body: basicError(
				fmt.Sprintf("API version %s is not supported.", v), docAPIVersions, http.StatusBadRequest)})
			break
		}
		if isGraphQL {
			rep = s.serveGraphQL(c)
		} else {
			rep = s.serveREST(c, route)
		}
		if fault != nil {
			entry.EffectStatus = rep.status
			entry.Fault = fault.String()
			rep = s.faultReply(fault, c, b, isGraphQL)
		}
	}
	if viewer != nil && viewer.scopes != nil {
		w.Header().Set("X-OAuth-Scopes", strings.Join(viewer.scopes, ", "))
	}
	s.send(w, r, rep, b, requestID, &entry)
	s.requests = append(s.requests, entry)
	s.cfg.logf("githubfake: %s %s -> %d %s", r.Method, r.URL.RequestURI(), entry.Status, entry.Fault)
}

// send adds the headers every GitHub response carries, answers
// conditional GETs, and writes the reply.
func (s *Server) send(w http.ResponseWriter, r *http.Request, rep *reply, b *bucket, requestID string, entry *Request) {
	var body []byte
	if rep.raw != nil {
		body = rep.raw
	} else if rep.value != nil {
		var err error
		if body, err = json.Marshal(rep.value); err != nil {
			s.problem("%s %s: encode response: %v", r.Method, r.URL.Path, err)
			rep = &reply{status: http.StatusInternalServerError}
			body = []byte(`{"message":"Server Error","documentation_url":"` + docREST + `","status":"500"}`)
		}
	}
	h := w.Header()
	b.setHeaders(h, s.cfg.clock())
	for k, v := range rep.header {
		h[k] = v // a rate-limit answer overrides the bucket's headers
	}
	ctype := rep.ctype
	if ctype == "" && body != nil {
		ctype = "application/json; charset=utf-8"
	}
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	h.Set("X-GitHub-Request-Id", requestID)
	h.Set("X-GitHub-Api-Version-Selected", supportedVersion)
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	status := rep.status
	if r.Method == http.MethodGet && status == http.StatusOK && body != nil {
		sum := sha256.Sum256(body)
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		if inm := r.Header.Get("If-None-Match"); inm != "" && (inm == etag || strings.TrimPrefix(inm, "W/") == strings.TrimPrefix(etag, "W/")) {
			// A 304 does not count against the primary limit.
			b.refund()
			b.setHeaders(h, s.cfg.clock())
			h.Del("Content-Type")
			status, body = http.StatusNotModified, nil
		}
	}
	if body != nil {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(status)
	if body != nil {
		if _, err := w.Write(body); err != nil {
			s.cfg.logf("githubfake: write response: %v", err)
		}
	}
	entry.Status = status
	entry.ResponseBody = body
}

func errorReply(e *apiError) *reply {
	return &reply{status: e.status, value: e.body, header: e.header}
}

// authenticate maps the Authorization header onto an account. A missing
// header is anonymous (nil, true); an unknown token is (nil, false).
func (s *Server) authenticate(r *http.Request) (*account, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, true
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || (!strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token")) {
		return nil, false
	}
	a := s.tokens[strings.TrimSpace(token)]
	return a, a != nil
}

// serveREST validates the request against the OpenAPI description, runs
// its handler and validates the response.
func (s *Server) serveREST(c *call, route *routers.Route) *reply {
	r := c.r
	if route == nil {
		s.problem("%s %s is not an operation of the OpenAPI subset; the fake does not serve it", r.Method, c.path)
		return errorReply(notFound(docREST))
	}
	handler := restHandlers[c.op]
	if handler == nil {
		s.problem("%s %s (%s) has no handler", r.Method, c.path, c.op)
		return errorReply(notFound(c.docURL))
	}
	in, err := validationInput(route, c.params, r.Method, c.path, r.URL.RawQuery, r.Header, c.body)
	if err != nil {
		s.problem("%s %s: %v", r.Method, c.path, err)
		return errorReply(&apiError{status: 500, body: basicError("Server Error", c.docURL, 500)})
	}
	c.in = in
	rep := s.handle(c, route, handler)
	for k, v := range c.header {
		if rep.header == nil {
			rep.header = http.Header{}
		}
		rep.header[k] = v
	}
	s.checkResponse(c, rep)
	return rep
}

// handle runs the checks GitHub makes before an operation, in its order
// (the repository (404) and access before the body (400, 422)), then the
// operation's handler.
func (s *Server) handle(c *call, route *routers.Route, handler func(*call) (*reply, error)) *reply {
	if owner, ok := c.params["owner"]; ok {
		if e := c.loadRepo(owner, c.params["repo"]); e != nil {
			return errorReply(e)
		}
	}
	if len(c.body) > 0 && !json.Valid(c.body) {
		return errorReply(&apiError{status: http.StatusBadRequest, body: basicError("Problems parsing JSON", c.docURL, http.StatusBadRequest)})
	}
	if len(c.body) > 0 && bytes.TrimSpace(c.body)[0] != '{' && route.Operation.RequestBody != nil {
		return errorReply(&apiError{status: http.StatusBadRequest, body: basicError("Body should be a JSON object", c.docURL, http.StatusBadRequest)})
	}
	if err := openapi3filter.ValidateRequest(c.ctx, replyForm(c, c.in)); err != nil {
		return errorReply(requestProblem(err, c.docURL))
	}
	rep, err := handler(c)
	if err == nil {
		return rep
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return errorReply(ae)
	}
	s.problem("%s %s: %v", c.r.Method, c.path, err)
	return errorReply(&apiError{status: 500, body: basicError("Server Error", c.docURL, 500)})
}

// replyForm handles the one place where GitHub accepts what its
// description refuses: POST .../pulls/{n}/comments with in_reply_to needs
// only body ("all parameters other than body are ignored"), but the
// description requires commit_id and path. The body is validated with
// placeholders for the two, so everything else is still checked.
func replyForm(c *call, in *openapi3filter.RequestValidationInput) *openapi3filter.RequestValidationInput {
	if c.op != "pulls/create-review-comment" {
		return in
	}
	var body map[string]any
	if json.Unmarshal(c.body, &body) != nil || body["in_reply_to"] == nil {
		return in
	}
	for _, key := range []string{"commit_id", "path"} {
		if _, ok := body[key]; !ok {
			body[key] = ""
		}
	}
	patched, err := json.Marshal(body)
	if err != nil {
		return in
	}
	copied := *in
	req := in.Request.Clone(c.ctx)
	req.Body = io.NopCloser(bytes.NewReader(patched))
	req.ContentLength = int64(len(patched))
	copied.Request = req
	return &copied
}

// checkResponse validates a JSON reply against the description; a
// mismatch is the fake's bug and is reported.
func (s *Server) checkResponse(c *call, rep *reply) {
	if rep.raw != nil {
		return // diff and patch media types are not JSON
	}
	body, err := json.Marshal(rep.value)
	if err != nil {
		s.problem("%s %s: encode response: %v", c.r.Method, c.path, err)
		return
	}
	h := rep.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	if err := validateResponse(c.in, rep.status, h, body); err != nil {
		s.problem("%s %s (%s): response %d does not match the OpenAPI description: %v", c.r.Method, c.path, c.op, rep.status, err)
	}
}

// loadRepo finds owner/name (case-insensitively) and checks the viewer
// may see it; a private repository the viewer cannot read is a 404.
func (c *call) loadRepo(owner, name string) *apiError {
	r := c.s.repos[strings.ToLower(owner+"/"+name)]
	if r == nil || !c.s.permission(c.viewer, r).atLeast(PermissionRead) {
		return notFound(c.docURL)
	}
	c.repo = r
	return nil
}

// perm is the viewer's permission on the call's repository.
func (c *call) perm() Permission { return c.s.permission(c.viewer, c.repo) }

// denied is the 403 GitHub gives a token that lacks a permission. The
// integration sentence is GitHub's; the personal-token one is GitHub's for
// fine-grained tokens and assumed for classic ones.
func (c *call) denied() *apiError {
	if c.viewer != nil && c.viewer.actions {
		return forbidden("Resource not accessible by integration", c.docURL)
	}
	return forbidden("Resource not accessible by personal access token", c.docURL)
}

// requireWrite fails unless the viewer may push to the repository.
func (c *call) requireWrite() error {
	if c.viewer == nil {
		return &apiError{status: http.StatusUnauthorized, body: basicError("Requires authentication", c.docURL, http.StatusUnauthorized)}
	}
	if !c.perm().atLeast(PermissionWrite) {
		return c.denied()
	}
	return nil
}

// requireContent fails unless the viewer may comment or review: any
// reader for a person, write for an Actions token (pull-requests: write).
func (c *call) requireContent() error {
	if c.viewer == nil {
		return &apiError{status: http.StatusUnauthorized, body: basicError("Requires authentication", c.docURL, http.StatusUnauthorized)}
	}
	if c.viewer.actions && !c.perm().atLeast(PermissionWrite) {
		return c.denied()
	}
	return nil
}

// decode reads the JSON body into v (already validated against the
// description).
func (c *call) decode(v any) error {
	if len(c.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return &apiError{status: http.StatusBadRequest, body: basicError("Problems parsing JSON", c.docURL, http.StatusBadRequest)}
	}
	return nil
}

// intParam reads an integer path parameter (validated by the router).
func (c *call) intParam(name string) (int64, error) {
	n, err := strconv.ParseInt(c.params[name], 10, 64)
	if err != nil {
		return 0, notFound(c.docURL)
	}
	return n, nil
}

// page applies per_page and page to n items: it returns the slice bounds
// and sets the Link header when there is more than one page.
func (c *call) page(n int) (int, int) {
	perPage := 30
	if v, err := strconv.Atoi(c.query.Get("per_page")); err == nil && v > 0 {
		perPage = min(v, 100)
	}
	page := 1
	if v, err := strconv.Atoi(c.query.Get("page")); err == nil && v > 0 {
		page = v
	}
	last := max(1, (n+perPage-1)/perPage)
	if n > perPage {
		link := func(p int, rel string) string {
			q := url.Values{}
			for k, v := range c.query {
				q[k] = v
			}
			q.Set("per_page", strconv.Itoa(perPage))
			q.Set("page", strconv.Itoa(p))
			return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, c.base, c.path, q.Encode(), rel)
		}
		var links []string
		if page > 1 {
			links = append(links, link(min(page-1, last), "prev"))
		}
		if page < last {
			links = append(links, link(page+1, "next"), link(last, "last"))
		}
		if page > 1 {
			links = append(links, link(1, "first"))
		}
		c.header.Set("Link", strings.Join(links, ", "))
	}
	lo := min((page-1)*perPage, n)
	return lo, min(lo+perPage, n)
}

// ok is a 200 reply.
func ok(v any) *reply { return &reply{status: http.StatusOK, value: v} }

// created is a 201 reply with a Location header.
func created(v any, location string) *reply {
	return &reply{status: http.StatusCreated, value: v, header: http.Header{"Location": {location}}}
}

// Verify returns an error naming every injected fault that has not been
// used up.
func (s *Server) Verify() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, f := range s.faults {
		if f.left > 0 {
			errs = append(errs, fmt.Errorf("fault %s was injected for %d requests but matched %d", f, f.Times, f.Times-f.left))
		}
	}
	return errors.Join(errs...)
}
