package modelserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threeTurns is the usual coder script: Write, Bash, then a closing text.
func threeTurns() Scenario {
	return Scenario{Anthropic: []Script{{Match: "create hello", Turns: []Turn{
		{Text: "I'll create the file.", Tools: []ToolCall{{ID: "toolu_a", Name: "Write",
			Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}}}},
		{Tools: []ToolCall{{ID: "toolu_b", Name: "Bash", Input: map[string]any{"command": "git commit -am msg"}}}},
		{Text: "FINAL: committed."},
	}}}}
}

const prompt = "create hello.txt and commit it"

func TestAnthropicTurnSelectionFollowsToolResults(t *testing.T) {
	s := startServer(t, threeTurns())
	wd := "/work/repo"
	user := msg{Role: "user", Content: []any{text("<system-reminder>date</system-reminder>"), text(prompt)}}
	system := msg{Role: "system", Content: "Available agent types for the Agent tool: ..."}
	ids := map[string]bool{}

	// # first request: no history -> turn 0, the Write with {{workdir}} replaced
	id, blocks := claudeTurn(t, s, claudeBody(wd, false, user, system))
	ids[id] = true
	require.Len(t, blocks, 2)
	assert.Equal(t, map[string]any{"type": "text", "text": "I'll create the file."}, blocks[0])
	assert.Equal(t, "tool_use", blocks[1]["type"])
	assert.Equal(t, "toolu_a", blocks[1]["id"])
	assert.Equal(t, "Write", blocks[1]["name"])
	assert.Equal(t, map[string]any{"file_path": wd + "/hello.txt", "content": "hi\n"}, blocks[1]["input"])

	// # second request: claude split the answer into two assistant messages
	// sharing an id and duplicated one; only the tool result counts -> turn 1
	history := []msg{user, system,
		{Role: "assistant", Content: []any{text("I'll create the file.")}},
		{Role: "assistant", Content: []any{text("I'll create the file.")}},
		{Role: "assistant", Content: []any{toolUse("toolu_a", "Write")}},
		{Role: "user", Content: []any{toolResult("toolu_a", "File created successfully", false)}},
	}
	id, blocks = claudeTurn(t, s, claudeBody(wd, false, history...))
	ids[id] = true
	require.Len(t, blocks, 1)
	assert.Equal(t, "toolu_b", blocks[0]["id"])
	assert.Equal(t, "Bash", blocks[0]["name"])

	// # a denied call still has a result: the turn is done -> turn 2
	history = append(history,
		msg{Role: "assistant", Content: []any{toolUse("toolu_b", "Bash")}},
		msg{Role: "user", Content: []any{toolResult("toolu_b", "requires approval", true)}})
	id, blocks = claudeTurn(t, s, claudeBody(wd, false, history...))
	ids[id] = true
	assert.Equal(t, []map[string]any{{"type": "text", "text": "FINAL: committed."}}, blocks)

	// # a resumed session replays all of it plus a new prompt: the script is
	// exhausted, so the server closes with FinalText
	history = append(history,
		msg{Role: "assistant", Content: "FINAL: committed."},
		msg{Role: "user", Content: "anything else?"})
	id, blocks = claudeTurn(t, s, claudeBody(wd, false, history...))
	ids[id] = true
	assert.Equal(t, []map[string]any{{"type": "text", "text": FinalText}}, blocks)

	// # every answer had its own message id
	assert.Len(t, ids, 4)

	reqs := s.Requests()
	require.Len(t, reqs, 4)
	for i, r := range reqs {
		assert.Equal(t, APIAnthropic, r.API)
		assert.True(t, r.Main)
		assert.Equal(t, 0, r.Script)
		assert.Equal(t, i, r.Turn) // 3 == len(Turns): exhausted
		assert.Equal(t, http.StatusOK, r.Status)
		assert.Equal(t, "/v1/messages", r.Path)
		assert.Equal(t, "beta=true", r.Query)
		assert.Equal(t, "claude-opus-4-8", r.Model)
		assert.False(t, r.End.Before(r.Start))
	}
	assert.Equal(t, []ToolResultSeen{
		{ID: "toolu_a", Name: "Write", Content: "File created successfully"},
		{ID: "toolu_b", Name: "Bash", IsError: true, Content: "requires approval"},
	}, reqs[3].ToolResults())
	assert.Equal(t, []string{"<system-reminder>date</system-reminder>", prompt, "anything else?"}, reqs[3].UserTexts())
}

func TestTextTurnIsDoneWhenSaid(t *testing.T) {
	s := startServer(t, Scenario{Anthropic: []Script{{Turns: []Turn{
		{Text: "Working in {{workdir}}."},
		{Tools: []ToolCall{{ID: "t1", Name: "Read", Input: map[string]any{"file_path": "{{workdir}}/a"}}}},
	}}}})
	user := msg{Role: "user", Content: "go"}

	_, blocks := claudeTurn(t, s, claudeBody("/w", false, user))
	assert.Equal(t, "Working in /w.", blocks[0]["text"])

	_, blocks = claudeTurn(t, s, claudeBody("/w", false, user,
		msg{Role: "assistant", Content: []any{text("Working in /w.")}},
		msg{Role: "user", Content: "continue"}))
	require.Len(t, blocks, 1)
	assert.Equal(t, "t1", blocks[0]["id"])
}

func TestGeminiTurnSelection(t *testing.T) {
	s := startServer(t, Scenario{Gemini: []Script{
		{Match: "fix", Turns: []Turn{{Text: "wrong script"}}},
		{Match: "review the repo", Turns: []Turn{
			{Text: "Let me read.", Tools: []ToolCall{{ID: "call_1", Name: "read_file", Input: map[string]any{"file_path": "{{workdir}}/seed.txt"}}}},
			{Tools: []ToolCall{
				{ID: "call_2", Name: "read_file", Input: map[string]any{"file_path": "{{workdir}}/a"}},
				{ID: "call_3", Name: "run_shell_command", Input: map[string]any{"command": "ls", "dirs": []any{"{{workdir}}"}}},
			}},
			{Text: "APPROVED"},
		}},
	}})
	wd := "/sandbox/work"
	prompt := userParts(map[string]any{"text": "review the repo"})

	parts := geminiTurn(t, s, geminiBody(wd, prompt))
	assert.Equal(t, []map[string]any{
		{"text": "Let me read."},
		{"functionCall": map[string]any{"id": "call_1", "name": "read_file", "args": map[string]any{"file_path": wd + "/seed.txt"}}},
	}, parts)

	history := []map[string]any{prompt,
		modelParts(map[string]any{"text": "Let me read."},
			map[string]any{"functionCall": map[string]any{"id": "call_1", "name": "read_file"}, "thoughtSignature": "skip_thought_signature_validator"}),
		userParts(map[string]any{"functionResponse": map[string]any{"id": "call_1", "name": "read_file", "response": map[string]any{"output": "seed\n"}}}),
	}
	parts = geminiTurn(t, s, geminiBody(wd, history...))
	require.Len(t, parts, 2)
	assert.Equal(t, map[string]any{"id": "call_3", "name": "run_shell_command", "args": map[string]any{"command": "ls", "dirs": []any{wd}}}, parts[1]["functionCall"])

	// # one of two parallel calls answered: the turn is not done yet
	partial := append(history,
		modelParts(map[string]any{"functionCall": map[string]any{"id": "call_2", "name": "read_file"}}),
		userParts(map[string]any{"functionResponse": map[string]any{"id": "call_2", "name": "read_file", "response": map[string]any{"output": "a"}}}))
	parts = geminiTurn(t, s, geminiBody(wd, partial...))
	assert.Len(t, parts, 2)

	done := append(partial,
		userParts(map[string]any{"functionResponse": map[string]any{"id": "call_3", "name": "run_shell_command", "response": map[string]any{"error": "Tool execution denied by policy."}}}))
	parts = geminiTurn(t, s, geminiBody(wd, done...))
	assert.Equal(t, []map[string]any{{"text": "APPROVED"}}, parts)

	reqs := s.Requests()
	require.Len(t, reqs, 4)
	for i, r := range reqs {
		assert.Equal(t, APIGemini, r.API)
		assert.Equal(t, "gemini-2.5-pro", r.Model)
		assert.Equal(t, 1, r.Script)
		assert.Equal(t, []int{0, 1, 1, 2}[i], r.Turn)
	}
	assert.Equal(t, []ToolResultSeen{
		{ID: "call_1", Name: "read_file", Content: "seed\n"},
		{ID: "call_2", Name: "read_file", Content: "a"},
		{ID: "call_3", Name: "run_shell_command", IsError: true, Content: "Tool execution denied by policy."},
	}, reqs[3].ToolResults())
	texts := reqs[3].UserTexts()
	require.Len(t, texts, 2)
	assert.Contains(t, texts[0], "<session_context>")
	assert.Equal(t, "review the repo", texts[1])
}

func TestSideRequestsConsumeNoTurn(t *testing.T) {
	s := startServer(t, threeTurns(), WithMaxRequests(1))
	user := msg{Role: "user", Content: prompt}

	// # claude's warm-up and title generation
	resp, err := http.Head(s.URL() + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_, blocks := claudeTurn(t, s, claudeBody("/w", true, msg{Role: "user", Content: "<session>\n" + prompt + "\n</session>"}))
	assert.Equal(t, anthropicSideText, blocks[0]["text"])

	// # gemini's router and a plain summary
	router := map[string]any{
		"contents": []any{userParts(map[string]any{"text": prompt})},
		"generationConfig": map[string]any{"responseMimeType": "application/json", "responseJsonSchema": map[string]any{
			"type": "OBJECT",
			"properties": map[string]any{
				"complexity_reasoning": map[string]any{"type": "STRING"},
				"complexity_score":     map[string]any{"type": "INTEGER"},
			},
			"required": []any{"complexity_reasoning", "complexity_score"},
		}},
	}
	resp = post(t, s.URL()+"/v1beta/models/gemini-3.5-flash-lite:generateContent", router)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var gen struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&gen))
	var routed map[string]any
	require.NoError(t, json.Unmarshal([]byte(gen.Candidates[0].Content.Parts[0].Text), &routed))
	assert.Equal(t, map[string]any{"complexity_reasoning": "scripted", "complexity_score": float64(1)}, routed)

	resp = post(t, s.URL()+"/v1beta/models/gemini-2.5-flash:generateContent", map[string]any{"contents": []any{userParts(map[string]any{"text": "summarise"})}})
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// # token counts and unknown paths
	resp = post(t, s.URL()+"/v1/messages/count_tokens", claudeBody("/w", false, user))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp = post(t, s.URL()+"/v2/unknown", map[string]any{})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	var notFound struct {
		Type  string         `json:"type"`
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&notFound))
	assert.Equal(t, "error", notFound.Type)
	assert.Equal(t, "NOT_FOUND", notFound.Error["status"])
	assert.Contains(t, notFound.Error["message"], "no route for POST /v2/unknown")

	// # the first main request still gets turn 0, and side requests did not
	// count towards the loop guard (max 1)
	_, blocks = claudeTurn(t, s, claudeBody("/w", false, user))
	assert.Equal(t, "toolu_a", blocks[1]["id"])

	reqs := s.Requests()
	require.Len(t, reqs, 7)
	for _, r := range reqs[:6] {
		assert.False(t, r.Main, r.Path)
		assert.Equal(t, -1, r.Script, r.Path)
		assert.Equal(t, -1, r.Turn, r.Path)
	}
	assert.Equal(t, "", reqs[0].API)
	assert.Equal(t, http.MethodHead, reqs[0].Method)
	assert.Equal(t, "gemini-3.5-flash-lite", reqs[2].Model)
	assert.Equal(t, http.StatusNotFound, reqs[5].Status)
	assert.True(t, reqs[6].Main)
}

func TestScriptedErrorTimesThenSuccess(t *testing.T) {
	s := startServer(t, Scenario{
		Anthropic: []Script{{Turns: []Turn{{Text: "recovered", Error: &HTTPError{Status: 429, Message: "slow down", Times: 2}}}}},
		Gemini: []Script{
			{Match: "always", Turns: []Turn{{Error: &HTTPError{Status: 500, Message: "fake 500"}}}},
			{Turns: []Turn{{Text: "ok now", Error: &HTTPError{Status: 401, Message: "who are you", Times: 1}}}},
		},
	})
	body := claudeBody("/w", false, msg{Role: "user", Content: "hi"})
	for range 2 {
		resp := post(t, s.URL()+"/v1/messages?beta=true", body)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		assert.Equal(t, "0", resp.Header.Get("Retry-After"))
		var e map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		assert.Equal(t, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": "slow down"}}, e)
	}
	_, blocks := claudeTurn(t, s, body)
	assert.Equal(t, "recovered", blocks[0]["text"])

	// # gemini: Times 0 means always
	always := geminiBody("/w", userParts(map[string]any{"text": "always fail"}))
	for range 3 {
		resp := post(t, s.URL()+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", always)
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		var e map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		assert.Equal(t, map[string]any{"error": map[string]any{"code": float64(500), "message": "fake 500", "status": "INTERNAL"}}, e)
	}
	once := geminiBody("/w", userParts(map[string]any{"text": "try"}))
	resp := post(t, s.URL()+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", once)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"UNAUTHENTICATED"`)
	assert.Equal(t, []map[string]any{{"text": "ok now"}}, geminiTurn(t, s, once))

	var statuses []int
	for _, r := range s.Requests() {
		statuses = append(statuses, r.Status)
		assert.Equal(t, 0, r.Turn)
	}
	assert.Equal(t, []int{429, 429, 200, 500, 500, 500, 401, 200}, statuses)
}

func TestLoopGuard(t *testing.T) {
	s := startServer(t, threeTurns(), WithMaxRequests(3))
	body := claudeBody("/w", false, msg{Role: "user", Content: prompt})
	for range 3 {
		claudeTurn(t, s, body)
	}
	for range 2 {
		resp := post(t, s.URL()+"/v1/messages?beta=true", body)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Contains(t, string(b), "loop guard: more than 3 main requests")
		assert.Contains(t, string(b), "invalid_request_error")
	}
	reqs := s.Requests()
	require.Len(t, reqs, 5)
	assert.Equal(t, -1, reqs[4].Script)
	assert.Equal(t, -1, reqs[4].Turn)
	assert.True(t, reqs[4].Main)
}

func TestNoMatchingScript(t *testing.T) {
	s := startServer(t, threeTurns())
	resp := post(t, s.URL()+"/v1/messages", claudeBody("/w", false, msg{Role: "user", Content: "something else"}))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(b), `no anthropic script matches this request (user texts: [\"something else\"])`)

	resp = post(t, s.URL()+"/v1/messages", "not an object")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestNonStreamingAnthropic(t *testing.T) {
	s := startServer(t, threeTurns())
	body := claudeBody("/w", false, msg{Role: "user", Content: prompt})
	body["stream"] = false
	resp := post(t, s.URL()+"/v1/messages", body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var m struct {
		ID         string           `json:"id"`
		StopReason string           `json:"stop_reason"`
		Content    []map[string]any `json:"content"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	assert.NotEmpty(t, m.ID)
	assert.Equal(t, "tool_use", m.StopReason)
	require.Len(t, m.Content, 2)
	assert.Equal(t, map[string]any{"file_path": "/w/hello.txt", "content": "hi\n"}, m.Content[1]["input"])
}

func TestWorkdirSubstitution(t *testing.T) {
	s := startServer(t, Scenario{
		Anthropic: []Script{{Turns: []Turn{{Tools: []ToolCall{{ID: "t1", Name: "Bash", Input: map[string]any{
			"command": "cd {{workdir}} && ls {{workdir}}/sub",
			"nested":  map[string]any{"paths": []string{"{{workdir}}/a", "b"}, "n": 3},
		}}}}}}},
		Gemini: []Script{{Turns: []Turn{{Tools: []ToolCall{{ID: "g1", Name: "write_file", Input: map[string]any{
			"file_path": "{{workdir}}/x.go", "content": "package x\n",
		}}}}}}},
	})
	_, blocks := claudeTurn(t, s, claudeBody("/tmp/repo dir", false, msg{Role: "user", Content: "go"}))
	assert.Equal(t, map[string]any{
		"command": "cd /tmp/repo dir && ls /tmp/repo dir/sub",
		"nested":  map[string]any{"paths": []any{"/tmp/repo dir/a", "b"}, "n": float64(3)},
	}, blocks[0]["input"])

	parts := geminiTurn(t, s, geminiBody("/sandbox/work", userParts(map[string]any{"text": "go"})))
	assert.Equal(t, map[string]any{"file_path": "/sandbox/work/x.go", "content": "package x\n"},
		parts[0]["functionCall"].(map[string]any)["args"])

}

// recordedBody returns the body of a request recorded from a real CLI.
func recordedBody(t *testing.T, file string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	var rec struct {
		Body map[string]any `json:"body"`
	}
	require.NoError(t, json.Unmarshal(raw, &rec))
	return rec.Body
}

func TestRecordedRequests(t *testing.T) {
	// The recorded claude request carries the results of toolu_01 and
	// toolu_02 and one role "system" message; the gemini one the result of
	// one read_file call. Both name /sandbox/work as the working directory.
	s := startServer(t, Scenario{
		Anthropic: []Script{{Match: "create hello.txt and commit it", Turns: []Turn{
			{Tools: []ToolCall{{ID: "toolu_01", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hello\n"}}}},
			{Tools: []ToolCall{{ID: "toolu_02", Name: "Bash", Input: map[string]any{"command": "git add -A && git commit -m msg"}}}},
			{Text: "FINAL: committed in {{workdir}}."},
		}}},
		Gemini: []Script{{Match: "review the repo", Turns: []Turn{
			{Tools: []ToolCall{{ID: "read_file_1795221613847_0", Name: "read_file", Input: map[string]any{"file_path": "{{workdir}}/seed.txt"}}}},
			{Tools: []ToolCall{{ID: "g2", Name: "read_file", Input: map[string]any{"file_path": "{{workdir}}/other.txt"}}}},
		}}},
	})
	_, blocks := claudeTurn(t, s, recordedBody(t, "claude-request-turn3.json"))
	assert.Equal(t, []map[string]any{{"type": "text", "text": "FINAL: committed in /sandbox/work."}}, blocks)

	parts := geminiTurn(t, s, recordedBody(t, "gemini-request-turn2.json"))
	assert.Equal(t, []map[string]any{{"functionCall": map[string]any{
		"id": "g2", "name": "read_file", "args": map[string]any{"file_path": "/sandbox/work/other.txt"},
	}}}, parts)

	reqs := s.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, 2, reqs[0].Turn)
	assert.Equal(t, []ToolResultSeen{
		{ID: "toolu_01", Name: "Write", Content: "File created successfully at: /sandbox/work/hello.txt (file state is current in your context \u2014 no need to Read it back)"},
		{ID: "toolu_02", Name: "Bash", Content: "[main d2c1c54] msg\n 1 file changed, 1 insertion(+)\n create mode 100644 hello.txt"},
	}, reqs[0].ToolResults())
	assert.Equal(t, 1, reqs[1].Turn)
	assert.Equal(t, []ToolResultSeen{{ID: "read_file_1795221613847_0", Name: "read_file", Content: "seed content line\n"}}, reqs[1].ToolResults())
}

func TestDelay(t *testing.T) {
	s := startServer(t, Scenario{Anthropic: []Script{{Turns: []Turn{{Text: "slow", Delay: Duration(150 * time.Millisecond)}}}}})
	start := time.Now()
	_, blocks := claudeTurn(t, s, claudeBody("/w", false, msg{Role: "user", Content: "go"}))
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	assert.Equal(t, "slow", blocks[0]["text"])
}

// waitInFlight waits until the server has selected a turn for n requests.
func waitInFlight(t *testing.T, s *Server, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := 0
		for _, r := range s.Requests() {
			if r.Script >= 0 && r.End.IsZero() {
				got++
			}
		}
		return got == n
	}, 5*time.Second, 5*time.Millisecond)
}

func TestHangUnblockedByClose(t *testing.T) {
	baseline := runtime.NumGoroutine()
	s, err := Start(Scenario{Anthropic: []Script{{Turns: []Turn{{Hang: true}}}}})
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{}}
	body, err := json.Marshal(claudeBody("/w", false, msg{Role: "user", Content: "go"}))
	require.NoError(t, err)

	errs := make(chan error, 2)
	for range 2 {
		go func() {
			resp, err := client.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(string(body)))
			if err == nil {
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	waitInFlight(t, s, 2)

	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return with hung requests")
	}
	for range 2 {
		assert.Error(t, <-errs, "a hung request got an answer")
	}
	for _, r := range s.Requests() {
		assert.Equal(t, 0, r.Status)
		assert.False(t, r.End.IsZero())
	}
	s.Close() // twice is fine

	// # nothing of the server is left running
	client.CloseIdleConnections()
	// (polled here: assert.Eventually runs its condition in a goroutine of
	// its own, which would be counted)
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); n > baseline && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, n, baseline, "goroutines left running")
}

func TestHangEndsWhenClientGoesAway(t *testing.T) {
	s := startServer(t, Scenario{Gemini: []Script{{Turns: []Turn{{Hang: true}}}}})
	ctx, cancel := context.WithCancel(context.Background())
	b, err := json.Marshal(geminiBody("/w", userParts(map[string]any{"text": "go"})))
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1beta/models/m:streamGenerateContent?alt=sse", strings.NewReader(string(b)))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	waitInFlight(t, s, 1)
	cancel()
	require.Error(t, <-done)
	require.Eventually(t, func() bool { return !s.Requests()[0].End.IsZero() }, 2*time.Second, 5*time.Millisecond)
}

func TestConcurrentRequestsOverlap(t *testing.T) {
	const n = 4
	s := startServer(t, Scenario{
		Gemini: []Script{{Turns: []Turn{{Text: "review done", Delay: Duration(200 * time.Millisecond)}}}},
	})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			parts := geminiTurn(t, s, geminiBody("/w", userParts(map[string]any{"text": "review domain " + string(rune('a'+i))})))
			assert.Equal(t, []map[string]any{{"text": "review done"}}, parts)
		})
	}
	wg.Wait()
	reqs := s.Requests()
	require.Len(t, reqs, n)
	latestStart, earliestEnd := reqs[0].Start, reqs[0].End
	for _, r := range reqs {
		if r.Start.After(latestStart) {
			latestStart = r.Start
		}
		if r.End.Before(earliestEnd) {
			earliestEnd = r.End
		}
	}
	assert.True(t, latestStart.Before(earliestEnd), "requests were served one after another")
}

func TestLoadScenario(t *testing.T) {
	sc, err := LoadScenario(filepath.Join("testdata", "claude-write-commit.json"))
	require.NoError(t, err)
	require.Len(t, sc.Anthropic, 1)
	turns := sc.Anthropic[0].Turns
	require.Len(t, turns, 3)
	assert.Equal(t, Duration(10*time.Millisecond), turns[1].Delay)
	assert.Equal(t, "toolu_bash_1", turns[1].Tools[0].ID)
	assert.Equal(t, &HTTPError{Status: 429, Message: "slow down", Times: 1}, sc.Gemini[0].Turns[1].Error)

	// # round trip
	b, err := json.Marshal(sc)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"delay":"10ms"`)
	var back Scenario
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, sc, back)

	_, err = LoadScenario(filepath.Join("testdata", "bad-scenario.json"))
	require.Error(t, err)
	for _, want := range []string{
		`anthropic[0].turns[1].tools[0]: id "dup" already used at anthropic[0].turns[0].tools[0]`,
		`anthropic[0].turns[1].tools[1]: id is required`,
		`anthropic[0].turns[2]: empty turn`,
		`anthropic[0].turns[3]: error status 200 not in 400..599`,
	} {
		assert.Contains(t, err.Error(), want)
	}

	_, err = LoadScenario(filepath.Join("testdata", "unknown-field.json"))
	assert.ErrorContains(t, err, `unknown field "txt"`)
	_, err = LoadScenario(filepath.Join("testdata", "missing.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	var d Duration
	assert.Error(t, json.Unmarshal([]byte(`5`), &d))
	assert.Error(t, json.Unmarshal([]byte(`"5 parsecs"`), &d))

	_, err = Start(Scenario{Gemini: []Script{{Turns: []Turn{{Tools: []ToolCall{{Name: "read_file"}}}}}}})
	assert.ErrorContains(t, err, "gemini[0].turns[0].tools[0]: id is required")
}

func TestEnv(t *testing.T) {
	s := startServer(t, Scenario{})
	assert.Equal(t, []string{
		"ANTHROPIC_BASE_URL=" + s.URL(),
		"ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_MAX_RETRIES=0",
	}, s.ClaudeEnv())
	assert.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:"))

	home := t.TempDir()
	settings := filepath.Join(home, ".gemini", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(settings), 0o755))
	require.NoError(t, os.WriteFile(settings, []byte(`{"model":{"maxSessionTurns":3},"general":{"maxAttempts":7,"vimMode":true}}`), 0o644))
	env, err := s.GeminiEnv(home)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"GEMINI_API_KEY=test-key",
		"GOOGLE_GEMINI_BASE_URL=" + s.URL(),
		"HOME=" + home,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
	}, env)
	b, err := os.ReadFile(settings)
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"security": {"auth": {"selectedType": "gemini-api-key"}},
		"privacy": {"usageStatisticsEnabled": false},
		"telemetry": {"enabled": false},
		"general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": 1, "vimMode": true},
		"model": {"maxSessionTurns": 3}
	}`, string(b))

	require.NoError(t, os.WriteFile(settings, []byte(`{not json`), 0o644))
	_, err = s.GeminiEnv(home)
	assert.Error(t, err)
}

func TestFitSchema(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   any
	}{
		{`{"type":"object","properties":{"reasoning":{"type":"string"},"next_speaker":{"type":"string","enum":["user","model"]}}}`,
			map[string]any{"reasoning": "scripted", "next_speaker": "user"}},
		{`{"type":"object","properties":{"unproductive_state_confidence":{"type":"number"},"ok":{"type":"BOOLEAN"}}}`,
			map[string]any{"unproductive_state_confidence": 0, "ok": false}},
		{`{"type":["integer","null"],"minimum":5}`, 5},
		{`{"type":"array","items":{"type":"string"},"minItems":2}`, []any{"scripted", "scripted"}},
		{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, "scripted"},
		{`{"const":"x"}`, "x"},
		{`true`, nil},
	} {
		var schema any
		require.NoError(t, json.Unmarshal([]byte(tc.schema), &schema))
		assert.EqualValues(t, tc.want, fitSchema(schema), tc.schema)
	}
}

func TestVerifyNamesTurnsNeverServed(t *testing.T) {
	srv, err := Start(Scenario{Anthropic: []Script{{Turns: []Turn{{Text: "one"}, {Text: "two"}}}}})
	require.NoError(t, err)
	defer srv.Close()
	err = srv.Verify()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "anthropic script 0 (match \"\") turn 0")
	assert.Contains(t, err.Error(), "turn 1")
}
