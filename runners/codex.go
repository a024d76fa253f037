package runners

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/observability"
)

// PinnedCodex is the @openai/codex version agents/package.json pins.
const PinnedCodex = "0.171.0"

// CodexSandbox is the mode of codex's own sandbox, which confines the
// commands the model runs and the patches it applies.
type CodexSandbox string

// The sandbox modes of `codex exec`.
const (
	// CodexReadOnly is a reviewer's: files and read-only commands; every
	// write, by a command or a patch, is refused, and so is the network.
	CodexReadOnly CodexSandbox = "read-only"
	// CodexWorkspaceWrite is a coder's: commands and patches may write in
	// the working directory (its .git stays read-only, so the coder cannot
	// commit), /tmp and $TMPDIR, nowhere else, without network.
	CodexWorkspaceWrite CodexSandbox = "workspace-write"
	// CodexFullAccess turns codex's sandbox off. Only allowed when spawn's
	// own sandbox (bubblewrap, or Seatbelt on macOS) is around codex: see
	// Codex.Confined.
	CodexFullAccess CodexSandbox = "danger-full-access"
)

// The tool names a codex stream's events carry: codex reports what it did
// as items of these types, whatever the model's tool was called.
const (
	CodexToolCommand    = "command_execution" // a shell command (the model's exec_command)
	CodexToolFileChange = "file_change"       // a patch (the model's apply_patch)
	CodexToolMCP        = "mcp_tool_call"     // a call to an MCP server's tool
	CodexToolWebSearch  = "web_search"        // a web search (off in spawn's argv)
)

// codexProvider is the name of the model provider spawn defines on codex's
// command line.
const codexProvider = "spawn"

// codexMaxPrompt is the most characters codex 0.171.0 takes as a prompt;
// a longer one fails the turn before it starts ("Input exceeds the maximum
// length of 1048576 characters.", exit 1, nothing on stdout but
// thread.started).
const codexMaxPrompt = 1 << 20

// codexKeyEnv is the environment variable the provider reads its API key
// from unless Codex.KeyEnv says otherwise.
const codexKeyEnv = "OPENAI_API_KEY"

// Codex builds command lines for the real codex CLI (`codex exec --json`)
// and parses its JSONL output. Codex talks to the model through a provider
// of spawn's own, defined with -c settings: the built-in OpenAI provider
// ignores OPENAI_BASE_URL.
type Codex struct {
	Bin string // "codex" or a path; "" means "codex"
	// Model is -m; required. A model codex's catalog knows (gpt-5.5,
	// gpt-5.6-sol, gpt-6-sol...) is offered apply_patch as a freeform
	// (custom) tool; another one gets an error item ("Model metadata for
	// ... not found") and no apply_patch at all.
	Model string
	// BaseURL is the model provider's base_url, up to and including /v1:
	// codex posts to <BaseURL>/responses. Required; http or https.
	BaseURL string
	// KeyEnv names the environment variable codex reads the API key from
	// (the provider's env_key); "" means OPENAI_API_KEY. The key itself is
	// never in argv: the caller's environment carries it.
	KeyEnv string
	// Home is CODEX_HOME: codex's config, sessions (what `exec resume`
	// reads), logs and state databases. Required, absolute, and it must
	// exist (codex 0.171.0 exits 1 otherwise: "CODEX_HOME points to ...,
	// but that path does not exist"). It must not lie inside the process's
	// temporary directory ($TMPDIR, else /tmp): there codex only warns
	// ("Refusing to create helper binaries under temporary dir") and goes
	// on without its helper aliases.
	Home string
	// Sandbox is codex's own sandbox for the turn; "" means CodexReadOnly.
	Sandbox CodexSandbox
	// Confined says spawn's own sandbox (bubblewrap, or Seatbelt on macOS)
	// is around codex. Only then does Command accept CodexFullAccess:
	// codex's sandbox nests in bubblewrap where user namespaces may be
	// nested, and where they may not (bwrap --disable-userns) its every
	// command fails with "bwrap: Creating new namespace failed"; on macOS
	// codex's own sandbox is Seatbelt too, and Seatbelt profiles never nest
	// (its every command fails with "sandbox_apply: Operation not
	// permitted"), so under spawn's Seatbelt codex must run with
	// CodexFullAccess. Full access is the way out there, and only there.
	Confined bool
	// MaxRetries bounds codex's retries of a failed model request and of a
	// dropped stream (request_max_retries, stream_max_retries) when >= 0;
	// negative keeps codex's defaults. Retries of a refused connection are
	// always off (features.unbounded_connection_retries=false): with them
	// an unreachable model makes codex wait forever.
	MaxRetries int
	// Preamble, when set, comes before the prompt of a new session (codex
	// has no flag for an added system prompt).
	Preamble string
	// Environ is the seat's environment (Env).
	Environ []string
}

// codexSandboxes lists the sandbox modes Command accepts.
var codexSandboxes = []CodexSandbox{CodexReadOnly, CodexWorkspaceWrite, CodexFullAccess}

// Command returns the codex process for one turn:
//
//	codex exec [resume] --json -m MODEL
//	      -c model_provider="spawn"
//	      -c model_providers.spawn.name="spawn"
//	      -c model_providers.spawn.base_url="BASEURL"
//	      -c model_providers.spawn.wire_api="responses"
//	      -c model_providers.spawn.env_key="OPENAI_API_KEY"
//	      [-c model_providers.spawn.request_max_retries=N
//	       -c model_providers.spawn.stream_max_retries=N]
//	      -c shell_environment_policy.ignore_default_excludes=false
//	      -c shell_environment_policy.exclude=["OPENAI_API_KEY"]
//	      -c sandbox_mode="MODE" -c approval_policy="never"
//	      -c web_search="disabled" -c features.multi_agent=false
//	      -c features.goals=false -c features.view_image=false
//	      -c features.plugins=false -c features.unbounded_connection_retries=false
//	      -c skills.include_instructions=false -c skills.bundled.enabled=false
//	      -c check_for_update_on_startup=false -c analytics.enabled=false
//	      --skip-git-repo-check --ignore-user-config --ignore-rules
//	      [THREAD_ID] -
//
// The prompt goes on stdin ("-"); a resumed turn names t.Resume, the
// thread id of the session's thread.started event. The commands the model
// runs get codex's environment without the key variable and without any
// variable whose name holds KEY, SECRET or TOKEN (codex 0.171.0 passes
// them all on unless told otherwise). The sandbox is set with
// -c sandbox_mode because `exec resume` has no -s flag; approval_policy
// "never" makes codex refuse, never ask, whatever its sandbox does not
// allow (a patch in read-only mode, a command asking for escalation).
// The model is offered exec_command, write_stdin, request_user_input and
// apply_patch: web search, sub-agents, goals, images and plugins are off,
// and so are codex's bundled skills, which it would otherwise unpack into
// CODEX_HOME at each start (80 files for spawn to remove at the run's end).
// check_for_update_on_startup, analytics.enabled and features.plugins stop
// codex's calls home (an update check and analytics to chatgpt.com and
// ab.chatgpt.com, the plugin marketplace to api.github.com): without them
// a sandbox without network waits about 5 s on DNS. --ignore-user-config skips $CODEX_HOME/config.toml,
// --ignore-rules the user's and the repository's command rules;
// a repository's .codex/config.toml is not read either (codex reads it only
// for a trusted project). The environment sets CODEX_HOME.
//
// t.MaxTurns is not passed: codex has no turn cap. Command fails when
// Model, BaseURL or Home is missing or malformed, for an empty prompt or
// one over codex's limit of 1,048,576 characters, for
// tool rules in t.Allow (codex's sandbox, not rules, decides what runs),
// for an unknown sandbox mode, and for CodexFullAccess unless Confined.
func (c *Codex) Command(t Turn) (Command, error) {
	if c.Model == "" {
		return Command{}, errors.New("runners: codex: no model: name one codex knows, such as gpt-5.5")
	}
	if t.Prompt == "" {
		return Command{}, errors.New("runners: codex: empty prompt")
	}
	if n := utf8.RuneCountInString(t.Prompt); n > codexMaxPrompt {
		return Command{}, fmt.Errorf("runners: codex: prompt of %d characters is over codex's limit of %d", n, codexMaxPrompt)
	}
	if len(t.Allow) > 0 {
		return Command{}, fmt.Errorf("runners: codex: tool rules %q not supported: codex's sandbox mode decides what the model may run", t.Allow)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Command{}, fmt.Errorf("runners: codex: base URL %q is not an http(s) URL: give the model API's base URL, up to /v1", c.BaseURL)
	}
	if c.Home == "" || !filepath.IsAbs(c.Home) {
		return Command{}, fmt.Errorf("runners: codex: CODEX_HOME %q must be an absolute path", c.Home)
	}
	keyEnv := c.KeyEnv
	if keyEnv == "" {
		keyEnv = codexKeyEnv
	}
	if !envName.MatchString(keyEnv) {
		return Command{}, fmt.Errorf("runners: codex: %q is not an environment variable name", keyEnv)
	}
	mode := c.Sandbox
	if mode == "" {
		mode = CodexReadOnly
	}
	switch {
	case mode == CodexFullAccess && !c.Confined:
		return Command{}, errors.New("runners: codex: sandbox danger-full-access needs spawn's own sandbox around codex (Confined)")
	case mode != CodexReadOnly && mode != CodexWorkspaceWrite && mode != CodexFullAccess:
		return Command{}, fmt.Errorf("runners: codex: sandbox %q not one of %v", mode, codexSandboxes)
	}
	p := "model_providers." + codexProvider + "."
	settings := []string{
		"model_provider=" + tomlString(codexProvider),
		p + "name=" + tomlString(codexProvider),
		p + "base_url=" + tomlString(c.BaseURL),
		p + "wire_api=" + tomlString("responses"),
		p + "env_key=" + tomlString(keyEnv),
	}
	if c.MaxRetries >= 0 {
		n := strconv.Itoa(c.MaxRetries)
		settings = append(settings, p+"request_max_retries="+n, p+"stream_max_retries="+n)
	}
	settings = append(settings,
		"shell_environment_policy.ignore_default_excludes=false",
		"shell_environment_policy.exclude=["+tomlString(keyEnv)+"]",
		"sandbox_mode="+tomlString(string(mode)),
		"approval_policy="+tomlString("never"),
		"web_search="+tomlString("disabled"),
		"features.multi_agent=false",
		"features.goals=false",
		"features.view_image=false",
		"features.plugins=false",
		"features.unbounded_connection_retries=false",
		"skills.include_instructions=false",
		"skills.bundled.enabled=false",
		"check_for_update_on_startup=false",
		"analytics.enabled=false",
	)
	args := []string{"exec"}
	if t.Resume != "" {
		args = append(args, "resume")
	}
	args = append(args, "--json", "-m", c.Model)
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	args = append(args, "--skip-git-repo-check", "--ignore-user-config", "--ignore-rules")
	if t.Resume != "" {
		if strings.HasPrefix(t.Resume, "-") {
			return Command{}, fmt.Errorf("runners: codex: thread id %q starts with '-'", t.Resume)
		}
		args = append(args, t.Resume)
	}
	args = append(args, "-")
	bin := c.Bin
	if bin == "" {
		bin = "codex"
	}
	prompt := t.Prompt
	if c.Preamble != "" && t.Resume == "" {
		prompt = c.Preamble + "\n\n" + prompt
	}
	return Command{Path: bin, Args: args, Env: []string{"CODEX_HOME=" + c.Home}, Dir: t.Dir, Stdin: prompt}, nil
}

var envName = lazy.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// tomlString quotes s as a TOML basic string (codex parses a -c value as
// TOML).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// codexLine is one line of `codex exec --json` output. Only the fields
// spawn reads are declared; which ones are set depends on Type.
type codexLine struct {
	Type string `json:"type"`
	// thread.started
	ThreadID string `json:"thread_id"`
	// item.started, item.updated, item.completed
	Item *codexItem `json:"item"`
	// turn.completed
	Usage *struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	// turn.failed
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	// error
	Message string `json:"message"`
}

// codexItem is the item of an item.* line.
type codexItem struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// agent_message, reasoning
	Text string `json:"text"`
	// command_execution
	Command          string `json:"command"`
	AggregatedOutput Output `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	// command_execution, file_change, mcp_tool_call
	Status string `json:"status"`
	// file_change
	Changes json.RawMessage `json:"changes"`
	// mcp_tool_call
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// mcp_tool_call
	Result json.RawMessage `json:"result"`
	// error item; web_search query
	Message string `json:"message"`
	Query   string `json:"query"`
}

// codexStream is the state Parse keeps between lines to build the result.
type codexStream struct {
	model    string
	threadID string
	text     sessionText
	turns    int
	inTurn   bool
	// The tool items whose KindToolUse was emitted: those not completed
	// yet, and those completed (a set that stays small: see idSet).
	started   map[string]bool
	completed idSet
	errors    []string // error items and error lines, in order
	retryLine int      // "Reconnecting..." lines seen
	done      bool
}

// Parse reads `codex exec --json` output from r until EOF and calls emit
// for each event, in order:
//
//   - thread.started gives KindInit, SessionID the thread id (what
//     Turn.Resume takes) and Model the runner's Model (the stream names
//     none);
//   - an agent_message item gives KindText (Message is the item id);
//   - a command_execution, file_change or mcp_tool_call item gives
//     KindToolUse when it starts, named by its type (CodexToolCommand,
//     CodexToolFileChange, CodexToolMCP; an MCP call's Name is
//     "mcp_tool_call:SERVER/TOOL") with Input {"command": ...},
//     {"changes": [...]} or the MCP arguments, and KindToolResult when it
//     completes (an item seen completed only gets both). A command's
//     Content is its aggregated output and IsError a status other than
//     "completed" or a non-zero exit code; a file change's Content lists
//     its changes ("add PATH", one a line) and IsError is a status other
//     than "completed". A patch or a command codex's sandbox policy refuses
//     outright (a write in read-only mode, a request for escalation) gets
//     no item at all: codex logs it on stderr only ("patch rejected: ...").
//     A command its sandbox denied while running ("Read-only file system")
//     shows as a failed command in some runs and not at all in others
//     (codex 0.171.0 dropped the item in 4 runs of 6): the stream is no
//     complete list of what was refused.
//   - a top-level error line "Reconnecting..." (codex retrying a refused
//     connection) gives KindRetry;
//   - turn.completed gives KindResult (Subtype "success"), turn.failed
//     KindResult with IsError, Subtype "error", ErrorMessage the failure's
//     message and APIErrorStatus the HTTP status it names (see
//     codexHTTPStatus).
//
// The result's Text is the agent messages, joined by a blank line between
// model turns (its last 4 MiB: see sessionText); NumTurns counts model turns (runs of messages and tool
// starts ended by tool results); Usage is turn.completed's, which codex
// 0.171.0 counts over the whole thread: a resumed turn's Usage includes
// every earlier turn of its thread (Result.UsageCumulative is set; a
// turn.failed reports no usage, and no running total).
// Error items (an unknown model's "Model metadata ... not found") and
// other error lines are kept in ErrorMessage of a successful result.
//
// The first result line ends the events: what follows it is read to EOF
// but not reported. Lines may be of any length, and a last line without a
// newline is read. Parse returns r's error, if any, wrapped; a stream
// without a turn.completed or turn.failed line is not an error: the caller
// must treat a missing KindResult as a crash or an interruption (codex
// writes its usage errors, such as an empty prompt or an unknown thread
// id, to stderr only and exits 1).
//
// Lines are read by a fast path (see codexFastLine) that gives the same
// events as encoding/json.
func (c *Codex) Parse(r io.Reader, emit func(Event)) error {
	return c.parse(r, emit, true)
}

// parse is Parse; fast false reads every line with encoding/json (the
// reference the fast path is tested against).
func (c *Codex) parse(r io.Reader, emit func(Event), fast bool) error {
	s := codexStream{model: c.Model, started: map[string]bool{}}
	// Each line's, reused: the events keep none of them.
	var l codexLine
	var item codexItem
	var scratch []byte
	return readJSONLines(r, func(b []byte) {
		l = codexLine{}
		if !fast || !codexFastLine(b, &l, &item, &scratch) {
			l = codexLine{}
			if !decode(b, &l) {
				return
			}
		}
		s.line(&l, emit)
	})
}

// line handles one decoded line.
func (s *codexStream) line(l *codexLine, emit func(Event)) {
	if s.done {
		return
	}
	switch l.Type {
	case "thread.started":
		s.threadID = l.ThreadID
		emit(Event{Kind: KindInit, Init: &Init{SessionID: l.ThreadID, Model: s.model}})
	case "item.started":
		if l.Item != nil && codexToolItem(l.Item.Type) {
			s.toolUse(l.Item, emit)
		}
	case "item.completed":
		if l.Item != nil {
			s.itemCompleted(l.Item, emit)
		}
	case "error":
		if strings.HasPrefix(l.Message, "Reconnecting...") {
			s.retryLine++
			emit(Event{Kind: KindRetry, Retry: &Retry{Attempt: s.retryLine, Error: l.Message}})
			return
		}
		if l.Message != "" {
			s.errors = append(s.errors, l.Message)
		}
	case "turn.completed":
		s.done = true
		res := s.result()
		res.Subtype = "success"
		if l.Usage != nil {
			res.Usage = Usage{InputTokens: l.Usage.InputTokens, CachedTokens: l.Usage.CachedInputTokens, OutputTokens: l.Usage.OutputTokens}
			res.UsageCumulative = true
		}
		res.ErrorMessage = strings.Join(s.errors, "\n")
		emit(Event{Kind: KindResult, Result: res})
	case "turn.failed":
		s.done = true
		res := s.result()
		res.Subtype = "error"
		res.IsError = true
		if l.Error != nil {
			res.ErrorMessage = l.Error.Message
		}
		if res.ErrorMessage == "" {
			res.ErrorMessage = strings.Join(s.errors, "\n")
		}
		res.APIErrorStatus = codexHTTPStatus(res.ErrorMessage)
		emit(Event{Kind: KindResult, Result: res})
	}
}

func codexToolItem(typ string) bool {
	return typ == CodexToolCommand || typ == CodexToolFileChange || typ == CodexToolMCP || typ == CodexToolWebSearch
}

// toolUse emits the KindToolUse of a tool item, once per item id.
func (s *codexStream) toolUse(it *codexItem, emit func(Event)) {
	if s.started[it.ID] || s.completed.has(it.ID) {
		return
	}
	s.started[it.ID] = true
	if !s.inTurn {
		s.turns++
		s.inTurn = true
	}
	name := it.Type
	var raw []byte
	var err error
	kind := ToolOther
	// {key: value} is written as json.Marshal writes a map of one key,
	// without building the map (a stream holds thousands of calls); a
	// string is written without reflection.
	switch it.Type {
	case CodexToolCommand:
		raw, kind = jsonObject("command", it.Command), ToolShell
	case CodexToolFileChange:
		kind = ToolEdit
		if raw, err = marshalRaw(it.Changes); err == nil {
			raw = append(append([]byte(`{"changes":`), raw...), '}')
		}
	case CodexToolMCP:
		name = CodexToolMCP + ":" + it.Server + "/" + it.Tool
		raw, err = marshalRaw(it.Arguments)
	case CodexToolWebSearch:
		raw = jsonObject("query", it.Query)
	}
	if err != nil || len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	tu := &ToolUse{ID: it.ID, Name: name, Input: raw, Kind: kind}
	if kind == ToolShell && utf8.ValidString(it.Command) {
		tu.command, tu.commandSet = it.Command, true // what Input holds
	}
	emit(Event{Kind: KindToolUse, Message: it.ID, ToolUse: tu})
}

// marshalRaw is json.Marshal(m): m as it is when that is what Marshal
// writes (valid JSON without whitespace, and without a character Marshal
// escapes for HTML: <, >, &, U+2028, U+2029), without Marshal's second
// pass over it; a stream holds thousands of calls.
func marshalRaw(m json.RawMessage) ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	for _, c := range m {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xe2: // 0xe2 starts U+2028 and U+2029
			return json.Marshal(m)
		}
	}
	s := jsonScanner{b: m}
	if !s.skip() || s.i != len(m) {
		return json.Marshal(m)
	}
	return bytes.Clone(m), nil
}

// jsonObject is {"key":value} as json.Marshal writes a map of one key
// whose value is a string; key needs no escape.
func jsonObject(key, value string) []byte {
	b := make([]byte, 0, len(key)+len(value)+8)
	b = append(append(append(b, `{"`...), key...), `":`...)
	return append(observability.AppendJSONString(b, value), '}')
}

// itemCompleted handles an item.completed line.
func (s *codexStream) itemCompleted(it *codexItem, emit func(Event)) {
	switch {
	case it.Type == "agent_message":
		if !s.inTurn {
			s.turns++
			s.inTurn = true
		}
		s.text.add(s.turns, it.Text)
		emit(Event{Kind: KindText, Message: it.ID, Text: it.Text})
	case it.Type == "error":
		if it.Message != "" {
			s.errors = append(s.errors, it.Message)
		}
	case codexToolItem(it.Type):
		s.toolUse(it, emit)
		delete(s.started, it.ID)
		s.completed.add(it.ID)
		s.inTurn = false
		tr := &ToolResult{ToolUseID: it.ID, IsError: it.Status != "completed"}
		switch it.Type {
		case CodexToolCommand:
			tr.Content = it.AggregatedOutput
			if it.ExitCode != nil && *it.ExitCode != 0 {
				tr.IsError = true
			}
		case CodexToolFileChange:
			tr.Content = OutputOf(codexChanges(it.Changes))
		case CodexToolMCP:
			tr.Content = OutputOf(rawString(it.Result))
		}
		emit(Event{Kind: KindToolResult, ToolResult: tr})
	}
}

// codexChanges lists a file_change's changes, "KIND PATH" one a line.
// The usual list is read by a fast path (fastCodexChanges).
func codexChanges(raw json.RawMessage) string {
	if list, ok := fastCodexChanges(raw); ok {
		return list
	}
	return slowCodexChanges(raw)
}

// slowCodexChanges is codexChanges through encoding/json, the reference
// of the fast path.
func slowCodexChanges(raw json.RawMessage) string {
	var changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	}
	if json.Unmarshal(raw, &changes) != nil {
		return ""
	}
	lines := make([]string, len(changes))
	for i, ch := range changes {
		lines[i] = ch.Kind + " " + ch.Path
	}
	return strings.Join(lines, "\n")
}

// result starts the result from what the stream said before its end.
func (s *codexStream) result() *Result {
	return &Result{Text: s.text.String(), SessionID: s.threadID, NumTurns: s.turns}
}

// codexStatus finds "status 429" / "last status: 429" in codex's messages.
var codexStatus = lazy.MustCompile(`\bstatus:? (\d{3})\b`)

// codexHTTPStatus returns the HTTP status of a failed model request named
// in a codex 0.171.0 turn.failed message, or 0. Codex names it in most
// messages ("unexpected status 401 Unauthorized: ...", "exceeded retry
// limit, last status: 429 Too Many Requests") and replaces some with its
// own words: a usage limit ("You've hit your usage limit...") is a 429, a
// 500 is "We're currently experiencing high demand...", a 503 "Selected
// model is at capacity...", and a 404 is the API's own message ("The model
// `x` does not exist or you do not have access to it."). A 400 is the
// API's error body, whose type invalid_request_error says 400.
func codexHTTPStatus(msg string) int {
	if m := codexStatus.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n >= 100 && n <= 599 {
			return n
		}
	}
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "usage limit"):
		return 429
	case strings.Contains(lower, "experiencing high demand"):
		return 500
	case strings.Contains(lower, "model is at capacity"):
		return 503
	case strings.Contains(lower, "does not exist or you do not have access"):
		return 404
	case strings.Contains(msg, `"invalid_request_error"`):
		return 400
	}
	return 0
}

// FailureKind says why an agent turn failed.
type FailureKind string

// The kinds of failure an adapter's Classify tells apart.
const (
	FailureNone        FailureKind = ""            // the turn did not fail
	FailureAuth        FailureKind = "auth"        // the credential was missing or refused
	FailureUnreachable FailureKind = "unreachable" // the model API did not answer
	FailureUnavailable FailureKind = "unavailable" // the model is unknown, overloaded or failing
	FailureUsageLimit  FailureKind = "usage_limit" // the account's usage limit or quota is spent
	FailureCrash       FailureKind = "crash"       // anything else: no result, a bad request, a CLI error
)

// Failure is why an agent turn failed, as its output tells.
type Failure struct {
	Kind FailureKind
	// ResetAt is when a usage limit resets, zero when the CLI did not say.
	ResetAt time.Time
	// Message is the CLI's own words for the failure.
	Message string
}

// Classify says why a codex turn failed. res is the stream's
// KindResult, nil when the stream had none; stderr is what the process
// wrote there; now is when the turn ended, in the time zone of the codex
// process (codex prints a usage limit's reset time in its local time, to
// the minute). A successful result gives FailureNone.
//
// A usage limit ("You've hit your usage limit ... try again at 9:17 PM.",
// or "... try again at Nov 27th, 2026 7:17 AM." when the reset is on
// another day; also "Quota exceeded" and a plan without Codex) is
// FailureUsageLimit, with ResetAt the end of the minute codex printed
// (codex drops the seconds, so ResetAt is never early), zero when codex
// printed no time. A 401 or 403, or a missing key variable, is
// FailureAuth; a refused or dropped connection FailureUnreachable; an
// unknown model (404), a 429 that is not a usage limit, and a 5xx
// FailureUnavailable. No result at all, a bad request and anything else
// is FailureCrash, with the last line of stderr as Message when the
// stream had none ("No prompt provided via stdin.", "... no rollout found
// for thread id ...").
func (c *Codex) Classify(res *Result, stderr string, now time.Time) Failure {
	if res != nil && !res.IsError {
		return Failure{}
	}
	if res == nil {
		return Failure{Kind: FailureCrash, Message: lastLine(stderr)}
	}
	msg := res.ErrorMessage
	f := Failure{Kind: FailureCrash, Message: msg}
	lower := strings.ToLower(msg)
	status := res.APIErrorStatus
	switch {
	case strings.Contains(lower, "usage limit") || strings.Contains(lower, "quota exceeded") ||
		strings.Contains(lower, "to use codex with your chatgpt plan"):
		f.Kind = FailureUsageLimit
		f.ResetAt = codexResetAt(msg, now)
	case status == 401 || status == 403 || strings.Contains(msg, "Missing environment variable"):
		f.Kind = FailureAuth
	case strings.Contains(lower, "connection failed") || strings.Contains(lower, "error sending request") ||
		strings.Contains(lower, "stream disconnected") || strings.Contains(lower, "timeout"):
		f.Kind = FailureUnreachable
	case status == 404 || status == 408 || status == 429 || status >= 500:
		f.Kind = FailureUnavailable
	}
	if f.Message == "" {
		f.Message = lastLine(stderr)
	}
	return f
}

// codexResetTime finds the time in "try again at 9:17 PM." or "try again at
// Nov 27th, 2026 7:17 AM.".
var codexResetTime = lazy.MustCompile(`try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}:\d{2} [AP]M)`)

// codexResetAt returns the end of the minute a usage-limit message names,
// in now's location, or the zero time. A time of day alone is on now's
// date, or the next day's when that is more than 12 hours past (the day
// turned between codex's message and now).
func codexResetAt(msg string, now time.Time) time.Time {
	m := codexResetTime.FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}
	}
	loc := now.Location()
	var t time.Time
	var err error
	if m[1] != "" {
		t, err = time.ParseInLocation("Jan 2 2006 3:04 PM", m[1]+" "+m[2]+" "+m[3]+" "+m[4], loc)
	} else {
		var clock time.Time
		clock, err = time.Parse("3:04 PM", m[4])
		y, mo, d := now.In(loc).Date()
		t = time.Date(y, mo, d, clock.Hour(), clock.Minute(), 0, 0, loc)
		if now.Sub(t) > 12*time.Hour {
			t = t.AddDate(0, 0, 1)
		}
	}
	if err != nil {
		return time.Time{}
	}
	return t.Add(time.Minute)
}

// lastLine returns the last non-blank line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
