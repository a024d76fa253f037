package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Token counts reported in every answer. They are small and fixed so that
// the costs the CLIs compute are small and predictable.
const (
	inputTokens  = 10
	outputTokens = 5
)

// anthropicSideText answers side requests. claude's session-title request
// parses a JSON object with a title; other side requests take any text.
const anthropicSideText = `{"title": "Scripted session"}`

// anthropicMessages answers POST /v1/messages.
func (x *exchange) anthropicMessages() {
	c, err := parseAnthropic(x.rec.Body)
	if err != nil {
		x.serverError(http.StatusBadRequest, fmt.Sprintf("modelserver: bad anthropic request body: %v", err))
		return
	}
	x.rec.Model = c.model
	rp := reply{text: anthropicSideText}
	if c.hasTools {
		var ok bool
		if rp, ok = x.mainTurn(x.s.sc.Anthropic, c); !ok {
			return
		}
	}
	model := c.model
	if model == "" {
		model = "claude-scripted"
	}
	id := x.s.nextMessageID()
	stop := "end_turn"
	if len(rp.tools) > 0 {
		stop = "tool_use"
	}
	var blocks []map[string]any
	if rp.text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": rp.text})
	}
	for _, t := range rp.tools {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": t.ID, "name": t.Name, "input": t.Input})
	}
	usage := map[string]any{
		"input_tokens":                inputTokens,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
		"output_tokens":               outputTokens,
	}
	if !c.stream {
		x.writeJSON(http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}

	x.startStream()
	startUsage := map[string]any{
		"input_tokens":                inputTokens,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
		"output_tokens":               1,
	}
	ev := func(name string, data map[string]any) bool {
		data["type"] = name
		b, err := json.Marshal(data)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(x.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
			return false
		}
		x.flush()
		return true
	}
	ok := ev("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}})
	for i, b := range blocks {
		var start, delta map[string]any
		if b["type"] == "text" {
			start = map[string]any{"type": "text", "text": ""}
			delta = map[string]any{"type": "text_delta", "text": b["text"]}
		} else {
			in, err := json.Marshal(b["input"])
			if err != nil {
				in = []byte("{}")
			}
			start = map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(in)}
		}
		ok = ok &&
			ev("content_block_start", map[string]any{"index": i, "content_block": start}) &&
			ev("content_block_delta", map[string]any{"index": i, "delta": delta}) &&
			ev("content_block_stop", map[string]any{"index": i})
	}
	ok = ok && ev("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outputTokens},
	})
	if ok = ok && ev("message_stop", map[string]any{}); !ok {
		x.logf("anthropic answer cut short: client gone")
	}
}
