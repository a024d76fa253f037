package modelserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codexTools are the tools codex 0.171.0 declares for gpt-5.5 with spawn's
// settings: exec_command a function, apply_patch a custom (freeform) tool.
var codexTools = []any{
	map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{"type": "object"}},
	map[string]any{"type": "function", "name": "write_stdin", "parameters": map[string]any{"type": "object"}},
	map[string]any{"type": "custom", "name": "apply_patch", "format": map[string]any{"type": "grammar"}},
}

// codexBody builds a /v1/responses body like codex's: the environment
// context naming the working directory, then items.
func codexBody(workdir string, items ...map[string]any) map[string]any {
	input := []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{inputText("You are Codex.")}},
		map[string]any{"type": "message", "role": "user", "content": []any{
			inputText("<environment_context>\n  <cwd>" + workdir + "</cwd>\n  <shell>bash</shell>\n</environment_context>"),
		}},
	}
	for _, it := range items {
		input = append(input, it)
	}
	return map[string]any{"model": "gpt-5.5", "stream": true, "input": input, "tools": codexTools,
		"tool_choice": "auto", "parallel_tool_calls": true, "store": false}
}

func inputText(s string) map[string]any { return map[string]any{"type": "input_text", "text": s} }

func userItem(s string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{inputText(s)}}
}

func assistantItem(s string) map[string]any {
	return map[string]any{"type": "message", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": s}}}
}

func callItem(typ, id, name string) map[string]any {
	return map[string]any{"type": typ, "call_id": id, "name": name}
}

func outputItem(typ, id string, output any) map[string]any {
	return map[string]any{"type": typ, "call_id": id, "output": output}
}

// openaiTurn posts a codex request and returns the stream's events after
// checking what every Responses stream must hold: response.created first
// and response.completed last, sequence numbers 0, 1, 2..., each item's
// events between its output_item.added and output_item.done, the deltas
// adding up to the done item. It returns the completed response's output
// items and the response.
func openaiTurn(t *testing.T, s *Server, body any) (items []map[string]any, response map[string]any) {
	t.Helper()
	resp := post(t, s.URL()+"/v1/responses", body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	evs := readSSE(t, resp.Body)
	require.GreaterOrEqual(t, len(evs), 3)
	require.Equal(t, "response.created", evs[0].Name)
	require.Equal(t, "response.in_progress", evs[1].Name)
	require.Equal(t, "response.completed", evs[len(evs)-1].Name)
	var open map[string]any // the item between added and done
	var streamed string     // its deltas
	for i, ev := range evs {
		require.Equal(t, ev.Name, ev.Data["type"])
		require.Equal(t, float64(i), ev.Data["sequence_number"], ev.Name)
		switch ev.Name {
		case "response.output_item.added":
			require.Nil(t, open, "item added while another is open")
			open = ev.Data["item"].(map[string]any)
			streamed = ""
			assert.Equal(t, "in_progress", open["status"])
			assert.Equal(t, float64(len(items)), ev.Data["output_index"])
		case "response.output_text.delta", "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
			require.NotNil(t, open)
			assert.Equal(t, open["id"], ev.Data["item_id"])
			streamed += ev.Data["delta"].(string)
		case "response.output_item.done":
			done := ev.Data["item"].(map[string]any)
			require.NotNil(t, open)
			assert.Equal(t, open["id"], done["id"])
			assert.Equal(t, "completed", done["status"])
			switch done["type"] {
			case "message":
				assert.Equal(t, done["content"].([]any)[0].(map[string]any)["text"], streamed)
			case "function_call":
				assert.Equal(t, done["arguments"], streamed)
			case "custom_tool_call":
				assert.Equal(t, done["input"], streamed)
			}
			items = append(items, done)
			open = nil
		}
	}
	require.Nil(t, open, "item never done")
	response = evs[len(evs)-1].Data["response"].(map[string]any)
	assert.Equal(t, evs[0].Data["response"].(map[string]any)["id"], response["id"])
	assert.Equal(t, "completed", response["status"])
	out, err := json.Marshal(response["output"])
	require.NoError(t, err)
	want, err := json.Marshal(items)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(out), "completed output is the done items")
	return items, response
}

func TestOpenAITurnSelectionFollowsCallOutputs(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
	s := startServer(t, Scenario{OpenAI: []Script{{Match: "make hello", Turns: []Turn{
		{Text: "Looking in {{workdir}}.", Tools: []ToolCall{{ID: "call_ls", Name: "exec_command", Input: map[string]any{"cmd": "ls {{workdir}}"}}}},
		{Tools: []ToolCall{{ID: "call_patch", Name: "apply_patch", Input: map[string]any{"input": patch}}}},
		{Text: "Created hello.txt."},
	}}}})
	wd := "/sandbox/work"
	ids := map[string]bool{}

	// # no history: turn 0, a message then a function call with JSON arguments
	items, resp := openaiTurn(t, s, codexBody(wd, userItem("make hello\n")))
	ids[resp["id"].(string)] = true
	require.Len(t, items, 2)
	assert.Equal(t, "message", items[0]["type"])
	assert.Equal(t, "assistant", items[0]["role"])
	assert.Equal(t, "Looking in /sandbox/work.", items[0]["content"].([]any)[0].(map[string]any)["text"])
	assert.Equal(t, "function_call", items[1]["type"])
	assert.Equal(t, "call_ls", items[1]["call_id"])
	assert.Equal(t, "exec_command", items[1]["name"])
	assert.JSONEq(t, `{"cmd":"ls /sandbox/work"}`, items[1]["arguments"].(string))
	usage := resp["usage"].(map[string]any)
	assert.Equal(t, float64(inputTokens), usage["input_tokens"])
	assert.Equal(t, float64(outputTokens), usage["output_tokens"])
	assert.Equal(t, float64(openaiCachedTokens), usage["input_tokens_details"].(map[string]any)["cached_tokens"])

	// # the call's output is in the input: turn 1, apply_patch as the custom
	// tool the request declares, its raw patch as input
	history := []map[string]any{userItem("make hello\n"), assistantItem("Looking in /sandbox/work."),
		callItem("function_call", "call_ls", "exec_command"),
		outputItem("function_call_output", "call_ls", "Process exited with code 0\nOutput:\nREADME.md\n")}
	items, resp = openaiTurn(t, s, codexBody(wd, history...))
	ids[resp["id"].(string)] = true
	require.Len(t, items, 1)
	assert.Equal(t, "custom_tool_call", items[0]["type"])
	assert.Equal(t, "apply_patch", items[0]["name"])
	assert.Equal(t, "call_patch", items[0]["call_id"])
	assert.Equal(t, patch, items[0]["input"])

	// # a custom tool output, as a list of content items: turn 2
	history = append(history, callItem("custom_tool_call", "call_patch", "apply_patch"),
		outputItem("custom_tool_call_output", "call_patch", []any{inputText("Success. Updated the following files:"), inputText("A hello.txt")}))
	items, resp = openaiTurn(t, s, codexBody(wd, history...))
	ids[resp["id"].(string)] = true
	require.Len(t, items, 1)
	assert.Equal(t, "Created hello.txt.", items[0]["content"].([]any)[0].(map[string]any)["text"])

	// # a resumed thread replays it all plus a new prompt: the text turn is
	// done by its appearance, so the script is exhausted
	history = append(history, assistantItem("Created hello.txt."), userItem("anything else?"))
	items, resp = openaiTurn(t, s, codexBody(wd, history...))
	ids[resp["id"].(string)] = true
	assert.Equal(t, FinalText, items[0]["content"].([]any)[0].(map[string]any)["text"])

	// # every response and item had its own id
	assert.Len(t, ids, 4)
	reqs := s.Requests()
	require.Len(t, reqs, 4)
	for i, r := range reqs {
		assert.Equal(t, APIOpenAI, r.API)
		assert.True(t, r.Main)
		assert.Equal(t, "gpt-5.5", r.Model)
		assert.Equal(t, i, r.Turn)
	}
	assert.Equal(t, []ToolResultSeen{
		{ID: "call_ls", Name: "exec_command", Content: "Process exited with code 0\nOutput:\nREADME.md\n"},
		{ID: "call_patch", Name: "apply_patch", Content: "Success. Updated the following files:\nA hello.txt"},
	}, reqs[3].ToolResults())
	assert.Equal(t, []string{"<environment_context>\n  <cwd>/sandbox/work</cwd>\n  <shell>bash</shell>\n</environment_context>",
		"make hello\n", "anything else?"}, reqs[3].UserTexts())
	require.NoError(t, s.Verify())
}

func TestOpenAIToolShapeFollowsTheRequest(t *testing.T) {
	// A model whose apply_patch is a function (no custom tool declared)
	// gets a function call with {"input": patch} as its arguments.
	s := startServer(t, Scenario{OpenAI: []Script{{Turns: []Turn{
		{Tools: []ToolCall{{ID: "p1", Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** End Patch\n"}}}},
	}}}})
	body := codexBody("/w", userItem("go"))
	body["tools"] = []any{map[string]any{"type": "function", "name": "apply_patch"}}
	items, _ := openaiTurn(t, s, body)
	require.Len(t, items, 1)
	assert.Equal(t, "function_call", items[0]["type"])
	assert.JSONEq(t, `{"input":"*** Begin Patch\n*** End Patch\n"}`, items[0]["arguments"].(string))
}

func TestOpenAISideRequestAndNonStreamed(t *testing.T) {
	s := startServer(t, Scenario{OpenAI: []Script{{Turns: []Turn{{Text: "main answer"}}}}})

	// # no tools: a side request, answered without consuming the turn
	body := codexBody("/w", userItem("summarize"))
	delete(body, "tools")
	items, streamed := openaiTurn(t, s, body)
	assert.Equal(t, openaiSideText, items[0]["content"].([]any)[0].(map[string]any)["text"])

	// # stream false: one JSON response object
	body = codexBody("/w", userItem("go"))
	body["stream"] = false
	resp := post(t, s.URL()+"/v1/responses", body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var r map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	assert.Equal(t, "response", r["object"])
	assert.Equal(t, "completed", r["status"])
	out := r["output"].([]any)
	require.Len(t, out, 1)
	assert.Equal(t, "main answer", out[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])

	reqs := s.Requests()
	require.Len(t, reqs, 2)
	assert.False(t, reqs[0].Main)
	assert.Equal(t, -1, reqs[0].Turn)
	assert.True(t, reqs[1].Main)
	assert.Equal(t, 0, reqs[1].Turn)

	// # each answer's usage is logged as it reported it
	for i, usage := range []any{streamed["usage"], r["usage"]} {
		u := usage.(map[string]any)
		assert.Equal(t, Usage{Input: int64(u["input_tokens"].(float64)), Cached: int64(u["input_tokens_details"].(map[string]any)["cached_tokens"].(float64)),
			Output: int64(u["output_tokens"].(float64))}, reqs[i].Usage, "request %d", i)
	}
}

func TestOpenAIErrors(t *testing.T) {
	s := startServer(t, Scenario{OpenAI: []Script{
		{Match: "limit", Turns: []Turn{{Error: &HTTPError{Status: 429, ResetsIn: Duration(90 * time.Minute)}}}},
		{Match: "auth", Turns: []Turn{{Error: &HTTPError{Status: 401, Message: "Incorrect API key provided"}}}},
		{Match: "crash", Turns: []Turn{{Text: "recovered", Error: &HTTPError{Status: 500, Message: "boom", Times: 1}}}},
	}})
	decode := func(resp *http.Response) map[string]any {
		t.Helper()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var e map[string]any
		require.NoError(t, json.Unmarshal(b, &e), "%s", b)
		return e["error"].(map[string]any)
	}

	// # a usage limit: the body and headers ChatGPT's Codex backend sends
	before := time.Now()
	resp := post(t, s.URL()+"/v1/responses", codexBody("/w", userItem("limit")))
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	e := decode(resp)
	assert.Equal(t, "usage_limit_reached", e["type"])
	assert.Equal(t, "plus", e["plan_type"])
	assert.Equal(t, float64(5400), e["resets_in_seconds"])
	at := int64(e["resets_at"].(float64))
	assert.InDelta(t, before.Add(90*time.Minute).Unix(), at, 2)
	assert.Equal(t, "100.0", resp.Header.Get("x-codex-primary-used-percent"))
	assert.Equal(t, "300", resp.Header.Get("x-codex-primary-window-minutes"))
	assert.Equal(t, "5400", resp.Header.Get("x-codex-primary-reset-after-seconds"))
	assert.Equal(t, strconv.FormatInt(at, 10), resp.Header.Get("x-codex-primary-reset-at"))

	// # an authentication failure
	resp = post(t, s.URL()+"/v1/responses", codexBody("/w", userItem("auth")))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, map[string]any{"message": "Incorrect API key provided", "type": "invalid_request_error",
		"param": nil, "code": "invalid_api_key"}, decode(resp))

	// # a server error once, then the turn
	resp = post(t, s.URL()+"/v1/responses", codexBody("/w", userItem("crash")))
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Equal(t, "0", resp.Header.Get("Retry-After"))
	assert.Equal(t, map[string]any{"message": "boom", "type": "server_error", "param": nil, "code": nil}, decode(resp))
	items, _ := openaiTurn(t, s, codexBody("/w", userItem("crash")))
	assert.Equal(t, "recovered", items[0]["content"].([]any)[0].(map[string]any)["text"])

	// # the server's own errors take the API's shape too
	none := startServer(t, Scenario{})
	resp = post(t, none.URL()+"/v1/responses", codexBody("/w", userItem("x")))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, decode(resp)["message"], "no openai script matches")

	_, err := Start(Scenario{OpenAI: []Script{{Turns: []Turn{{Error: &HTTPError{Status: 429, ResetsIn: -1}}}}}})
	assert.ErrorContains(t, err, "openai[0].turns[0]: negative error resets_in")
}

func TestCodexEnvAndVerify(t *testing.T) {
	s := startServer(t, Scenario{OpenAI: []Script{{Match: "x", Turns: []Turn{{Text: "one"}}}}})
	assert.Equal(t, s.URL()+"/v1", s.OpenAIBaseURL())
	assert.Equal(t, []string{"OPENAI_API_KEY=test-key"}, s.CodexEnv())
	err := s.Verify()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `openai script 0 (match "x") turn 0`)
	openaiTurn(t, s, codexBody("/w", userItem("x")))
	assert.NoError(t, s.Verify())
}

func TestRecordedCodexRequest(t *testing.T) {
	// The request codex 0.171.0 sent after its third tool call (recorded by
	// runners' TestCodexCoderRunsACommandAndWritesAFileWithApplyPatch with
	// -record): two exec_command outputs and one apply_patch output, in
	// /sandbox/work.
	s := startServer(t, Scenario{OpenAI: []Script{{Match: "add hello.txt", Turns: []Turn{
		{Tools: []ToolCall{{ID: "call_status", Name: "exec_command", Input: map[string]any{"cmd": "git status --short && ls"}}}},
		{Tools: []ToolCall{{ID: "call_patch", Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** End Patch\n"}}}},
		{Tools: []ToolCall{{ID: "call_cat", Name: "exec_command", Input: map[string]any{"cmd": "cat hello.txt"}}}},
		{Text: "Done in {{workdir}}."},
	}}}})
	items, _ := openaiTurn(t, s, recordedBody(t, "openai-request-turn3.json"))
	require.Len(t, items, 1)
	assert.Equal(t, "Done in /sandbox/work.", items[0]["content"].([]any)[0].(map[string]any)["text"])

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, 3, reqs[0].Turn)
	assert.Equal(t, "gpt-5.5", reqs[0].Model)
	results := reqs[0].ToolResults()
	require.Len(t, results, 3)
	for i, want := range []struct{ id, name, content string }{
		{"call_status", "exec_command", "Process exited with code 0\n"},
		{"call_patch", "apply_patch", "Success. Updated the following files:\nA hello.txt\n"},
		{"call_cat", "exec_command", "Output:\nhello from codex\n"},
	} {
		assert.Equal(t, want.id, results[i].ID)
		assert.Equal(t, want.name, results[i].Name)
		assert.False(t, results[i].IsError)
		assert.Contains(t, results[i].Content, want.content)
	}
	assert.Contains(t, reqs[0].UserTexts(), "add hello.txt")
}
