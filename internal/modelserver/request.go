package modelserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
)

// The API a request was addressed to.
const (
	APIAnthropic = "anthropic"
	APIGemini    = "gemini"
	APIOpenAI    = "openai"
)

// Request is one HTTP request the server received, as logged.
type Request struct {
	// API is APIAnthropic (/v1/messages...), APIGemini (/v1beta/models/...),
	// APIOpenAI (/v1/responses...) or "" for anything else (claude's HEAD /
	// warm-up, unknown paths).
	API string
	// Method is the HTTP method (POST, or HEAD for claude's warm-up).
	Method string
	// Path is the URL path without the query; Query is the raw query
	// ("beta=true", "alt=sse").
	Path  string
	Query string
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the request body (decompressed if it was gzipped).
	Body json.RawMessage
	// Model is body.model (anthropic, openai) or the model named in the path
	// (gemini).
	Model string
	// Main is true for a main agent turn: a request that declares tools,
	// to anthropic /v1/messages, gemini :streamGenerateContent or openai
	// /v1/responses. Side
	// requests (claude's session title, which has no tools; gemini's router,
	// summaries and checks via :generateContent), token counts and HEAD are
	// not main: they get a short answer and consume no turn.
	Main bool
	// Script is the index of the script that answered, -1 if none (side
	// requests, no matching script, loop guard).
	Script int
	// Turn is the index of the turn answered (also when the answer was the
	// turn's scripted HTTP error, see Status), len(Turns) when the script was
	// exhausted and the server said its closing text, and -1 for side
	// requests and the server's own errors (no script, loop guard, bad body).
	Turn int
	// Status is the HTTP status answered; 0 while the request is in flight,
	// or if it ended without an answer (client gone or server closed during
	// a delay or hang).
	Status int
	// Start is when the request arrived, End when the answer was finished
	// (zero while in flight). Overlapping [Start, End] intervals show that
	// concurrent requests were served concurrently.
	Start, End time.Time
	// SessionID is claude's X-Claude-Code-Session-Id header or codex's
	// Thread-Id header (the thread id `codex exec resume` takes), if any.
	SessionID string
	// Usage is the tokens an OpenAI answer reported (its response's
	// usage), logged before the answer's last event was sent; zero for an
	// answer of another API, an error, or an answer cut short.
	Usage Usage
}

// Usage is the tokens an answer reported: Input counts every input token,
// Cached the part of Input served from the prompt cache.
type Usage struct {
	Input, Cached, Output int64
}

// ToolResultSeen is one tool result found in a request's history: an
// anthropic tool_result block, a gemini functionResponse part or an openai
// function_call_output / custom_tool_call_output item.
type ToolResultSeen struct {
	// ID is the tool_use_id / functionResponse id / call_id.
	ID string
	// Name is the tool's name: the functionResponse name (gemini) or the
	// name of the tool_use (anthropic) or function_call / custom_tool_call
	// (openai) with the same id in the history ("" if that call is not in
	// the history).
	Name string
	// IsError is tool_result.is_error (anthropic) or the presence of an
	// "error" key in the functionResponse response (gemini). OpenAI outputs
	// carry no error flag: it is always false for them, and a failure shows
	// only in Content ("Process exited with code 1", "apply_patch
	// verification failed...").
	IsError bool
	// Content is the result text: tool_result content (its text blocks
	// joined by "\n" when it is a list), the functionResponse's
	// response.output / response.error string (the response as JSON when
	// neither is a string), or the openai output (its text items joined by
	// "\n" when it is a list).
	Content string
}

// UserTexts returns every user text part of the request, in order:
// anthropic messages[].content text blocks (or string content) of role
// "user"; gemini contents[].parts[].text of role "user"; openai input[]
// messages of role "user", their input_text items (codex's first one is its
// <environment_context>). Tool results are not included. It returns nil for a body it cannot parse.
func (r Request) UserTexts() []string {
	c, err := parseConversation(r.API, r.Body)
	if err != nil {
		return nil
	}
	return c.userTexts
}

// ToolResults returns every tool result in the request's history, in order.
// It returns nil for a body it cannot parse.
func (r Request) ToolResults() []ToolResultSeen {
	c, err := parseConversation(r.API, r.Body)
	if err != nil {
		return nil
	}
	return c.toolResults
}

// conversation is what the server needs from a request body, common to
// every API.
type conversation struct {
	userTexts      []string
	assistantTexts []string
	toolResults    []ToolResultSeen
	// contextTexts are where the working directory is looked for: the
	// system prompt (anthropic) and user texts.
	contextTexts []string
	hasTools     bool
	model        string
	stream       bool
	// jsonSchema is gemini's generationConfig.responseJsonSchema (or
	// responseSchema); jsonMime is responseMimeType application/json.
	jsonSchema any
	jsonMime   bool
	// customTools are the names of the openai tools declared as "custom"
	// (freeform input, such as codex's apply_patch).
	customTools map[string]bool
}

func parseConversation(api string, body []byte) (conversation, error) {
	switch api {
	case APIAnthropic:
		return parseAnthropic(body)
	case APIGemini:
		return parseGemini(body)
	case APIOpenAI:
		return parseOpenAI(body)
	}
	return conversation{}, nil
}

type anthropicRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	System   json.RawMessage   `json:"system"`
	Messages []anthropicMsg    `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

type anthropicMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// anthropicBlocks reads content that is either a string or a list of blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anthropicBlock
	err := json.Unmarshal(raw, &bs)
	return bs, err
}

func parseAnthropic(body []byte) (conversation, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return conversation{}, err
	}
	c := conversation{model: req.Model, stream: req.Stream, hasTools: len(req.Tools) > 0}
	sys, err := anthropicBlocks(req.System)
	if err != nil {
		return conversation{}, err
	}
	for _, b := range sys {
		c.contextTexts = append(c.contextTexts, b.Text)
	}
	names := map[string]string{}
	type pending struct {
		idx int
		id  string
	}
	var unnamed []pending
	for _, m := range req.Messages {
		blocks, err := anthropicBlocks(m.Content)
		if err != nil {
			return conversation{}, err
		}
		for _, b := range blocks {
			switch {
			case b.Type == "text" && m.Role == "user":
				c.userTexts = append(c.userTexts, b.Text)
				c.contextTexts = append(c.contextTexts, b.Text)
			case b.Type == "text" && m.Role == "assistant":
				c.assistantTexts = append(c.assistantTexts, b.Text)
			case b.Type == "text" && m.Role == "system":
				c.contextTexts = append(c.contextTexts, b.Text)
			case b.Type == "tool_use":
				names[b.ID] = b.Name
			case b.Type == "tool_result":
				unnamed = append(unnamed, pending{len(c.toolResults), b.ToolUseID})
				c.toolResults = append(c.toolResults, ToolResultSeen{
					ID:      b.ToolUseID,
					IsError: b.IsError,
					Content: anthropicResultText(b.Content),
				})
			}
		}
	}
	for _, p := range unnamed {
		c.toolResults[p.idx].Name = names[p.id]
	}
	return c, nil
}

func anthropicResultText(raw json.RawMessage) string {
	blocks, err := anthropicBlocks(raw)
	if err != nil {
		return string(raw)
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []geminiTool    `json:"tools"`
	GenerationConfig  struct {
		ResponseMimeType   string `json:"responseMimeType"`
		ResponseJSONSchema any    `json:"responseJsonSchema"`
		ResponseSchema     any    `json:"responseSchema"`
	} `json:"generationConfig"`
}

type geminiTool struct {
	FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string         `json:"id"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	} `json:"functionResponse"`
}

func parseGemini(body []byte) (conversation, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return conversation{}, err
	}
	c := conversation{hasTools: len(req.Tools) > 0}
	gc := req.GenerationConfig
	c.jsonSchema = gc.ResponseJSONSchema
	if c.jsonSchema == nil {
		c.jsonSchema = gc.ResponseSchema
	}
	c.jsonMime = strings.HasPrefix(gc.ResponseMimeType, "application/json")
	if si := req.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			c.contextTexts = append(c.contextTexts, p.Text)
		}
	}
	for _, m := range req.Contents {
		for _, p := range m.Parts {
			if fr := p.FunctionResponse; fr != nil {
				c.toolResults = append(c.toolResults, geminiResult(fr.ID, fr.Name, fr.Response))
				continue
			}
			if p.FunctionCall != nil || p.Text == "" {
				continue
			}
			if m.Role == "model" {
				c.assistantTexts = append(c.assistantTexts, p.Text)
			} else {
				c.userTexts = append(c.userTexts, p.Text)
				c.contextTexts = append(c.contextTexts, p.Text)
			}
		}
	}
	return c, nil
}

func geminiResult(id, name string, resp map[string]any) ToolResultSeen {
	t := ToolResultSeen{ID: id, Name: name}
	if e, ok := resp["error"]; ok {
		t.IsError = true
		if s, ok := e.(string); ok {
			t.Content = s
			return t
		}
	} else if s, ok := resp["output"].(string); ok {
		t.Content = s
		return t
	}
	b, _ := json.Marshal(resp)
	t.Content = string(b)
	return t
}

// workdirPatterns find the agent's working directory in the texts a CLI
// sends. claude 2.1.332: " - Primary working directory: /x" in a role
// "system" message (2.1.197: in system[2]);
// gemini 0.61.0: "- **Workspace Directories:**\n  - /x" in the
// <session_context> user part; codex 0.171.0: "<cwd>/x</cwd>" in the
// <environment_context> user message. The last two are older phrasings.
var workdirPatterns = []*lazy.Regexp{
	lazy.MustCompile(`Primary working directory: *([^\n]+)`),
	lazy.MustCompile(`<cwd>([^<\n]+)</cwd>`),
	lazy.MustCompile(`Workspace Directories:?\**:?[ \t]*\n[ \t]*- *([^\n]+)`),
	lazy.MustCompile(`(?m)^[ \t-]*Working directory: *([^\n]+)`),
	lazy.MustCompile(`currently working in the directory: *([^\n]+)`),
}

// workdir returns the agent's working directory named in the request, or "".
func (c conversation) workdir() string {
	for _, re := range workdirPatterns {
		for _, t := range c.contextTexts {
			if m := re.FindStringSubmatch(t); m != nil {
				return strings.TrimSpace(m[1])
			}
		}
	}
	return ""
}

type openaiRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []openaiTool    `json:"tools"`
}

type openaiTool struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// openaiItem is one item of a Responses API input: a message, a tool call
// or a tool call's output.
type openaiItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Name    string          `json:"name"`
	Output  json.RawMessage `json:"output"`
}

// openaiContent is one content item of a message or a tool output.
type openaiContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// openaiTexts reads content that is either a string or a list of content
// items, and returns the texts of its text items (input_text, output_text,
// text).
func openaiTexts(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []string{s}, nil
	}
	var items []openaiContent
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	var out []string
	for _, it := range items {
		switch it.Type {
		case "input_text", "output_text", "text":
			out = append(out, it.Text)
		}
	}
	return out, nil
}

func parseOpenAI(body []byte) (conversation, error) {
	var req openaiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return conversation{}, err
	}
	c := conversation{model: req.Model, stream: req.Stream, hasTools: len(req.Tools) > 0, customTools: map[string]bool{}}
	for _, t := range req.Tools {
		if t.Type == "custom" {
			c.customTools[t.Name] = true
		}
	}
	if req.Instructions != "" {
		c.contextTexts = append(c.contextTexts, req.Instructions)
	}
	var items []openaiItem
	var prompt string
	if err := json.Unmarshal(req.Input, &prompt); err == nil {
		items = []openaiItem{{Type: "message", Role: "user", Content: req.Input}}
	} else if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return conversation{}, err
		}
	}
	names := map[string]string{}
	for _, it := range items {
		switch it.Type {
		case "", "message":
			texts, err := openaiTexts(it.Content)
			if err != nil {
				return conversation{}, err
			}
			for _, t := range texts {
				switch it.Role {
				case "user":
					c.userTexts = append(c.userTexts, t)
					c.contextTexts = append(c.contextTexts, t)
				case "assistant":
					c.assistantTexts = append(c.assistantTexts, t)
				default: // developer, system
					c.contextTexts = append(c.contextTexts, t)
				}
			}
		case "function_call", "custom_tool_call":
			names[it.CallID] = it.Name
		case "function_call_output", "custom_tool_call_output":
			texts, err := openaiTexts(it.Output)
			if err != nil {
				texts = []string{string(it.Output)}
			}
			c.toolResults = append(c.toolResults, ToolResultSeen{ID: it.CallID, Content: strings.Join(texts, "\n")})
		}
	}
	for i := range c.toolResults {
		c.toolResults[i].Name = names[c.toolResults[i].ID]
	}
	return c, nil
}
