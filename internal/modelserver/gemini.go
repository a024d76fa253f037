package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// geminiSideText answers side requests that ask for no JSON.
const geminiSideText = "ok"

// geminiGenerate answers POST /v1beta/models/<model>:streamGenerateContent
// (stream) and :generateContent. Only a streamed request that declares tools
// is a main turn; generateContent calls (router, summaries, loop checks)
// get a short answer that fits their JSON schema, if they have one.
func (x *exchange) geminiGenerate(stream bool) {
	c, err := parseGemini(x.rec.Body)
	if err != nil {
		x.serverError(http.StatusBadRequest, fmt.Sprintf("modelserver: bad gemini request body: %v", err))
		return
	}
	var rp reply
	switch {
	case stream && c.hasTools:
		var ok bool
		if rp, ok = x.mainTurn(x.s.sc.Gemini, c); !ok {
			return
		}
	case c.jsonSchema != nil:
		b, err := json.Marshal(fitSchema(c.jsonSchema))
		if err != nil {
			b = []byte("{}")
		}
		rp.text = string(b)
	case c.jsonMime:
		rp.text = "{}"
	default:
		rp.text = geminiSideText
	}

	var parts []map[string]any
	if rp.text != "" {
		parts = append(parts, map[string]any{"text": rp.text})
	}
	for _, t := range rp.tools {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"id": t.ID, "name": t.Name, "args": t.Input}})
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{
			"promptTokenCount":     inputTokens,
			"candidatesTokenCount": outputTokens,
			"totalTokenCount":      inputTokens + outputTokens,
		},
		"modelVersion": x.rec.Model,
	}
	if !stream {
		x.writeJSON(http.StatusOK, resp)
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		x.serverError(http.StatusInternalServerError, fmt.Sprintf("modelserver: %v", err))
		return
	}
	x.startStream()
	if _, err := fmt.Fprintf(x.w, "data: %s\r\n\r\n", b); err != nil {
		x.logf("gemini answer cut short: %v", err)
		return
	}
	x.flush()
}

// fitSchema returns a small value that satisfies a JSON schema (OpenAPI
// style with upper-case types, as gemini's responseSchema, or JSON Schema
// style, as responseJsonSchema): the first enum value, "scripted" for
// strings, the minimum (else 1 for integers, 0 for numbers), false, an
// empty array, and objects with every property filled in. For the router's
// {complexity_reasoning, complexity_score} that is a score of 1; for the
// next-speaker check it is "user"; for the loop check a confidence of 0.
func fitSchema(schema any) any {
	m, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	if v, ok := m["const"]; ok {
		return v
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			return fitSchema(alts[0])
		}
	}
	switch schemaType(m) {
	case "string":
		return "scripted"
	case "integer":
		if v, ok := m["minimum"].(float64); ok {
			return int(v)
		}
		return 1
	case "number":
		if v, ok := m["minimum"].(float64); ok {
			return v
		}
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	case "array":
		if n, ok := m["minItems"].(float64); ok && n > 0 {
			out := make([]any, int(n))
			for i := range out {
				out[i] = fitSchema(m["items"])
			}
			return out
		}
		return []any{}
	}
	out := map[string]any{}
	props, _ := m["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out[k] = fitSchema(props[k])
	}
	return out
}

// schemaType returns the schema's type in lower case; for a list of types,
// the first that is not "null".
func schemaType(m map[string]any) string {
	switch t := m["type"].(type) {
	case string:
		return strings.ToLower(t)
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && !strings.EqualFold(s, "null") {
				return strings.ToLower(s)
			}
		}
	}
	return ""
}
