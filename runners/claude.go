package runners

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// claudePermissionModeOK reports whether spawn may pass mode to
// --permission-mode. bypassPermissions (like --dangerously-skip-permissions)
// is deliberately refused: spawn never lets the coder skip permission checks.
func claudePermissionModeOK(mode string) bool {
	switch mode {
	case "acceptEdits", "auto", "default", "dontAsk", "plan":
		return true
	}
	return false
}

// Claude builds command lines for the real claude CLI and parses its stream-json output.
type Claude struct {
	Bin                string   // "claude" or a path; "" means "claude"
	Model              string   // --model when not empty
	PermissionMode     string   // --permission-mode; "" means "acceptEdits"
	AllowedTools       []string // --allowedTools
	DisallowedTools    []string // --disallowedTools
	AppendSystemPrompt string   // --append-system-prompt when not empty
	MaxRetries         int      // CLAUDE_CODE_MAX_RETRIES when >= 0 (bounds the CLI's own API retries; 0: none); negative keeps the CLI's default
}

// Command returns the claude process for one turn:
//
//	claude -p --output-format stream-json --verbose --permission-mode MODE
//	       [--allowedTools R1,R2] [--disallowedTools R3] [--model M]
//	       [--append-system-prompt S] [--resume ID] [--max-turns N]
//
// The prompt goes on stdin, never in argv: it may be larger than one argument
// can be, and the variadic tool flags would swallow a positional prompt.
// Tool rules (AllowedTools plus t.Allow) are joined into one comma-separated
// argument. The environment always carries
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (no telemetry or other calls to
// api.anthropic.com), and CLAUDE_CODE_MAX_RETRIES when MaxRetries >= 0.
//
// Command fails for an empty prompt, a malformed tool rule, and a permission
// mode other than acceptEdits, auto, default, dontAsk or plan; in particular
// bypassPermissions is refused.
func (c *Claude) Command(t Turn) (Command, error) {
	if t.Prompt == "" {
		return Command{}, errors.New("runners: claude: empty prompt")
	}
	mode := c.PermissionMode
	if mode == "" {
		mode = "acceptEdits"
	}
	if !claudePermissionModeOK(mode) {
		return Command{}, fmt.Errorf("runners: claude: permission mode %q not allowed (want acceptEdits, auto, default, dontAsk or plan)", mode)
	}
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", mode}
	allowed, err := joinRules("--allowedTools", c.AllowedTools, t.Allow)
	if err != nil {
		return Command{}, err
	}
	if allowed != "" {
		args = append(args, "--allowedTools", allowed)
	}
	disallowed, err := joinRules("--disallowedTools", c.DisallowedTools)
	if err != nil {
		return Command{}, err
	}
	if disallowed != "" {
		args = append(args, "--disallowedTools", disallowed)
	}
	if c.Model != "" {
		args = append(args, "--model", c.Model)
	}
	if c.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", c.AppendSystemPrompt)
	}
	if t.Resume != "" {
		args = append(args, "--resume", t.Resume)
	}
	if t.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(t.MaxTurns))
	}
	env := []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	if c.MaxRetries >= 0 {
		env = append(env, "CLAUDE_CODE_MAX_RETRIES="+strconv.Itoa(c.MaxRetries))
	}
	bin := c.Bin
	if bin == "" {
		bin = "claude"
	}
	return Command{Path: bin, Args: args, Env: env, Dir: t.Dir, Stdin: t.Prompt}, nil
}

// claudeLine is one line of claude's stream-json output. Only the fields
// spawn reads are declared; which ones are set depends on Type and Subtype.
type claudeLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`

	// system/init
	Model             string   `json:"model"`
	PermissionMode    string   `json:"permissionMode"`
	ClaudeCodeVersion string   `json:"claude_code_version"`
	CWD               string   `json:"cwd"`
	Tools             []string `json:"tools"`

	// system/api_retry
	Attempt     int             `json:"attempt"`
	MaxRetries  int             `json:"max_retries"`
	ErrorStatus *int            `json:"error_status"`
	Error       json.RawMessage `json:"error"`

	// assistant, user
	Message *claudeMessage `json:"message"`

	// result
	IsError           bool              `json:"is_error"`
	Result            *string           `json:"result"`
	NumTurns          int               `json:"num_turns"`
	TotalCostUSD      float64           `json:"total_cost_usd"`
	Usage             *claudeUsage      `json:"usage"`
	PermissionDenials []claudeDenial    `json:"permission_denials"`
	APIErrorStatus    *int              `json:"api_error_status"`
	TerminalReason    string            `json:"terminal_reason"`
	Errors            []json.RawMessage `json:"errors"`
}

// claudeMessage is the API message carried by an assistant or user line.
type claudeMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *claudeUsage    `json:"usage"`
}

// claudeUsage is the token count of a result line.
type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// claudeDenial is one entry of a result's permission_denials.
type claudeDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// claudeBlock is one content block of an assistant or user message.
type claudeBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// Parse reads claude's stream-json output (-p --output-format stream-json
// --verbose) from r until EOF and calls emit for each event, in order:
// system/init gives KindInit, system/api_retry KindRetry, each text and
// tool_use block of an assistant line KindText and KindToolUse (thinking
// blocks are skipped), each tool_result block of a user line KindToolResult,
// and the result line KindResult. Non-JSON lines and unknown event types are
// skipped. Lines may be of any length, and a last line without a newline is
// read. Parse returns r's error, if any, wrapped; reaching EOF is not an
// error, and a stream without a result line is not one either: the caller
// must treat a missing KindResult as a crash or an interruption.
func (c *Claude) Parse(r io.Reader, emit func(Event)) error {
	return readJSONLines(r, func(b []byte) {
		var l claudeLine
		if !decode(b, &l) {
			return
		}
		switch l.Type {
		case "system":
			switch l.Subtype {
			case "init":
				emit(Event{Kind: KindInit, Init: &Init{
					SessionID:      l.SessionID,
					Model:          l.Model,
					PermissionMode: l.PermissionMode,
					CLIVersion:     l.ClaudeCodeVersion,
					CWD:            l.CWD,
					Tools:          l.Tools,
				}})
			case "api_retry":
				retry := &Retry{Attempt: l.Attempt, MaxRetries: l.MaxRetries, Error: rawString(l.Error)}
				if l.ErrorStatus != nil {
					retry.ErrorStatus = *l.ErrorStatus
				}
				emit(Event{Kind: KindRetry, Retry: retry})
			}
		case "assistant":
			var id string
			var usage *Usage
			if l.Message != nil {
				id = l.Message.ID
				if u := l.Message.Usage; u != nil {
					usage = &Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens}
				}
			}
			for _, blk := range claudeBlocks(l.Message) {
				switch blk.Type {
				case "text":
					emit(Event{Kind: KindText, Message: id, Usage: usage, Text: blk.Text})
				case "tool_use":
					emit(Event{Kind: KindToolUse, Message: id, Usage: usage, ToolUse: &ToolUse{ID: blk.ID, Name: blk.Name, Input: blk.Input}})
				}
			}
		case "user":
			for _, blk := range claudeBlocks(l.Message) {
				if blk.Type == "tool_result" {
					emit(Event{Kind: KindToolResult, ToolResult: &ToolResult{
						ToolUseID: blk.ToolUseID,
						IsError:   blk.IsError,
						Content:   claudeToolResultText(blk.Content),
					}})
				}
			}
		case "result":
			emit(Event{Kind: KindResult, Result: claudeResult(&l)})
		}
	})
}

// claudeBlocks returns the content blocks of a message. A message whose
// content is a plain string (a replayed user prompt) has none.
func claudeBlocks(m *claudeMessage) []claudeBlock {
	if m == nil {
		return nil
	}
	var blocks []claudeBlock
	if !decode(m.Content, &blocks) {
		return nil
	}
	return blocks
}

// claudeToolResultText returns a tool_result's content: either a string, or
// an array of blocks whose text blocks are joined with newlines.
func claudeToolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if !decode(raw, &blocks) {
		return ""
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// claudeResult converts a result line. On error, ErrorType is the
// terminal_reason and ErrorMessage the errors[] joined, or the result text
// when there are none (an API error reports itself only there).
func claudeResult(l *claudeLine) *Result {
	res := &Result{
		Subtype:   l.Subtype,
		IsError:   l.IsError,
		SessionID: l.SessionID,
		NumTurns:  l.NumTurns,
		Usage:     Usage{CostUSD: l.TotalCostUSD},
	}
	if l.Result != nil {
		res.Text = *l.Result
	}
	if u := l.Usage; u != nil {
		res.Usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		res.Usage.OutputTokens = u.OutputTokens
	}
	for _, d := range l.PermissionDenials {
		res.Denials = append(res.Denials, Denial{Tool: d.ToolName, ToolUseID: d.ToolUseID, Input: d.ToolInput})
	}
	if l.APIErrorStatus != nil {
		res.APIErrorStatus = *l.APIErrorStatus
	}
	if l.IsError {
		res.ErrorType = l.TerminalReason
		var msgs []string
		for _, e := range l.Errors {
			if s := rawString(e); s != "" {
				msgs = append(msgs, s)
			}
		}
		res.ErrorMessage = strings.Join(msgs, "\n")
		if res.ErrorMessage == "" {
			res.ErrorMessage = res.Text
		}
	}
	return res
}
