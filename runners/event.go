// Package runners knows the agent CLIs spawn drives: how to build their
// command lines and environments, and how to read their event streams into
// spawn's own event model. It starts no process itself; the watcher does.
package runners

import (
	"bytes"
	"encoding/json"
)

// Kind names one type of Event.
type Kind string

// The kinds of event an agent's stream is parsed into.
const (
	KindInit       Kind = "init"        // the agent started a session
	KindText       Kind = "text"        // the model said something
	KindToolUse    Kind = "tool_use"    // the model called a tool
	KindToolResult Kind = "tool_result" // the CLI ran (or refused) a tool call
	KindRetry      Kind = "retry"       // the CLI retries a failed model API call
	KindResult     Kind = "result"      // the final result; exactly one per successful process
)

// Event is one thing that happened in an agent's stream. Exactly one of the
// pointer fields matching Kind is set (Text uses the Text field).
type Event struct {
	Kind Kind
	// Message identifies the model response a text or tool_use event came
	// from (claude splits one response into a line per content block, all
	// with the same id); "" when the CLI does not say.
	Message string
	// Usage is the response's token usage, on claude's text and tool_use
	// events (the same on every event of one Message); nil otherwise.
	Usage      *Usage
	Init       *Init
	Text       string
	ToolUse    *ToolUse
	ToolResult *ToolResult
	Retry      *Retry
	Result     *Result
}

// Init describes the session an agent started.
type Init struct {
	SessionID      string
	Model          string
	PermissionMode string // claude's permission mode; gemini reports none
	CLIVersion     string
	CWD            string
	Tools          []string
}

// ToolUse is one tool call made by the model.
type ToolUse struct {
	ID    string
	Name  string
	Input json.RawMessage
	// Kind is what the call does, as the CLI's parser knows its tools.
	Kind ToolKind
	// command is a shell call's command when its parser knew it without
	// Input (commandSet): Command need not read Input again.
	command    string
	commandSet bool
}

// ToolKind is what a tool call does, whatever the CLI calls the tool.
type ToolKind string

// The kinds of tool call spawn tells apart.
const (
	ToolOther ToolKind = ""      // anything else: a read, a search, a web call
	ToolShell ToolKind = "shell" // runs a shell command (Command)
	ToolEdit  ToolKind = "edit"  // writes files (Files)
)

// toolInput is what the tool inputs of every CLI hold of a command and
// of the files written.
type toolInput struct {
	Command      string       `json:"command"`
	FilePath     string       `json:"file_path"`
	NotebookPath string       `json:"notebook_path"`
	Path         string       `json:"path"`
	Changes      []toolChange `json:"changes"`
}

// toolChange is one file of a change of several (codex's file_change).
type toolChange struct {
	Path string `json:"path"`
}

// Command is the command a shell call runs, "" for another call or an
// input without one. The input is decoded when asked: a stream holds
// thousands of calls, and few are asked.
func (t *ToolUse) Command() string {
	if t.Kind != ToolShell {
		return ""
	}
	if t.commandSet {
		return t.command
	}
	in, ok := toolInputOf(t.Input)
	if !ok {
		return ""
	}
	return in.Command
}

// Files are the files an edit call writes, as its input names them.
func (t *ToolUse) Files() []string {
	if t.Kind != ToolEdit {
		return nil
	}
	in, ok := toolInputOf(t.Input)
	if !ok {
		return nil
	}
	var out []string
	for _, p := range []string{in.FilePath, in.NotebookPath, in.Path} {
		if p != "" {
			return []string{p}
		}
	}
	for _, c := range in.Changes {
		if c.Path != "" {
			out = append(out, c.Path)
		}
	}
	return out
}

// ToolResult is the CLI's answer to one tool call.
type ToolResult struct {
	ToolUseID string
	IsError   bool
	// Content is the result's text, decoded when asked (see Output).
	// Claude's parser leaves it empty for the result of a call its stream
	// showed to be of a tool other than Bash, unless the call failed:
	// spawn reads a shell command's output (a test run's) and the reason a
	// call failed (a sandbox's refusal), never another tool's output,
	// which is most of a stream's bytes.
	Content Output
	// ErrorType is gemini's error.type for a failed call: "policy_violation",
	// "tool_not_registered", "invalid_tool_params"... Empty for claude.
	ErrorType string
}

// Retry reports that the CLI is retrying a model API call.
type Retry struct {
	Attempt     int
	MaxRetries  int
	ErrorStatus int
	Error       string
}

// Usage counts tokens and cost as the CLI reports them.
type Usage struct {
	InputTokens int64
	// CachedTokens is the part of InputTokens served from the model's
	// cache: gemini's stats.cached; 0 for claude.
	CachedTokens int64
	OutputTokens int64
	CostUSD      float64
}

// Denial is a tool call the CLI refused for lack of permission.
type Denial struct {
	Tool      string
	ToolUseID string
	Input     json.RawMessage
}

// Result is the agent's final word. A process that exits without one has
// crashed or been interrupted, whatever its exit code.
type Result struct {
	// Subtype is claude's result subtype ("success", "error_max_turns",
	// "error_during_execution") or gemini's status ("success", "error").
	Subtype string
	IsError bool
	// Text is the final answer: claude's result field, or gemini's assistant
	// messages joined.
	Text      string
	SessionID string
	NumTurns  int
	Usage     Usage
	// UsageCumulative says Usage counts the whole session so far, not this
	// process's turn alone: codex reports its thread's running total, so a
	// resumed turn's Usage includes every earlier turn's (Own is the
	// process's part). False for claude and gemini.
	UsageCumulative bool
	Denials         []Denial
	// APIErrorStatus is the HTTP status (100 to 599) of a failed model API
	// call, 0 if none or unknown. For claude it is api_error_status, or when
	// that is null the status its "API Error" text names (529 for "Repeated
	// 529 Overloaded errors"), or else that of its last retry; for gemini,
	// the status its error names (see Gemini.Parse).
	APIErrorStatus int
	ErrorType      string // gemini error.type, or claude's terminal_reason on error
	ErrorMessage   string
}

// Own is what the result's process used itself. before is the running
// total the same session's CLI reported at the end of its previous
// process (zero for a new session); it is subtracted from a cumulative
// Usage, and ignored for a CLI that reports each process's own use.
//
// A running total below before in any of its counts is no continuation
// of before: the CLI started the thread afresh or reset its counters. It
// is taken as a fresh total, all of it this process's, so that a process
// never counts negative tokens.
func (r *Result) Own(before Usage) Usage {
	u := r.Usage
	if !r.UsageCumulative || u.InputTokens < before.InputTokens || u.CachedTokens < before.CachedTokens ||
		u.OutputTokens < before.OutputTokens || u.CostUSD < before.CostUSD {
		return u
	}
	return Usage{
		InputTokens:  u.InputTokens - before.InputTokens,
		CachedTokens: u.CachedTokens - before.CachedTokens,
		OutputTokens: u.OutputTokens - before.OutputTokens,
		CostUSD:      u.CostUSD - before.CostUSD,
	}
}

// Output is a tool result's text. The CLIs write it as a JSON string,
// and the parsers keep that string as the CLI wrote it (validated, not
// decoded): tool output is most of a stream's bytes, and spawn reads
// little of it. String decodes it, as encoding/json would, each time it
// is called; the zero Output is the empty text.
type Output struct {
	quoted []byte // a valid JSON string, quotes included; nil: text is the text
	// uEscape says quoted holds a \u escape of a character that is not a
	// control character (see Searchable).
	uEscape bool
	text    string
}

// OutputOf is the output whose text is s.
func OutputOf(s string) Output { return Output{text: s} }

// String is the text, decoded.
func (o Output) String() string {
	if o.quoted == nil {
		return o.text
	}
	s := jsonScanner{b: o.quoted}
	text, _ := s.strValue() // valid: checked when it was kept
	return text
}

// IsEmpty reports whether the text is "".
func (o Output) IsEmpty() bool {
	if o.quoted == nil {
		return o.text == ""
	}
	return len(o.quoted) == 2
}

// Searchable is the text's bytes as they are kept, for a search that
// need not decode it: inside the JSON string, escapes undecoded, unless
// the CLI escaped a character that JSON need not escape as \uXXXX (then
// the text decoded). A phrase without a character JSON may write as a
// two-character escape (a control character, the quote, the backslash,
// the slash) is in Searchable wherever it is in the text; Searchable may
// hold it where the text does not (the
// n of an escaped line break may start a word), so a match is confirmed
// on String. The bytes must not be changed.
func (o Output) Searchable() []byte {
	if o.quoted == nil {
		return []byte(o.text)
	}
	if o.uEscape {
		return []byte(o.String())
	}
	return o.quoted[1 : len(o.quoted)-1]
}

// MarshalJSON writes the text as a JSON string: the one the CLI wrote,
// when it is kept.
func (o Output) MarshalJSON() ([]byte, error) {
	if o.quoted != nil {
		return o.quoted, nil
	}
	return json.Marshal(o.text)
}

// UnmarshalJSON keeps a JSON string as it is, to be decoded by String.
// null leaves o as it is, as it leaves a string; another value leaves it
// empty.
func (o *Output) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		*o = quotedOutput(b)
	case string(b) != "null":
		*o = Output{}
	}
	return nil
}

// quotedOutput is the output whose text is the valid JSON string b, kept
// as it is (a copy).
func quotedOutput(b []byte) Output {
	s := jsonScanner{b: b}
	_, _, uEscape, _ := s.strEscapes() // valid: the caller says so
	return Output{quoted: bytes.Clone(b), uEscape: uEscape}
}

// keepString reads the JSON string at s.i into *o, as it is, or null,
// which leaves *o as it is; any other value declines. The string is
// validated, not decoded, and copied: the line is the reader's.
func (s *jsonScanner) keepString(o *Output) bool {
	switch s.peek() {
	case 'n':
		return s.literal("null")
	case '"':
		raw, _, uEscape, ok := s.strEscapes()
		if ok {
			*o = Output{quoted: bytes.Clone(raw), uEscape: uEscape}
		}
		return ok
	}
	return false
}
