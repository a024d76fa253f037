package relay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sse is an upstream that streams two events, echoing the start of the
// request, and flushes between them.
func sse(t testing.TB) *url.URL {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, "data: you sent %d bytes: %s...\n\n", len(body), body[:min(len(body), 80)])
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return u
}

func post(t testing.TB, target, k, body string) (int, string) {
	t.Helper()
	return send(t, http.DefaultClient, target, k, strings.NewReader(body))
}

func redactor(secrets ...string) func(string) string {
	return func(s string) string {
		for _, x := range secrets {
			s = strings.ReplaceAll(s, x, "[REDACTED]")
		}
		return s
	}
}

// Every exchange an agent makes through the relay is in the cassette, in
// order, request and streamed answer whole, without the seat's key or the
// real one, and with every secret the run knows redacted.
func TestTheCassetteKeepsEveryExchangeRedacted(t *testing.T) {
	const canary = "sk-canary-0123456789abcdef"
	path := filepath.Join(t.TempDir(), "cassette.jsonl.gz")
	rec, err := NewRecorder(path, CassetteHeader{Context: Context{Literals: map[string]string{"sandbox": "/work/sb"}}}, 0, redactor(canary, "sk-real-secret"), nil)
	require.NoError(t, err)
	r, err := Start([]Route{{Name: "anthropic", Upstream: sse(t), Credential: key("x-api-key", "sk-real-secret"), Paths: messages}}, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	r.Record(rec)
	k, err := r.Grant("anthropic", "coder")
	require.NoError(t, err)

	system := strings.Repeat("a long system prompt that every turn sends again. ", 200)
	first := `{"messages":["write calc.go"],"system":"` + system + `"}`
	second := `{"messages":["write calc.go","key ` + canary + `"],"system":"` + system + `"}`
	code, body := post(t, r.URL("anthropic")+"/v1/messages?beta=true", k, first)
	require.Equal(t, 200, code)
	assert.Contains(t, body, "data: first\n\n")
	code, _ = post(t, r.URL("anthropic")+"/v1/messages?beta=true", k, second)
	require.Equal(t, 200, code)
	sum, err := rec.Close()
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Exchanges)
	assert.False(t, sum.Truncated)

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, int64(len(raw)), sum.Bytes)
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	for _, secret := range []string{canary, "sk-real-secret", k} {
		assert.NotContains(t, string(plain), secret)
	}
	assert.Less(t, len(plain), len(first)+len(second), "the second request is kept as a change of the first")

	h, xs, err := ReadCassette(path)
	require.NoError(t, err)
	assert.Equal(t, "/work/sb", h.Context.Literals["sandbox"])
	require.Len(t, xs, 2)
	assert.Equal(t, first, xs[0].Request)
	assert.Equal(t, strings.ReplaceAll(second, canary, "[REDACTED]"), xs[1].Request, "the change is undone on reading")
	assert.Equal(t, "coder", xs[1].Seat)
	assert.Equal(t, "/v1/messages?beta=true", xs[1].Path)
	assert.Equal(t, 200, xs[1].Status)
	assert.Equal(t, "text/event-stream", xs[1].ResponseHeader.Get("Content-Type"))
	assert.Contains(t, xs[1].Response, "data: first\n\ndata: you sent")
	assert.Contains(t, xs[1].Response, "[REDACTED]")
	assert.Empty(t, xs[1].Header.Get("x-api-key"))
}

// A cassette stops at its bound: the exchange that would pass it is not
// written, the run is told once, and the relay goes on answering.
func TestACassetteStopsAtItsBoundAndTheRelayGoesOn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cassette.jsonl.gz")
	var told []int64
	var mu sync.Mutex
	rec, err := NewRecorder(path, CassetteHeader{}, 4096, nil, func(limit int64) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, limit)
	})
	require.NoError(t, err)
	r, err := Start([]Route{{Name: "a", Upstream: sse(t), Credential: key("x-api-key", "real"), Paths: messages}}, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	r.Record(rec)
	k, err := r.Grant("a", "coder")
	require.NoError(t, err)
	for i := 0; i < 6; i++ {
		// Text that hardly compresses: each request is new.
		noise := make([]byte, 1024)
		_, err := rand.Read(noise)
		require.NoError(t, err)
		code, _ := post(t, r.URL("a")+"/v1/messages", k, hex.EncodeToString(noise))
		assert.Equal(t, 200, code, "the agent is answered whatever the cassette holds")
	}
	sum, err := rec.Close()
	require.NoError(t, err)
	assert.True(t, sum.Truncated)
	assert.LessOrEqual(t, sum.Bytes, int64(4096))
	assert.Greater(t, sum.Exchanges, 0)
	assert.Less(t, sum.Exchanges, 6)
	assert.Equal(t, []int64{4096}, told)
	_, xs, err := ReadCassette(path)
	require.NoError(t, err)
	assert.Len(t, xs, sum.Exchanges)
}

// A replay is answered from the cassette with no upstream at all: a
// request that differs only in what differs between runs (the sandbox's
// path, a session id, the date) gets the recorded answer, with the
// recorded run's paths made the replay's; a request that differs
// otherwise is refused and is the divergence, shown as a diff.
func TestAReplayIsAnsweredFromTheCassetteAndSaysWhereItDiverged(t *testing.T) {
	recorded := Context{Literals: map[string]string{"sandbox": "/old/.spawn/worktrees/run-1"}, Objects: []string{"1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}
	live := Context{Literals: map[string]string{"sandbox": "/new/.spawn/worktrees/run-2"}, Objects: []string{"2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}}
	xs := []Exchange{
		{Seq: 1, Seat: "coder", Route: "a", Method: "POST", Path: "/v1/messages", Status: 200,
			Request:        `{"cwd":"/old/.spawn/worktrees/run-1","session":"0b7e6a52-1111-4a4a-9c9c-0123456789ab","date":"Today is 2026-11-26.","memory":"-old--spawn-worktrees-run-1"}`,
			ResponseHeader: http.Header{"Content-Type": {"text/event-stream"}},
			Response:       `data: {"tool":"Write","file_path":"/old/.spawn/worktrees/run-1/calc.go"}` + "\n\n"},
		{Seq: 2, Seat: "coder", Route: "a", Method: "POST", Path: "/v1/messages", Status: 200,
			Request:  `{"cwd":"/old/.spawn/worktrees/run-1","history":["wrote calc.go","1111111 spawn: round 1"],"tool_result":"ok"}`,
			Response: "data: done\n\n"},
	}
	p := NewPlayer(xs, recorded, func() Context { return live }, nil, "[REDACTED]")
	r, err := Start([]Route{{Name: "a", Upstream: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}, Paths: messages}}, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	r.Play(p)
	k, err := r.Grant("a", "coder")
	require.NoError(t, err)

	code, body := post(t, r.URL("a")+"/v1/messages", k,
		`{"cwd":"/new/.spawn/worktrees/run-2","session":"9f00aa11-2222-4b4b-8d8d-ba9876543210","date":"Today is 2027-01-02.","memory":"-new--spawn-worktrees-run-2"}`)
	assert.Equal(t, 200, code)
	assert.Equal(t, `data: {"tool":"Write","file_path":"/new/.spawn/worktrees/run-2/calc.go"}`+"\n\n", body, "the model's path is the replay's sandbox")
	code, body = post(t, r.URL("a")+"/v1/messages", k, `{"cwd":"/new/.spawn/worktrees/run-2","history":["wrote calc.go","2222222 spawn: round 1"],"tool_result":"FAILED"}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "spawn replay: no request of the cassette matches")

	res := p.Result()
	assert.Equal(t, 1, res.Answered)
	assert.Equal(t, 1, res.Missed)
	assert.Equal(t, 1, res.Unused)
	require.NotNil(t, res.Divergence)
	d := res.Divergence
	assert.Equal(t, 2, d.Seq)
	assert.Equal(t, "coder", d.Seat)
	assert.Contains(t, d.Recorded, `"tool_result": "ok"`)
	assert.Contains(t, d.Replayed, `"tool_result": "FAILED"`)
	assert.Contains(t, d.Diff, `-  "tool_result": "ok"`)
	assert.Contains(t, d.Diff, `+  "tool_result": "FAILED"`)
	assert.NotContains(t, d.Diff, "history", "the commit's id is the same object in both runs")
}

// The cassette never slows the stream: the first event reaches the agent
// while the upstream still holds the second, with recording on.
func TestRecordingDoesNotDelayTheStream(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: second\n\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	rec, err := NewRecorder(filepath.Join(t.TempDir(), "c.jsonl.gz"), CassetteHeader{}, 0, nil, nil)
	require.NoError(t, err)
	r, err := Start([]Route{{Name: "a", Upstream: u, Credential: key("x-api-key", "real"), Paths: messages}}, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	r.Record(rec)
	k, err := r.Grant("a", "coder")
	require.NoError(t, err)
	req, _ := http.NewRequest("POST", r.URL("a")+"/v1/messages", strings.NewReader("{}"))
	req.Header.Set("x-api-key", k)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "data: first\n", line)
	close(release)
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	sum, err := rec.Close() // the answer ended after the relay handed it over

	require.NoError(t, err)
	assert.Equal(t, 1, sum.Exchanges)
}

// BenchmarkRelayRecordingLatency is what the cassette adds to a request
// through the relay: the same 80 KB request (a claude turn's size)
// through a relay without a recorder and one with, alternately, in one
// run; "on/off" is their ratio.
func BenchmarkRelayRecordingLatency(b *testing.B) {
	u := sse(b)
	start := func(rec *Recorder) (*Relay, string) {
		r, err := Start([]Route{{Name: "a", Upstream: u, Credential: key("x-api-key", "real"), Paths: messages, Meter: func() Meter { return &lengthMeter{} }}}, Options{Used: func(Usage) {}})
		require.NoError(b, err)
		r.Record(rec)
		k, err := r.Grant("a", "bench")
		require.NoError(b, err)
		return r, k
	}
	off, offKey := start(nil)
	defer off.Close()
	rec, err := NewRecorder(filepath.Join(b.TempDir(), "c.jsonl.gz"), CassetteHeader{}, 0, nil, nil)
	require.NoError(b, err)
	on, onKey := start(rec)
	defer on.Close()
	body := `{"system":"` + strings.Repeat("You are a coding agent. ", 3300) + `","messages":[%d]}`
	var tOff, tOn time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, side := range []struct {
			r   *Relay
			k   string
			sum *time.Duration
		}{{off, offKey, &tOff}, {on, onKey, &tOn}} {
			t0 := time.Now()
			req, _ := http.NewRequest("POST", side.r.URL("a")+"/v1/messages", strings.NewReader(fmt.Sprintf(body, i)))
			req.Header.Set("x-api-key", side.k)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			*side.sum += time.Since(t0)
		}
	}
	b.StopTimer()
	sum, err := rec.Close()
	require.NoError(b, err)
	b.ReportMetric(float64(tOff.Nanoseconds())/float64(b.N), "off-ns/req")
	b.ReportMetric(float64(tOn.Nanoseconds())/float64(b.N), "on-ns/req")
	b.ReportMetric(float64(tOn)/float64(tOff), "on/off")
	b.ReportMetric(float64(sum.Bytes)/float64(max(sum.Exchanges, 1)), "cassette-B/req")
}

// Normalise replaces what differs between two runs wherever it is, after
// the n of an escaped newline in a JSON string too.
func TestNormaliseFindsIdsAfterAnEscapedNewline(t *testing.T) {
	c := Context{Literals: map[string]string{"sandbox": "/w/.spawn/worktrees/r1"}, Objects: []string{"70e1c97aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}
	got := Normalise(`{"t":"cwd /w/.spawn/worktrees/r1\nRecent commits:\n70e1c97 spawn: add\n8ee3374 notes\nToday's date is 2026-11-26.\nThursday, November 26, 2026","s":"0b7e6a52-1111-4a4a-9c9c-0123456789ab"}`, c)
	assert.Equal(t, `{"t":"cwd {{sandbox}}\nRecent commits:\n{{object 1}} spawn: add\n8ee3374 notes\nToday's date is {{date}}.\n{{date}}","s":"{{uuid}}"}`, got)
}

// The skills gemini lists, in the order its concurrent search found them,
// normalise to one order.
func TestNormalisePutsGeminisSkillsInOrder(t *testing.T) {
	a := `{"t":"<available_skills>\n  <skill>\n    <name>b</name>\n  </skill>\n  <skill>\n    <name>a</name>\n  </skill>\n</available_skills>\nrest"}`
	b := `{"t":"<available_skills>\n  <skill>\n    <name>a</name>\n  </skill>\n  <skill>\n    <name>b</name>\n  </skill>\n</available_skills>\nrest"}`
	assert.Equal(t, Normalise(b, Context{}), Normalise(a, Context{}))
	assert.Equal(t, b, Normalise(a, Context{}))
}

// Where a CLI is installed normalises to one placeholder, whichever CLI's
// it is: a cassette replays from another checkout, with a CLI swapped.
func TestNormaliseNamesEveryInstallAlike(t *testing.T) {
	rec := Context{Installs: []string{"/a/node_modules", "/a/node_modules"}}
	live := Context{Installs: []string{"/tmp/x/node_modules", "/b/node_modules"}}
	assert.Equal(t, Normalise(`"/a/node_modules/@google/gemini-cli/SKILL.md"`, rec), Normalise(`"/b/node_modules/@google/gemini-cli/SKILL.md"`, live))
}

// A test runner's timings in a tool result differ in every run: they
// normalise alike, as the demo's go test shows them.
func TestNormaliseTakesTimingsForTheSame(t *testing.T) {
	a := `{"content":"--- FAIL: TestAdd (0.00s)\n    calc_test.go:7: want 5\nFAIL\nFAIL\texample.com/calc\t0.003s\nFAIL"}`
	b := `{"content":"--- FAIL: TestAdd (0.01s)\n    calc_test.go:7: want 5\nFAIL\nFAIL\texample.com/calc\t0.005s\nFAIL"}`
	assert.Equal(t, Normalise(a, Context{}), Normalise(b, Context{}))
	assert.Contains(t, Normalise(a, Context{}), `calc_test.go:7: want 5`, "a file's line is not a timing")
}
