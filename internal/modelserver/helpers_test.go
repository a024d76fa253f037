package modelserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// startServer starts a server for sc that logs to t and closes with the test.
func startServer(t *testing.T, sc Scenario, opts ...Option) *Server {
	t.Helper()
	s, err := Start(sc, append([]Option{WithLogf(t.Logf)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// msg is an anthropic message for building request bodies.
type msg struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func toolUse(id, name string) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}
}

func toolResult(id, content string, isError bool) map[string]any {
	return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": isError}
}

// claudeBody builds a /v1/messages body like claude's: tools declared (a main
// turn) unless noTools, a system prompt naming the working directory.
func claudeBody(workdir string, noTools bool, msgs ...msg) map[string]any {
	b := map[string]any{
		"model":  "claude-opus-4-8",
		"stream": true,
		"system": []any{
			text("x-anthropic-billing-header: cc_version=2.1.332"),
			text("\n# Environment\nYou have been invoked in the following environment: \n - Primary working directory: " + workdir + "\n - Is a git repository: true\n"),
		},
		"messages": msgs,
	}
	if !noTools {
		b["tools"] = []any{map[string]any{"name": "Write", "input_schema": map[string]any{"type": "object"}}}
	}
	return b
}

// geminiBody builds a generateContent body like gemini's.
func geminiBody(workdir string, contents ...map[string]any) map[string]any {
	ctx := map[string]any{"role": "user", "parts": []any{
		map[string]any{"text": "<session_context>\nThis is the Gemini CLI.\n- **Workspace Directories:**\n  - " + workdir + "\n- **Directory Structure:**\n</session_context>"},
	}}
	return map[string]any{
		"contents":         append([]map[string]any{ctx}, contents...),
		"tools":            []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "read_file"}}}},
		"generationConfig": map[string]any{"temperature": 1},
	}
}

func userParts(parts ...any) map[string]any  { return map[string]any{"role": "user", "parts": parts} }
func modelParts(parts ...any) map[string]any { return map[string]any{"role": "model", "parts": parts} }

func post(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	Name string
	Data map[string]any
}

// readSSE reads every event of an SSE body.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data))
		case line == "" && cur.Data != nil:
			out = append(out, cur)
			cur = sseEvent{}
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// claudeTurn posts a claude request and returns the assistant message it
// got: the message id and content blocks reassembled from the stream.
func claudeTurn(t *testing.T, s *Server, body any) (id string, blocks []map[string]any) {
	t.Helper()
	resp := post(t, s.URL()+"/v1/messages?beta=true", body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	evs := readSSE(t, resp.Body)
	require.NotEmpty(t, evs)
	require.Equal(t, "message_start", evs[0].Name)
	require.Equal(t, "message_stop", evs[len(evs)-1].Name)
	id = evs[0].Data["message"].(map[string]any)["id"].(string)
	for _, ev := range evs {
		require.Equal(t, ev.Name, ev.Data["type"])
		switch ev.Name {
		case "content_block_start":
			blocks = append(blocks, ev.Data["content_block"].(map[string]any))
		case "content_block_delta":
			b := blocks[len(blocks)-1]
			d := ev.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + d["text"].(string)
			case "input_json_delta":
				var in map[string]any
				require.NoError(t, json.Unmarshal([]byte(d["partial_json"].(string)), &in))
				b["input"] = in
			}
		}
	}
	return id, blocks
}

// geminiTurn posts a gemini streamed request and returns the parts answered.
func geminiTurn(t *testing.T, s *Server, body any) []map[string]any {
	t.Helper()
	resp := post(t, s.URL()+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var parts []map[string]any
	for _, frame := range strings.Split(string(raw), "\r\n\r\n") {
		if frame == "" {
			continue
		}
		require.True(t, strings.HasPrefix(frame, "data: "), "frame %q", frame)
		var chunk struct {
			Candidates []struct {
				Content struct {
					Role  string           `json:"role"`
					Parts []map[string]any `json:"parts"`
				} `json:"content"`
				FinishReason string `json:"finishReason"`
			} `json:"candidates"`
		}
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(frame, "data: ")), &chunk))
		require.Len(t, chunk.Candidates, 1)
		require.Equal(t, "model", chunk.Candidates[0].Content.Role)
		require.Equal(t, "STOP", chunk.Candidates[0].FinishReason)
		parts = append(parts, chunk.Candidates[0].Content.Parts...)
	}
	return parts
}
