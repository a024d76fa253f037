package runners

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Claude builds command lines for the real claude CLI and parses its stream-json output.
type Claude struct {
	Bin             string   // "claude" or a path; "" means "claude"
	Model           string   // --model when not empty
	PermissionMode  string   // --permission-mode, one of PermissionModes; "" means "acceptEdits"
	AllowedTools    []string // --allowedTools
	DisallowedTools []string // --disallowedTools
	// Tools, when not empty, are the only built-in tools the model is
	// offered (--tools, by name); empty offers claude's default set. A tool
	// left out is not described to the model at all: its definition is not
	// in any request.
	Tools              []string
	AppendSystemPrompt string   // --append-system-prompt when not empty
	MaxRetries         int      // CLAUDE_CODE_MAX_RETRIES when >= 0 (bounds the CLI's own API retries; 0: none); negative keeps the CLI's default
	Settings           string   // --settings when not empty: a settings file for this invocation only (spawn's hooks, see hook.ClaudeSettings)
	Environ            []string // the seat's environment (Env)
}

// Command returns the claude process for one turn:
//
//	claude -p --output-format stream-json --verbose --permission-mode MODE
//	       [--tools T1,T2] [--allowedTools R1,R2] [--disallowedTools R3] [--model M]
//	       [--append-system-prompt S] [--settings FILE] [--resume ID] [--max-turns N]
//
// The prompt goes on stdin, never in argv: it may be larger than one argument
// can be, and the variadic tool flags would swallow a positional prompt.
// Tool rules (AllowedTools plus t.Allow) are joined into one comma-separated
// argument. The environment always carries
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (no telemetry or other calls to
// api.anthropic.com), CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1 (see
// claudeForeground), claudeIdleGC, BASH_DEFAULT_TIMEOUT_MS and
// BASH_MAX_TIMEOUT_MS when t.ToolTimeout is set, and CLAUDE_CODE_MAX_RETRIES
// when MaxRetries >= 0.
//
// Command fails for an empty prompt, a tool rule ValidateClaudeRule rejects,
// a tool name in Tools that is not one,
// and a permission mode not in PermissionModes; in particular
// bypassPermissions is refused.
func (c *Claude) Command(t Turn) (Command, error) {
	if t.Prompt == "" {
		return Command{}, errors.New("runners: claude: empty prompt")
	}
	mode := c.PermissionMode
	if mode == "" {
		mode = "acceptEdits"
	}
	if !PermissionModeOK(mode) {
		return Command{}, fmt.Errorf("runners: claude: permission mode %q not allowed (want one of %s)", mode, strings.Join(permissionModes, ", "))
	}
	for _, list := range [][]string{c.AllowedTools, c.DisallowedTools, t.Allow} {
		for _, r := range list {
			if err := ValidateClaudeRule(r); err != nil {
				return Command{}, fmt.Errorf("runners: claude: %w", err)
			}
		}
	}
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", mode}
	for _, name := range c.Tools {
		if name == "" {
			return Command{}, errors.New("runners: claude: an empty tool name in --tools")
		}
		if err := checkClaudeTool(name); err != nil {
			return Command{}, fmt.Errorf("runners: claude: tool %q: %w", name, err)
		}
	}
	if len(c.Tools) > 0 {
		args = append(args, "--tools", strings.Join(c.Tools, ","))
	}
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
	if c.Settings != "" {
		args = append(args, "--settings", c.Settings)
	}
	if t.Resume != "" {
		args = append(args, "--resume", t.Resume)
	}
	if t.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(t.MaxTurns))
	}
	env := append([]string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", claudeIdleGC}, claudeForeground(t.ToolTimeout)...)
	if c.MaxRetries >= 0 {
		env = append(env, "CLAUDE_CODE_MAX_RETRIES="+strconv.Itoa(c.MaxRetries))
	}
	bin := c.Bin
	if bin == "" {
		bin = "claude"
	}
	cmd := Command{Path: bin, Args: args, Env: env, Dir: t.Dir, Stdin: t.Prompt}
	if t.ToolTimeout > 0 {
		cmd.ToolGrace = claudeToolGrace
	}
	return cmd, nil
}

// claudeIdleGC turns off the garbage collection claude's runtime does on a
// timer while it waits. claude (2.1.332) is a Bun executable; Bun adds to
// the collections its JavaScript engine paces by allocation a collection
// of the whole heap about every second, to hand memory back while a
// program allocates nothing. claude's heap is large enough that each costs
// tens of milliseconds: a claude waiting for its model or for a tool spent
// about 40 ms of CPU time a second doing nothing else (a turn whose model
// answered 4 s late cost 147 ms more than one answered at once; with the
// timer off it cost less than that one). The collections the engine
// paces by allocation still run, so what claude allocates is still
// collected as it works; what it holds when it stops allocating is kept
// until it allocates again or ends.
const claudeIdleGC = "BUN_GC_TIMER_DISABLE=1"

// claudeToolGrace is the Command.ToolGrace of a claude turn: the time
// claude has, once a Bash command reaches the turn's ToolTimeout, to stop
// it and write its tool result (it took well under a second here).
const claudeToolGrace = 30 * time.Second

// claudeForeground is the environment that has claude wait for every Bash
// command it runs, up to toolTimeout, and hand its output to the model.
//
// Left to itself, claude (2.1.332) gives a command without a timeout of its
// own 2 minutes (BASH_DEFAULT_TIMEOUT_MS; the model may ask for up to 10,
// BASH_MAX_TIMEOUT_MS) and then moves it to the background: the model is
// told "Command did not complete within its 120s timeout and was moved to
// the background", answers without the command's output (a result line
// written while the command runs), and claude -p waits for the command and
// then starts a turn of its own, ending in another result line. A coder's
// `go test` that runs longer than 2 minutes goes unseen by the coder when
// it answers. With background tasks off
// (CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1: no run_in_background, nothing
// moved to the background, no refusal of a long leading sleep) claude runs
// every command in the foreground until it ends or reaches its timeout,
// when it kills the command and tells the model "Command timed out after
// 2m 0s".
//
// spawn's tool_timeout is that timeout: the default and the longest a
// model may ask for are toolTimeout (in milliseconds; at most 2^31-1, the
// most claude takes). A command that runs that long is stopped, and the
// coder told, instead of the whole coder being stopped: claude prints a
// heartbeat line every 30 seconds while a tool runs, so the supervisor's
// silence timer does not see a long command anyway, and the supervisor
// gives claude claudeToolGrace beyond toolTimeout (Command.ToolGrace) to
// report it. A model that asks for a shorter timeout gets it. toolTimeout
// 0 keeps claude's own timeouts.
func claudeForeground(toolTimeout time.Duration) []string {
	env := []string{"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1"}
	if toolTimeout <= 0 {
		return env
	}
	ms := strconv.FormatInt(min(max(toolTimeout.Milliseconds(), 1), math.MaxInt32), 10)
	return append(env, "BASH_DEFAULT_TIMEOUT_MS="+ms, "BASH_MAX_TIMEOUT_MS="+ms)
}

// claudeToolKinds are claude's tools that run commands or write files.
var claudeToolKinds = map[string]ToolKind{"Bash": ToolShell, "Write": ToolEdit, "Edit": ToolEdit, "MultiEdit": ToolEdit, "NotebookEdit": ToolEdit}

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
// Its content blocks are decoded with the line, in the same pass: a content
// that is a plain string (a replayed user prompt) is a type mismatch that
// leaves Content empty, and decode still counts the line as decoded. A
// block's own content is kept as JSON (see claudeToolResultText).
type claudeMessage struct {
	ID      string        `json:"id"`
	Model   string        `json:"model"`
	Content []claudeBlock `json:"content"`
	Usage   *claudeUsage  `json:"usage"`
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
	// tool_result: a string, or an array of blocks (see
	// claudeToolResultText)
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
// skipped. A result with a null api_error_status that reports an API error
// gets its APIErrorStatus from the error text ("API Error: Repeated 529
// Overloaded errors" is 529) or else from the last api_retry line.
//
// There is at most one KindResult, and it is the last event, reported once
// r is read to its end (or fails). claude may write more than one result
// line in one process: after its answer, claude -p (2.1.332) waits for what
// still runs in the background and then starts another turn of its own,
// which ends with another result line ("result_index" 1, 2, ...). The
// events of those turns are reported as they come, and the KindResult is
// the last result line's, with the turns and tokens of all of them added up
// and the denials of all of them (total_cost_usd is already the process's
// running total). Lines may be of any length, and a last line without a
// newline is read. Parse returns r's error, if any, wrapped; reaching EOF is
// not an error, and a stream without a result line is not one either: the
// caller must treat a missing KindResult as a crash or an interruption.
//
// User and assistant lines (tool calls and their results: most of the
// bytes) are read by a fast path (see claudeFastLine) that gives the same
// events as encoding/json. A tool_result's text is kept only when its
// call is a Bash call, one the stream did not show, or one that failed
// (ToolResult.Content), and decoded only when asked (Output).
func (c *Claude) Parse(r io.Reader, emit func(Event)) error {
	return c.parse(r, emit, true)
}

// parse is Parse; fast false reads every line with encoding/json (the
// reference the fast path is tested against).
func (c *Claude) parse(r io.Reader, out func(Event), fast bool) error {
	retryStatus := 0   // error_status of the last api_retry line
	var result *Result // the result lines so far, added up (see Parse)
	var events []Event // the fast path's, reused
	var scratch []byte // the fast path's decoding buffer, reused
	// The calls in flight, each true when it is a shell (Bash) call: the
	// text of another tool's result is not kept (see Parse).
	calls := map[string]bool{}
	skip := func(id string) bool {
		shell, known := calls[id]
		return known && !shell
	}
	emit := func(e Event) {
		switch e.Kind {
		case KindToolUse:
			calls[e.ToolUse.ID] = e.ToolUse.Name == "Bash"
		case KindToolResult:
			delete(calls, e.ToolResult.ToolUseID)
		}
		out(e)
	}
	err := readJSONLines(r, func(b []byte) {
		if fast {
			var handled bool
			if events, handled = claudeFastLine(b, events, skip, &scratch); handled {
				for _, e := range events {
					emit(e)
				}
				clear(events) // keep no large text past its line
				return
			}
		}
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
				retryStatus = retry.ErrorStatus
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
					emit(Event{Kind: KindToolUse, Message: id, Usage: usage, ToolUse: &ToolUse{ID: blk.ID, Name: blk.Name, Input: blk.Input, Kind: claudeToolKinds[blk.Name]}})
				}
			}
		case "user":
			for _, blk := range claudeBlocks(l.Message) {
				if blk.Type == "tool_result" {
					tr := &ToolResult{ToolUseID: blk.ToolUseID, IsError: blk.IsError}
					if !skip(blk.ToolUseID) || blk.IsError {
						tr.Content = claudeToolResultText(blk.Content)
					}
					emit(Event{Kind: KindToolResult, ToolResult: tr})
				}
			}
		case "result":
			result = claudeMoreResult(result, claudeResult(&l, retryStatus))
		}
	})
	if result != nil {
		emit(Event{Kind: KindResult, Result: result})
	}
	return err
}

// claudeMoreResult is the result of a process whose result lines so far
// added up to prev (nil before the first) and that wrote next: next's,
// with the turns, tokens and denials of prev added. Its cost is next's:
// claude's total_cost_usd counts the whole process.
func claudeMoreResult(prev, next *Result) *Result {
	if prev == nil {
		return next
	}
	next.NumTurns += prev.NumTurns
	next.Usage.InputTokens += prev.Usage.InputTokens
	next.Usage.OutputTokens += prev.Usage.OutputTokens
	denials := prev.Denials
	seen := map[string]bool{}
	for _, d := range prev.Denials {
		seen[d.ToolUseID] = true
	}
	for _, d := range next.Denials {
		if !seen[d.ToolUseID] {
			denials = append(denials, d)
		}
	}
	next.Denials = denials
	return next
}

// claudeBlocks returns the content blocks of a message. A message whose
// content is a plain string (a replayed user prompt) has none.
func claudeBlocks(m *claudeMessage) []claudeBlock {
	if m == nil {
		return nil
	}
	return m.Content
}

// claudeToolResultText returns a tool_result's content (JSON): either a
// string, kept as it is (see Output), or an array of blocks, decoded into
// an any, whose text blocks are joined with newlines (keys matched without
// regard to case, as encoding/json matches struct fields; a text that is
// not a string counts as empty). Anything else has no text.
func claudeToolResultText(raw json.RawMessage) Output {
	if len(raw) > 0 && raw[0] == '"' {
		return quotedOutput(raw) // valid: encoding/json checked it
	}
	var content any
	if json.Unmarshal(raw, &content) != nil {
		return Output{}
	}
	return OutputOf(claudeBlocksText(content))
}

// claudeBlocksText is the text of a tool_result's content decoded into an
// any, as claudeToolResultText reads it.
func claudeBlocksText(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var texts []string
		for _, b := range c {
			blk, ok := b.(map[string]any)
			if !ok {
				continue
			}
			if typ, _ := foldKey(blk, "type").(string); typ == "text" {
				text, _ := foldKey(blk, "text").(string)
				texts = append(texts, text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// foldKey is m's value for key, an exact match first, then one that
// differs only in case.
func foldKey(m map[string]any, key string) any {
	if v, ok := m[key]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// claudeResult converts a result line; retryStatus is the error_status of
// the last api_retry line before it (0 if none). On error, ErrorType is the
// terminal_reason and ErrorMessage the errors[] joined, or the result text
// when there are none (an API error reports itself only there).
// APIErrorStatus is api_error_status when that is an HTTP status (100 to
// 599); when it is null (or not a status) on an error result whose message
// starts "API Error", it is derived with claudeHTTPStatus, and failing that
// it is retryStatus: the status of the call claude gave up on.
func claudeResult(l *claudeLine, retryStatus int) *Result {
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
	if l.APIErrorStatus != nil && *l.APIErrorStatus >= 100 && *l.APIErrorStatus <= 599 {
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
		if res.APIErrorStatus == 0 {
			for _, msg := range []string{res.Text, res.ErrorMessage} {
				if !strings.HasPrefix(msg, claudeAPIError) {
					continue
				}
				res.APIErrorStatus = claudeHTTPStatus(msg)
				if res.APIErrorStatus == 0 && retryStatus >= 400 && retryStatus <= 599 {
					res.APIErrorStatus = retryStatus
				}
				break
			}
		}
	}
	return res
}

// claudeAPIError starts the text of every result claude (2.1.197, 2.1.332)
// ends with when a model API call fails: "API Error: 500 ...", "API Error:
// Repeated 529 Overloaded errors. ...", "API Error: Unable to connect to
// API ..." (2.1.197), "API Error: Connection refused ..." (2.1.332).
const claudeAPIError = "API Error"

// claudeHTTPStatus finds the HTTP status in the text of claude's API error
// result, for a result whose api_error_status is null (as it is when claude
// 2.1.197 gives up after repeated 529s: "API Error: Repeated 529 Overloaded errors.
// The API is at capacity..."). It returns a lone number from 400 to 599 in
// the first sentence of msg (the rest names the gateway host, which may
// hold digits); else 529 when msg says the API is overloaded ("Overloaded",
// "overloaded_error") or under high load ("... is experiencing high load");
// else 0.
func claudeHTTPStatus(msg string) int {
	first, _, _ := strings.Cut(msg, ". ")
	if n := loneHTTPStatus(first); n != 0 {
		return n
	}
	lower := strings.ToLower(msg)
	if strings.Contains(lower, "overloaded") || strings.Contains(lower, "experiencing high load") {
		return 529
	}
	return 0
}
