package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// openaiSideText answers OpenAI requests that declare no tools.
const openaiSideText = "ok"

// openaiCachedTokens is the part of inputTokens an OpenAI answer reports as
// served from the prompt cache (usage.input_tokens_details.cached_tokens).
const openaiCachedTokens = 2

// usageLimitWindow is the length, in minutes, of the rate-limit window a
// scripted usage limit reports as used up (x-codex-primary-window-minutes):
// the five hours of ChatGPT's Codex plans.
const usageLimitWindow = 300

// openaiResponses answers POST /v1/responses, streamed (SSE) when the body
// says stream:true and as one JSON response object otherwise. Only a
// request that declares tools is a main turn.
//
// The stream is the Responses API's: response.created, response.in_progress,
// then per output item response.output_item.added, the item's own events
// (content_part.added, output_text.delta, output_text.done,
// content_part.done for a message; function_call_arguments.delta and .done
// for a function call; custom_tool_call_input.delta and .done for a custom
// tool call) and response.output_item.done, and last response.completed
// with the whole response and its usage. Every event carries a
// sequence_number; every response and item has an id never used before by
// this server.
func (x *exchange) openaiResponses() {
	c, err := parseOpenAI(x.rec.Body)
	if err != nil {
		x.serverError(http.StatusBadRequest, fmt.Sprintf("modelserver: bad openai request body: %v", err))
		return
	}
	x.rec.Model = c.model
	rp := reply{text: openaiSideText}
	if c.hasTools {
		var ok bool
		if rp, ok = x.mainTurn(x.s.sc.OpenAI, c); !ok {
			return
		}
	}
	model := c.model
	if model == "" {
		model = "gpt-scripted"
	}
	respID := x.s.nextID("resp")
	var items []map[string]any
	if rp.text != "" {
		items = append(items, map[string]any{
			"id": x.s.nextID("msg"), "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rp.text, "annotations": []any{}}},
		})
	}
	for _, t := range rp.tools {
		if input, ok := t.Input["input"].(string); ok && c.customTools[t.Name] {
			items = append(items, map[string]any{
				"id": x.s.nextID("ctc"), "type": "custom_tool_call", "status": "completed",
				"call_id": t.ID, "name": t.Name, "input": input,
			})
			continue
		}
		args, err := json.Marshal(t.Input)
		if err != nil {
			args = []byte("{}")
		}
		items = append(items, map[string]any{
			"id": x.s.nextID("fc"), "type": "function_call", "status": "completed",
			"call_id": t.ID, "name": t.Name, "arguments": string(args),
		})
	}
	response := func(status string, output []map[string]any, usage any) map[string]any {
		if output == nil {
			output = []map[string]any{}
		}
		return map[string]any{
			"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": model, "output": output, "parallel_tool_calls": true, "tool_choice": "auto",
			"error": nil, "incomplete_details": nil, "usage": usage,
		}
	}
	served := Usage{Input: inputTokens, Cached: openaiCachedTokens, Output: outputTokens}
	usage := map[string]any{
		"input_tokens":          served.Input,
		"input_tokens_details":  map[string]any{"cached_tokens": served.Cached},
		"output_tokens":         served.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          served.Input + served.Output,
	}
	if !c.stream {
		x.served(served)
		x.writeJSON(http.StatusOK, response("completed", items, usage))
		return
	}

	x.startStream()
	seq := 0
	ev := func(name string, data map[string]any) bool {
		data["type"] = name
		data["sequence_number"] = seq
		seq++
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
	ok := ev("response.created", map[string]any{"response": response("in_progress", nil, nil)}) &&
		ev("response.in_progress", map[string]any{"response": response("in_progress", nil, nil)})
	for i, item := range items {
		ok = ok && openaiItemEvents(ev, i, item)
	}
	if ok {
		x.served(served)
	}
	if ok = ok && ev("response.completed", map[string]any{"response": response("completed", items, usage)}); !ok {
		x.rec.Usage = Usage{} // logged when the exchange ends
		x.logf("openai answer cut short: client gone")
	}
}

// served logs the usage an answer reports before the answer is sent: a
// client that has read the answer finds its usage in Requests.
func (x *exchange) served(u Usage) {
	x.rec.Usage = u
	x.update()
}

// openaiItemEvents sends the events of one output item at index i, from
// response.output_item.added to response.output_item.done. It returns false
// once a send fails.
func openaiItemEvents(ev func(string, map[string]any) bool, i int, item map[string]any) bool {
	id := item["id"]
	added := make(map[string]any, len(item))
	for k, v := range item {
		added[k] = v
	}
	added["status"] = "in_progress"
	var body []func() bool
	switch item["type"] {
	case "message":
		text := item["content"].([]any)[0].(map[string]any)["text"]
		added["content"] = []any{}
		part := func(t any) map[string]any {
			return map[string]any{"type": "output_text", "text": t, "annotations": []any{}}
		}
		at := func(m map[string]any) map[string]any {
			m["item_id"], m["output_index"], m["content_index"] = id, i, 0
			return m
		}
		body = []func() bool{
			func() bool { return ev("response.content_part.added", at(map[string]any{"part": part("")})) },
			func() bool {
				return ev("response.output_text.delta", at(map[string]any{"delta": text, "logprobs": []any{}}))
			},
			func() bool {
				return ev("response.output_text.done", at(map[string]any{"text": text, "logprobs": []any{}}))
			},
			func() bool { return ev("response.content_part.done", at(map[string]any{"part": part(text)})) },
		}
	case "function_call":
		args := item["arguments"]
		added["arguments"] = ""
		body = []func() bool{
			func() bool {
				return ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": args})
			},
			func() bool {
				return ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
			},
		}
	case "custom_tool_call":
		input := item["input"]
		added["input"] = ""
		body = []func() bool{
			func() bool {
				return ev("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": i, "delta": input})
			},
			func() bool {
				return ev("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": i, "input": input})
			},
		}
	}
	if !ev("response.output_item.added", map[string]any{"output_index": i, "item": added}) {
		return false
	}
	for _, send := range body {
		if !send() {
			return false
		}
	}
	return ev("response.output_item.done", map[string]any{"output_index": i, "item": item})
}

// openaiError answers status with the OpenAI API's error body. A 429 with
// resetsIn > 0 is a usage limit as ChatGPT's Codex backend sends one: body
// error.type "usage_limit_reached" with the plan, resets_at and
// resets_in_seconds, and x-codex-primary-* headers saying the window is
// used up and when it resets.
func (x *exchange) openaiError(status int, msg string, resetsIn time.Duration) {
	h := x.w.Header()
	if status == http.StatusTooManyRequests && resetsIn > 0 {
		secs := int64(resetsIn.Round(time.Second) / time.Second)
		at := time.Now().Add(resetsIn).Unix()
		h.Set("x-codex-primary-used-percent", "100.0")
		h.Set("x-codex-primary-window-minutes", strconv.Itoa(usageLimitWindow))
		h.Set("x-codex-primary-reset-after-seconds", strconv.FormatInt(secs, 10))
		h.Set("x-codex-primary-reset-at", strconv.FormatInt(at, 10))
		if msg == "" {
			msg = "The usage limit has been reached"
		}
		x.writeJSON(status, map[string]any{"error": map[string]any{
			"type": "usage_limit_reached", "message": msg, "plan_type": "plus",
			"resets_at": at, "resets_in_seconds": secs,
		}})
		return
	}
	if status == http.StatusTooManyRequests || status >= 500 {
		h.Set("Retry-After", "0")
	}
	typ, code := openaiErrorType(status)
	x.writeJSON(status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code,
	}})
}

// openaiErrorType returns the error type and code the OpenAI API puts in
// the error body of an HTTP status (code nil where the API sends null).
func openaiErrorType(status int) (typ string, code any) {
	switch status {
	case 400:
		return "invalid_request_error", nil
	case 401:
		return "invalid_request_error", "invalid_api_key"
	case 403:
		return "invalid_request_error", "unsupported_country_region_territory"
	case 404:
		return "invalid_request_error", "model_not_found"
	case 429:
		return "requests", "rate_limit_exceeded"
	case 503:
		return "server_error", "server_is_overloaded"
	}
	if status >= 500 {
		return "server_error", nil
	}
	return "invalid_request_error", nil
}
