package runners

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// geminiMaxStdin is the most the gemini CLI reads from stdin (its
// MAX_STDIN_SIZE); a longer prompt is silently truncated, with only a warning
// on stderr.
const geminiMaxStdin = 8 << 20

// Gemini builds command lines for the real gemini CLI and parses its
// stream-json output.
type Gemini struct {
	Bin          string   // "gemini" or a path; "" means "gemini"
	Model        string   // -m; required (without it the CLI first calls a router model): Command errors when empty
	ApprovalMode string   // --approval-mode, one of ApprovalModes; "" means "default" (the reviewer is read-only)
	AllowedTools []string // --allowed-tools as ONE comma-separated argument, when not empty
	// Home, when not empty, is passed as env GEMINI_CLI_HOME=<dir>: gemini
	// then reads <dir>/.gemini (settings, logins, sessions) instead of
	// ~/.gemini. spawn points it at a private copy whose settings bound the
	// CLI's retries. (A system settings file, GEMINI_CLI_SYSTEM_SETTINGS_PATH,
	// does not work for this: gemini 0.61.0 skips one unless it and every
	// directory above it are owned by root and not writable by group or
	// others.)
	Home string
	// Environ is the seat's environment (Env); offered its tools (Offered).
	Environ []string
	offered []string
}

// Command returns the gemini process for one turn:
//
//	gemini -m MODEL --output-format stream-json --approval-mode MODE --skip-trust
//	       [--allowed-tools R1,R2] [--resume ID]
//
// The whole prompt goes on stdin and there is no -p and no positional prompt.
// Measured with gemini 0.61.0: when stdin is not a terminal the CLI runs
// headless and, with no -p, takes stdin byte for byte as the prompt (checked
// up to 1 MiB, and with --resume). With -p the prompt would be
// "STDIN\n\nARG" instead, and with an empty stdin it would silently run on
// the -p text alone; without -p a missing prompt fails loudly ("No input
// provided via stdin...", rc 42). Two limits come with stdin: gemini reads at
// most 8 MiB (it truncates the rest, so Command refuses longer prompts), and
// it waits only 500 ms for the first byte once it starts reading, so the
// caller must write the prompt at once. Like any prompt, stdin goes through
// gemini's @-command processing: an "@path" naming an existing file in the
// workspace is replaced by that file's content.
//
// --skip-trust trusts the working directory, which is spawn's own worktree.
// Tool rules (AllowedTools plus t.Allow) are joined into one comma-separated
// argument: a second space-separated value would become a positional prompt.
// The environment always carries GEMINI_CLI_NO_RELAUNCH=true (otherwise the
// CLI relaunches itself as a child node process that ignores signals sent to
// the parent), and GEMINI_CLI_HOME when Home is set.
// t.MaxTurns is not passed: gemini has no flag for it (set
// model.maxSessionTurns in the settings file instead).
//
// Command fails when Model is empty, for an empty or too long prompt, a
// malformed tool rule, and an approval mode not in ApprovalModes; in
// particular yolo is refused.
func (g *Gemini) Command(t Turn) (Command, error) {
	if g.Model == "" {
		return Command{}, errors.New("runners: gemini: no model (without -m the CLI first calls a router model)")
	}
	if t.Prompt == "" {
		return Command{}, errors.New("runners: gemini: empty prompt")
	}
	if len(t.Prompt) > geminiMaxStdin {
		return Command{}, fmt.Errorf("runners: gemini: prompt of %d bytes is over the CLI's stdin limit of %d", len(t.Prompt), geminiMaxStdin)
	}
	mode := g.ApprovalMode
	if mode == "" {
		mode = "default"
	}
	if !ApprovalModeOK(mode) {
		return Command{}, fmt.Errorf("runners: gemini: approval mode %q not allowed (want one of %s)", mode, strings.Join(approvalModes, ", "))
	}
	args := []string{"-m", g.Model, "--output-format", "stream-json", "--approval-mode", mode, "--skip-trust"}
	allowed, err := joinRules("--allowed-tools", g.AllowedTools, t.Allow)
	if err != nil {
		return Command{}, err
	}
	if allowed != "" {
		args = append(args, "--allowed-tools", allowed)
	}
	if t.Resume != "" {
		args = append(args, "--resume", t.Resume)
	}
	env := []string{"GEMINI_CLI_NO_RELAUNCH=true"}
	if g.Home != "" {
		env = append(env, "GEMINI_CLI_HOME="+g.Home)
	}
	bin := g.Bin
	if bin == "" {
		bin = "gemini"
	}
	return Command{Path: bin, Args: args, Env: env, Dir: t.Dir, Stdin: t.Prompt}, nil
}

// geminiToolKinds are gemini's tools that run commands or write files.
var geminiToolKinds = map[string]ToolKind{"run_shell_command": ToolShell, "write_file": ToolEdit, "replace": ToolEdit}

// geminiLine is one line of gemini's stream-json output. Only the fields
// spawn reads are declared; which ones are set depends on Type.
type geminiLine struct {
	Type string `json:"type"`

	// init
	SessionID string `json:"session_id"`
	Model     string `json:"model"`

	// message
	Role    string `json:"role"`
	Content string `json:"content"`

	// tool_use
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`

	// tool_result (also ToolID), result
	Status string       `json:"status"`
	Output Output       `json:"output"`
	Error  *geminiError `json:"error"`

	// error
	Severity string `json:"severity"`
	Message  string `json:"message"`

	// result
	Stats *geminiStats `json:"stats"`
}

// geminiStats are the token counts of a result line.
type geminiStats struct {
	InputTokens  int64 `json:"input_tokens"`
	Cached       int64 `json:"cached"`
	OutputTokens int64 `json:"output_tokens"`
}

// geminiError is the error object of a tool_result or result line.
type geminiError struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"`
}

// geminiStream is the state Parse keeps between lines to build the result.
type geminiStream struct {
	sessionID  string
	text       sessionText
	turns      int  // model turns seen: runs of text and tool calls between tool results
	inTurn     bool // the last line was model output
	errorLines []string
	done       bool // the result line was seen: later lines are ignored
}

// Parse reads gemini's stream-json output (--output-format stream-json) from
// r until EOF and calls emit for each event, in order: init gives KindInit,
// each assistant message chunk KindText, tool_use KindToolUse, tool_result
// KindToolResult (a status of "error" sets IsError, error.type ErrorType, and
// error.message the Content when output is empty), and the result line
// KindResult. Non-JSON lines and unknown event types are skipped.
//
// The result is built from the whole stream: Text is the assistant chunks
// concatenated within a model turn and separated by a blank line between
// turns (its last 4 MiB: see sessionText); SessionID comes from init; NumTurns counts model turns (runs of
// assistant text and tool calls, ended by tool results), since the stream
// reports no request count; IsError is status != "success". The CLI's
// "error" lines ({"type":"error","severity":"error"|"warning","message":...})
// are collected into ErrorMessage when the result carries no error object of
// its own: an empty model response ends with such a line and a status
// "error" result without an error object, and a detected loop ends with a
// "warning" line and a status "success" result. APIErrorStatus is the HTTP
// status of a failed model call, taken from the error's code or its message
// ("[API Error: {...\"code\":500...}]"), 0 when none can be found.
//
// The first result line ends the events: what follows it is read to EOF but
// not reported, so there is at most one KindResult and it is the last event.
// Lines may be of any length, and a last line without a newline is read.
// Parse returns r's error, if any, wrapped; reaching EOF is not an error, and
// a stream without a result line is not one either: the caller must treat a
// missing KindResult as a crash or an interruption.
//
// Lines are read by a fast path (see geminiFastLine) that gives the same
// events as encoding/json.
func (g *Gemini) Parse(r io.Reader, emit func(Event)) error {
	return g.parse(r, emit, true)
}

// parse is Parse; fast false reads every line with encoding/json (the
// reference the fast path is tested against).
func (g *Gemini) parse(r io.Reader, emit func(Event), fast bool) error {
	var s geminiStream
	var l geminiLine // each line's, reused: the events keep none of it
	var scratch []byte
	return readJSONLines(r, func(b []byte) {
		l = geminiLine{}
		if !fast || !geminiFastLine(b, &l, &scratch) {
			l = geminiLine{}
			if !decode(b, &l) {
				return
			}
		}
		s.line(&l, emit)
	})
}

// line handles one decoded line.
func (s *geminiStream) line(l *geminiLine, emit func(Event)) {
	if s.done {
		return
	}
	switch l.Type {
	case "init":
		s.sessionID = l.SessionID
		emit(Event{Kind: KindInit, Init: &Init{SessionID: l.SessionID, Model: l.Model}})
	case "message":
		if l.Role != "assistant" {
			s.inTurn = false
			return
		}
		s.modelOutput()
		s.text.add(s.turns, l.Content)
		emit(Event{Kind: KindText, Text: l.Content})
	case "tool_use":
		s.modelOutput()
		emit(Event{Kind: KindToolUse, ToolUse: &ToolUse{ID: l.ToolID, Name: l.ToolName, Input: l.Parameters, Kind: geminiToolKinds[l.ToolName]}})
	case "tool_result":
		s.inTurn = false
		tr := &ToolResult{ToolUseID: l.ToolID, IsError: l.Status == "error", Content: l.Output}
		if l.Error != nil {
			tr.ErrorType = l.Error.Type
			if tr.Content.IsEmpty() {
				tr.Content = OutputOf(l.Error.Message)
			}
		}
		emit(Event{Kind: KindToolResult, ToolResult: tr})
	case "error":
		if l.Message != "" {
			s.errorLines = append(s.errorLines, l.Message)
		}
	case "result":
		s.done = true
		emit(Event{Kind: KindResult, Result: s.result(l)})
	}
}

// modelOutput notes a line of model output, which starts a new turn unless
// the previous line was model output too.
func (s *geminiStream) modelOutput() {
	if !s.inTurn {
		s.turns++
		s.inTurn = true
	}
}

// result converts the result line, with what the stream said before it.
func (s *geminiStream) result(l *geminiLine) *Result {
	res := &Result{
		Subtype:   l.Status,
		IsError:   l.Status != "success",
		Text:      s.text.String(),
		SessionID: s.sessionID,
		NumTurns:  s.turns,
	}
	if l.Stats != nil {
		res.Usage.InputTokens = l.Stats.InputTokens
		res.Usage.CachedTokens = l.Stats.Cached
		res.Usage.OutputTokens = l.Stats.OutputTokens
	}
	if e := l.Error; e != nil {
		res.ErrorType = e.Type
		res.ErrorMessage = e.Message
		res.APIErrorStatus = geminiHTTPStatus(e.Code, e.Message)
	} else {
		res.ErrorMessage = strings.Join(s.errorLines, "\n")
	}
	return res
}

// geminiHTTPStatus finds the HTTP status of a failed model API call in a
// gemini error, or returns 0. It tries, in order: a numeric error code; the
// "code" of the API's JSON error body quoted in the message (gemini prints
// "[API Error: {\"error\":{\"code\":500,...}}]"); the rate-limit advice gemini
// appends only to a 429; a google.rpc status name ("(Status: UNAVAILABLE)");
// in an "API Error" message, a lone number from 400 to 599, or else the word
// "overloaded", which gemini 0.61.0 keeps from a 503 UNAVAILABLE body
// ("The model is overloaded. Please try again later.") and reads as 503.
func geminiHTTPStatus(code json.RawMessage, msg string) int {
	var n int
	if json.Unmarshal(code, &n) == nil && n >= 100 && n <= 599 {
		return n
	}
	if i := strings.Index(msg, "{"); i >= 0 {
		var body struct {
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		// A Decoder reads the first JSON value and ignores what follows ("]").
		if json.NewDecoder(strings.NewReader(msg[i:])).Decode(&body) == nil &&
			body.Error.Code >= 100 && body.Error.Code <= 599 {
			return body.Error.Code
		}
	}
	if strings.Contains(msg, "Please wait and try again later") ||
		strings.Contains(msg, "Possible quota limitations in place") {
		return 429
	}
	if i := strings.Index(msg, "(Status: "); i >= 0 {
		name, _, _ := strings.Cut(msg[i+len("(Status: "):], ")")
		if n := rpcStatusHTTP(name); n != 0 {
			return n
		}
	}
	if strings.Contains(msg, "API Error") {
		if n := loneHTTPStatus(msg); n != 0 {
			return n
		}
		// A 503 UNAVAILABLE reaches the stream as the API's message alone:
		// "[API Error: The model is overloaded. Please try again later.]".
		if strings.Contains(strings.ToLower(msg), "overloaded") {
			return 503
		}
	}
	return 0
}

// rpcStatusHTTP maps a google.rpc status name to its HTTP status, or 0.
func rpcStatusHTTP(name string) int {
	switch name {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return 400
	case "UNAUTHENTICATED":
		return 401
	case "PERMISSION_DENIED":
		return 403
	case "NOT_FOUND":
		return 404
	case "ALREADY_EXISTS", "ABORTED":
		return 409
	case "RESOURCE_EXHAUSTED":
		return 429
	case "CANCELLED":
		return 499
	case "INTERNAL", "UNKNOWN", "DATA_LOSS":
		return 500
	case "UNIMPLEMENTED":
		return 501
	case "UNAVAILABLE":
		return 503
	case "DEADLINE_EXCEEDED":
		return 504
	}
	return 0
}

// loneHTTPStatus returns the first run of exactly three digits in msg whose
// value is from 400 to 599, or 0.
func loneHTTPStatus(msg string) int {
	isDigit := func(i int) bool { return i >= 0 && i < len(msg) && msg[i] >= '0' && msg[i] <= '9' }
	for i := 0; i+3 <= len(msg); i++ {
		if !isDigit(i) || !isDigit(i+1) || !isDigit(i+2) || isDigit(i-1) || isDigit(i+3) {
			continue
		}
		n := int(msg[i]-'0')*100 + int(msg[i+1]-'0')*10 + int(msg[i+2]-'0')
		if n >= 400 && n <= 599 {
			return n
		}
	}
	return 0
}
