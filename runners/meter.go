package runners

import (
	"bytes"
	"encoding/json"

	"github.com/infinite-improbability-drive/spawn/internal/relay"
)

// maxMeteredJSON bounds the answer a Meter keeps to read its usage when
// the answer is one JSON document rather than a stream of events.
const maxMeteredJSON = 4 << 20

// Meter reads the token usage that a model API's answer reports, as the
// relay forwards it, for the three APIs spawn's CLIs call: Anthropic
// Messages (message_start and message_delta events, or the message),
// Gemini (usageMetadata in each chunk, the last one's totals) and OpenAI
// Responses (response.completed), streamed as server-sent events or not.
// It is a relay.Meter.
type Meter struct {
	line    []byte // an event line not yet ended
	body    []byte // an answer that is not a stream, up to maxMeteredJSON
	sse     bool
	started bool
	usage   relay.Usage
}

// NewMeter returns a Meter for one answer.
func NewMeter() relay.Meter { return &Meter{} }

// Observe reads the next bytes of the answer.
func (m *Meter) Observe(b []byte) {
	if !m.started {
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 {
			m.started = true
			m.sse = t[0] != '{' && t[0] != '['
		}
	}
	if !m.sse {
		if len(m.body)+len(b) <= maxMeteredJSON {
			m.body = append(m.body, b...)
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(m.line)+len(b) <= maxMeteredJSON {
				m.line = append(m.line, b...)
			}
			return
		}
		m.event(append(m.line, b[:i]...))
		m.line, b = m.line[:0], b[i+1:]
	}
}

// event reads one line of a stream of server-sent events.
func (m *Meter) event(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if ok {
		m.doc(bytes.TrimSpace(data))
	}
}

// Usage is what the answer reported.
func (m *Meter) Usage() relay.Usage {
	if !m.sse && len(m.body) > 0 {
		body := bytes.TrimSpace(m.body)
		if body[0] == '[' { // gemini's streamGenerateContent without alt=sse
			var docs []json.RawMessage
			if json.Unmarshal(body, &docs) == nil {
				for _, d := range docs {
					m.doc(d)
				}
			}
		} else {
			m.doc(body)
		}
		m.body = nil
	}
	return m.usage
}

// tokens is the usage object of the Anthropic and OpenAI APIs.
type tokens struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadTokens     int64 `json:"cache_read_input_tokens"`
	InputTokensDetails  struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// usageDoc is the part of an event or answer that names a model or usage.
type usageDoc struct {
	Type          string  `json:"type"`
	Model         string  `json:"model"`
	ModelVersion  string  `json:"modelVersion"`
	Usage         *tokens `json:"usage"`
	UsageMetadata *struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	Message *struct {
		Model string  `json:"model"`
		Usage *tokens `json:"usage"`
	} `json:"message"`
	Response *struct {
		Model string  `json:"model"`
		Usage *tokens `json:"usage"`
	} `json:"response"`
}

func (m *Meter) doc(b []byte) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var d usageDoc
	if json.Unmarshal(b, &d) != nil {
		return
	}
	u := &m.usage
	for _, model := range []string{d.Model, d.ModelVersion} {
		if model != "" {
			u.Model = model
		}
	}
	switch {
	case d.Message != nil: // anthropic message_start
		if d.Message.Model != "" {
			u.Model = d.Message.Model
		}
		if t := d.Message.Usage; t != nil {
			u.InputTokens = t.InputTokens + t.CacheCreationTokens + t.CacheReadTokens
			u.CachedTokens = t.CacheReadTokens
			u.OutputTokens = max(u.OutputTokens, t.OutputTokens)
		}
	case d.Response != nil: // openai response.* events
		if d.Response.Model != "" {
			u.Model = d.Response.Model
		}
		if t := d.Response.Usage; t != nil {
			u.InputTokens, u.OutputTokens, u.CachedTokens = t.InputTokens, t.OutputTokens, t.InputTokensDetails.CachedTokens
		}
	case d.UsageMetadata != nil: // gemini: each chunk carries the totals so far
		g := d.UsageMetadata
		u.InputTokens, u.CachedTokens = g.PromptTokenCount, g.CachedContentTokenCount
		u.OutputTokens = g.CandidatesTokenCount + g.ThoughtsTokenCount
	case d.Usage != nil: // anthropic message_delta (cumulative output), or a whole message
		t := d.Usage
		if in := t.InputTokens + t.CacheCreationTokens + t.CacheReadTokens; in > 0 {
			u.InputTokens, u.CachedTokens = in, t.CacheReadTokens
		}
		u.OutputTokens = max(u.OutputTokens, t.OutputTokens)
	}
}
