package modelserver

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
)

// DefaultMaxRequests is the loop guard used unless WithMaxRequests says
// otherwise.
const DefaultMaxRequests = 50

// FinalText is what the server says once a script is exhausted, so that the
// CLI ends its session.
const FinalText = "done."

// APIKey is the API key put in the environment of every CLI. The server
// accepts any key.
const APIKey = "test-key"

// Option configures a Server.
type Option func(*config)

type config struct {
	maxRequests int
	logf        func(string, ...any)
}

// WithMaxRequests sets the loop guard: once n main requests have been
// answered, every further main request gets HTTP 400 with a message naming
// the guard (both CLIs give up on a 400 without retrying). n <= 0 disables
// the guard. The default is DefaultMaxRequests.
func WithMaxRequests(n int) Option {
	return func(c *config) { c.maxRequests = n }
}

// WithLogf makes the server log one line per request (and its problems, such
// as a tool input using {{workdir}} when the request names no working
// directory) through logf, typically testing.T.Logf. logf must be safe for
// concurrent use.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(c *config) { c.logf = logf }
}

// Server is a running scripted model server. It is safe for concurrent use:
// several CLI processes may call it at once.
type Server struct {
	sc     Scenario
	cfg    config
	url    string
	srv    *http.Server
	served chan struct{} // closed when Serve has returned
	closed chan struct{} // closed by Close: unblocks delays and hangs
	once   sync.Once
	token  string // per-server part of message ids

	mu       sync.Mutex
	closing  bool
	inflight sync.WaitGroup
	requests []Request
	mainReqs int
	errsSent map[turnKey]int
	msgSeq   int
}

type turnKey struct {
	api          string
	script, turn int
}

// Start validates sc and starts a server for it on 127.0.0.1 with a free
// port. The caller must call Close.
func Start(sc Scenario, opts ...Option) (*Server, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("modelserver: %w", err)
	}
	cfg := config{maxRequests: DefaultMaxRequests, logf: func(string, ...any) {}}
	for _, o := range opts {
		o(&cfg)
	}
	var tok [4]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("modelserver: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("modelserver: listen: %w", err)
	}
	s := &Server{
		sc:       sc,
		cfg:      cfg,
		url:      "http://" + ln.Addr().String(),
		served:   make(chan struct{}),
		closed:   make(chan struct{}),
		token:    hex.EncodeToString(tok[:]),
		errsSent: map[turnKey]int{},
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // always ErrServerClosed after Close
	}()
	return s, nil
}

// URL returns the server's base URL, "http://127.0.0.1:PORT", without a
// trailing slash.
func (s *Server) URL() string { return s.url }

// Close stops the server: it closes the listener and every connection,
// unblocks requests waiting in a delay or hang, and returns once every
// handler has returned. It is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		// Connections first, so that no hung request can get an answer
		// once it is unblocked.
		_ = s.srv.Close()
		close(s.closed)
		<-s.served
		s.inflight.Wait()
	})
}

// Requests returns a copy of every request logged so far, in arrival order.
// A request still in flight has a zero End.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

// ClaudeEnv returns the environment entries that point claude at the
// server: ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY=test-key and
// CLAUDE_CODE_MAX_RETRIES=0. Retries are off so that a scripted error (401
// included, which claude otherwise retries for about two minutes) fails the
// CLI at once; a test of retry behaviour appends CLAUDE_CODE_MAX_RETRIES=N
// after these entries (exec.Cmd uses the last value of a duplicated key).
// Callers add HOME, TMPDIR and CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1.
func (s *Server) ClaudeEnv() []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + s.url,
		"ANTHROPIC_API_KEY=" + APIKey,
		"CLAUDE_CODE_MAX_RETRIES=0",
	}
}

// OpenAIBaseURL returns the base URL of the server's OpenAI Responses API,
// URL()+"/v1": the base_url of the model provider codex is given (codex
// posts to <base_url>/responses).
func (s *Server) OpenAIBaseURL() string { return s.url + "/v1" }

// CodexEnv returns the environment entries codex needs besides the model
// provider its runner configures (base_url OpenAIBaseURL, env_key
// OPENAI_API_KEY, retries 0): OPENAI_API_KEY=test-key. Callers add
// CODEX_HOME, an existing private directory.
func (s *Server) CodexEnv() []string {
	return []string{"OPENAI_API_KEY=" + APIKey}
}

// Env is the environment entries that point every CLI at the server
// (ClaudeEnv, GeminiEnv of home, CodexEnv) and the upstream a relay in
// front of codex forwards to (OPENAI_BASE_URL=OpenAIBaseURL()).
func (s *Server) Env(home string) ([]string, error) {
	genv, err := s.GeminiEnv(home)
	if err != nil {
		return nil, err
	}
	env := append(s.ClaudeEnv(), genv...)
	return append(append(env, s.CodexEnv()...), "OPENAI_BASE_URL="+s.OpenAIBaseURL()), nil
}

// GeminiEnv prepares home as gemini's HOME and returns the environment
// entries that point gemini at the server: GEMINI_API_KEY=test-key,
// GOOGLE_GEMINI_BASE_URL, HOME=home and GEMINI_CLI_TRUST_WORKSPACE=true.
//
// It writes <home>/.gemini/settings.json with API-key auth, usage
// statistics, telemetry and auto-update off (no phone-home) and
// general.maxAttempts 1 (no retries: a scripted error fails at once instead
// of after ~220 s of backoff). Settings already in the file are kept unless
// they are among these. Callers should add GEMINI_CLI_NO_RELAUNCH=true
// (faster start, signals reach the real process) and TMPDIR, and pass
// -m MODEL (without it gemini first calls a router model; the server
// answers that too).
func (s *Server) GeminiEnv(home string) ([]string, error) {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("modelserver: gemini home: %w", err)
	}
	path := filepath.Join(dir, "settings.json")
	settings := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &settings); err != nil {
			return nil, fmt.Errorf("modelserver: existing %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("modelserver: gemini settings: %w", err)
	}
	mergeSettings(settings, map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general": map[string]any{
			"enableAutoUpdate":             false,
			"enableAutoUpdateNotification": false,
			"maxAttempts":                  1,
		},
	})
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("modelserver: gemini settings: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("modelserver: gemini settings: %w", err)
	}
	return []string{
		"GEMINI_API_KEY=" + APIKey,
		"GOOGLE_GEMINI_BASE_URL=" + s.url,
		"HOME=" + home,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
	}, nil
}

// mergeSettings copies src into dst, recursing into objects present in both.
func mergeSettings(dst, src map[string]any) {
	for k, v := range src {
		sv, sok := v.(map[string]any)
		dv, dok := dst[k].(map[string]any)
		if sok && dok {
			mergeSettings(dv, sv)
			continue
		}
		if sok {
			v = maps.Clone(sv)
		}
		dst[k] = v
	}
}

var geminiPath = lazy.MustCompile(`^/v1[a-z0-9]*/models/([^/:]+):([A-Za-z]+)$`)

// exchange is one request being answered: its log entry and the writer.
type exchange struct {
	s   *Server
	idx int
	rec Request
	w   http.ResponseWriter
	r   *http.Request
}

// update stores the exchange's log entry.
func (x *exchange) update() {
	x.s.mu.Lock()
	x.s.requests[x.idx] = x.rec
	x.s.mu.Unlock()
}

// writeJSON answers with status and v as JSON.
func (x *exchange) writeJSON(status int, v any) {
	x.rec.Status = status
	x.w.Header().Set("Content-Type", "application/json")
	x.w.WriteHeader(status)
	_ = json.NewEncoder(x.w).Encode(v)
}

// startStream sends the headers of a Server-Sent Events answer.
func (x *exchange) startStream() {
	x.rec.Status = http.StatusOK
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
}

// flush pushes what was written so far to the client.
func (x *exchange) flush() {
	_ = http.NewResponseController(x.w).Flush()
}

// logf logs through the configured function.
func (x *exchange) logf(format string, args ...any) {
	x.s.cfg.logf("modelserver: "+format, args...)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		http.Error(w, "modelserver: closed", http.StatusServiceUnavailable)
		return
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()

	x := &exchange{s: s, w: w, r: r, rec: Request{
		Method:    r.Method,
		Path:      r.URL.Path,
		Query:     r.URL.RawQuery,
		Header:    r.Header.Clone(),
		Script:    -1,
		Turn:      -1,
		Start:     time.Now(),
		SessionID: r.Header.Get("X-Claude-Code-Session-Id"),
	}}
	body, bodyErr := readBody(r)
	x.rec.Body = body
	m := geminiPath.FindStringSubmatch(r.URL.Path)
	switch {
	case r.URL.Path == "/v1/messages" || strings.HasPrefix(r.URL.Path, "/v1/messages/"):
		x.rec.API = APIAnthropic
	case m != nil:
		x.rec.API = APIGemini
		x.rec.Model = m[1]
	case r.URL.Path == "/v1/responses" || strings.HasPrefix(r.URL.Path, "/v1/responses/"):
		x.rec.API = APIOpenAI
		x.rec.SessionID = r.Header.Get("Thread-Id")
	}
	s.mu.Lock()
	x.idx = len(s.requests)
	s.requests = append(s.requests, x.rec)
	s.mu.Unlock()
	defer func() {
		x.rec.End = time.Now()
		x.update()
		x.logf("%s %s %s main=%t script=%d turn=%d status=%d", x.rec.API, r.Method, r.URL.Path,
			x.rec.Main, x.rec.Script, x.rec.Turn, x.rec.Status)
	}()

	switch {
	case bodyErr != nil:
		x.serverError(http.StatusBadRequest, fmt.Sprintf("modelserver: reading body: %v", bodyErr))
	case r.URL.Path == "/" && (r.Method == http.MethodHead || r.Method == http.MethodGet):
		x.rec.Status = http.StatusOK
		w.WriteHeader(http.StatusOK)
	case r.Method != http.MethodPost:
		x.notFound()
	case x.rec.API == APIAnthropic && r.URL.Path == "/v1/messages":
		x.anthropicMessages()
	case x.rec.API == APIAnthropic && r.URL.Path == "/v1/messages/count_tokens":
		x.writeJSON(http.StatusOK, map[string]any{"input_tokens": inputTokens})
	case x.rec.API == APIGemini && m[2] == "streamGenerateContent":
		x.geminiGenerate(true)
	case x.rec.API == APIGemini && m[2] == "generateContent":
		x.geminiGenerate(false)
	case x.rec.API == APIGemini && m[2] == "countTokens":
		x.writeJSON(http.StatusOK, map[string]any{"totalTokens": inputTokens})
	case x.rec.API == APIOpenAI && r.URL.Path == "/v1/responses":
		x.openaiResponses()
	default:
		x.notFound()
	}
}

func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		rd = zr
	}
	return io.ReadAll(rd)
}

// notFound answers 404 with a body every CLI can read: it has the fields of
// an Anthropic error, of a Google API error and of an OpenAI error.
func (x *exchange) notFound() {
	msg := fmt.Sprintf("modelserver: no route for %s %s", x.r.Method, x.r.URL.Path)
	x.writeJSON(http.StatusNotFound, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": "not_found_error", "code": http.StatusNotFound, "message": msg, "status": "NOT_FOUND"},
	})
}

// serverError answers an error of the server's own (not a scripted one)
// in the shape of the request's API, and logs it.
func (x *exchange) serverError(status int, msg string) {
	x.logf("%s", msg)
	x.apiError(status, msg)
}

// scriptedError answers a turn's scripted error in the shape of the
// request's API.
func (x *exchange) scriptedError(e *HTTPError) {
	if x.rec.API == APIOpenAI {
		x.openaiError(e.Status, e.Message, time.Duration(e.ResetsIn))
		return
	}
	if e.Status == http.StatusTooManyRequests && e.ResetsIn > 0 {
		x.usageLimit(e.Message, time.Duration(e.ResetsIn))
		return
	}
	x.apiError(e.Status, e.Message)
}

// usageLimit answers a 429 that says the account's limit is spent until
// resetsIn from now, as each API says it: Anthropic with its unified rate
// limit headers (a subscription's five-hour window: status rejected, the
// reset in Unix seconds) and Retry-After; Gemini with RESOURCE_EXHAUSTED,
// a QuotaFailure and a RetryInfo whose retryDelay is the wait.
func (x *exchange) usageLimit(msg string, resetsIn time.Duration) {
	h := x.w.Header()
	secs := int64(resetsIn.Seconds())
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	if x.rec.API == APIGemini {
		if msg == "" {
			msg = fmt.Sprintf("You exceeded your current quota, please check your plan and billing details. Please retry in %ds.", secs)
		}
		x.writeJSON(http.StatusTooManyRequests, map[string]any{"error": map[string]any{
			"code": http.StatusTooManyRequests, "message": msg, "status": "RESOURCE_EXHAUSTED",
			"details": []any{
				map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
					"quotaMetric": "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count",
					"quotaId":     "GenerateContentPaidTierInputTokensPerModelPerDay"}}},
				map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": fmt.Sprintf("%ds", secs)},
			},
		}})
		return
	}
	h.Set("anthropic-ratelimit-unified-status", "rejected")
	h.Set("anthropic-ratelimit-unified-reset", strconv.FormatInt(time.Now().Add(resetsIn).Unix(), 10))
	h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
	if msg == "" {
		msg = "This request would exceed your account's rate limit. Please try again later."
	}
	x.writeJSON(http.StatusTooManyRequests, map[string]any{
		"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": msg},
	})
}

// apiError answers status with the error body of the request's API.
func (x *exchange) apiError(status int, msg string) {
	if x.rec.API == APIOpenAI {
		x.openaiError(status, msg, 0)
		return
	}
	if status == http.StatusTooManyRequests || status >= 500 {
		x.w.Header().Set("Retry-After", "0")
	}
	if x.rec.API == APIGemini {
		x.writeJSON(status, map[string]any{"error": map[string]any{
			"code": status, "message": msg, "status": googleStatus(status),
		}})
		return
	}
	x.writeJSON(status, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": anthropicErrorType(status), "message": msg},
	})
}

func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func googleStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 500:
		return "INTERNAL"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "UNKNOWN"
}

// nextMessageID returns an Anthropic message id never used before by this
// server (claude merges assistant messages that share an id).
func (s *Server) nextMessageID() string { return s.nextID("msg") }

// nextID returns an id with the given prefix ("msg", "resp", "fc"...)
// never used before by this server.
func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgSeq++
	return fmt.Sprintf("%s_fake_%s_%04d", prefix, s.token, s.msgSeq)
}
