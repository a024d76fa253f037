package runners

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transcript opens a stream recorded from a real CLI (see
// testdata/transcripts/README.md).
func transcript(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "transcripts", name))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// collect parses a transcript with parse and returns its events.
func collect(t *testing.T, parse func(*os.File, func(Event)) error, name string) []Event {
	t.Helper()
	var events []Event
	require.NoError(t, parse(transcript(t, name), func(e Event) { events = append(events, e) }))
	return events
}

// ofKind returns the events of kind k.
func ofKind(events []Event, k Kind) []Event {
	var out []Event
	for _, e := range events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// onlyResult returns the one KindResult event, failing the test if there is
// not exactly one, and checks it is the last event.
func onlyResult(t *testing.T, events []Event) *Result {
	t.Helper()
	results := ofKind(events, KindResult)
	require.Len(t, results, 1)
	require.Equal(t, KindResult, events[len(events)-1].Kind, "the result is the last event")
	require.NotNil(t, results[0].Result)
	return results[0].Result
}

func parseClaude(f *os.File, emit func(Event)) error { return (&Claude{}).Parse(f, emit) }

func TestClaudeCommand(t *testing.T) {
	base := []string{"-p", "--output-format", "stream-json", "--verbose"}
	tests := []struct {
		name      string
		claude    Claude
		turn      Turn
		wantPath  string
		wantArgs  []string
		wantEnv   []string
		wantGrace time.Duration
	}{
		{
			name:     "defaults",
			turn:     Turn{Prompt: "do it", Dir: "/w"},
			wantPath: "claude",
			wantArgs: append(base, "--permission-mode", "acceptEdits"),
			wantEnv:  []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "BUN_GC_TIMER_DISABLE=1", "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1", "CLAUDE_CODE_MAX_RETRIES=0"},
		},
		{
			name: "everything",
			claude: Claude{
				Bin:                "/opt/claude",
				Model:              "claude-sonnet-4-5",
				PermissionMode:     "default",
				Tools:              []string{"Read", "Edit", "Bash"},
				AllowedTools:       []string{"Read", "Edit", "Bash(go test:*)"},
				DisallowedTools:    []string{"WebFetch", "WebSearch"},
				AppendSystemPrompt: "Be brief.",
				MaxRetries:         2,
				Settings:           "/run/hooks.json",
			},
			turn: Turn{
				Prompt:      "fix it",
				Dir:         "/w",
				Resume:      "e9e81085-b575-4b78-9c0c-e9ca2f1c6bee",
				Allow:       []string{"Bash(go build:*)"},
				MaxTurns:    7,
				ToolTimeout: 20 * time.Minute,
			},
			wantPath: "/opt/claude",
			wantArgs: append(base,
				"--permission-mode", "default",
				"--tools", "Read,Edit,Bash",
				"--allowedTools", "Read,Edit,Bash(go test:*),Bash(go build:*)",
				"--disallowedTools", "WebFetch,WebSearch",
				"--model", "claude-sonnet-4-5",
				"--append-system-prompt", "Be brief.",
				"--settings", "/run/hooks.json",
				"--resume", "e9e81085-b575-4b78-9c0c-e9ca2f1c6bee",
				"--max-turns", "7",
			),
			wantEnv: []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "BUN_GC_TIMER_DISABLE=1", "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1",
				"BASH_DEFAULT_TIMEOUT_MS=1200000", "BASH_MAX_TIMEOUT_MS=1200000", "CLAUDE_CODE_MAX_RETRIES=2"},
			wantGrace: 30 * time.Second,
		},
		{
			name:     "turn allow only",
			claude:   Claude{PermissionMode: "plan", MaxRetries: -1},
			turn:     Turn{Prompt: "p", Allow: []string{"Write", "Bash(git *)"}, ToolTimeout: 1000 * time.Hour},
			wantPath: "claude",
			wantArgs: append(base, "--permission-mode", "plan", "--allowedTools", "Write,Bash(git *)"),
			// claude takes no timeout beyond 2^31-1 ms.
			wantEnv: []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "BUN_GC_TIMER_DISABLE=1", "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1",
				"BASH_DEFAULT_TIMEOUT_MS=2147483647", "BASH_MAX_TIMEOUT_MS=2147483647"},
			wantGrace: 30 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := tt.claude.Command(tt.turn)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPath, cmd.Path)
			assert.Equal(t, tt.wantArgs, cmd.Args)
			assert.Equal(t, tt.wantEnv, cmd.Env)
			assert.Equal(t, tt.wantGrace, cmd.ToolGrace, "claude stops its own tool calls at the tool timeout")
			assert.Equal(t, tt.turn.Dir, cmd.Dir)
			assert.Equal(t, tt.turn.Prompt, cmd.Stdin, "the prompt goes on stdin")
			for _, a := range cmd.Args {
				assert.NotEqual(t, tt.turn.Prompt, a, "the prompt is never in argv")
				assert.NotContains(t, a, "dangerously")
			}
		})
	}
}

func TestClaudeCommandRefuses(t *testing.T) {
	tests := []struct {
		name    string
		claude  Claude
		turn    Turn
		wantErr string
	}{
		{"bypassPermissions", Claude{PermissionMode: "bypassPermissions"}, Turn{Prompt: "p"}, "bypassPermissions"},
		{"unknown mode", Claude{PermissionMode: "yolo"}, Turn{Prompt: "p"}, "yolo"},
		{"mode in wrong case", Claude{PermissionMode: "acceptedits"}, Turn{Prompt: "p"}, "acceptedits"},
		{"empty prompt", Claude{}, Turn{}, "empty prompt"},
		{"empty rule", Claude{AllowedTools: []string{"Read", " "}}, Turn{Prompt: "p"}, `claude permission rule " ": empty`},
		{"rule claude would split", Claude{}, Turn{Prompt: "p", Allow: []string{"Bash(echo (a) b)"}}, "split"},
		{"disallowed rule with a bad tool name", Claude{DisallowedTools: []string{"bash"}}, Turn{Prompt: "p"}, "upper-case"},
		{"rule like a flag", Claude{}, Turn{Prompt: "p", Allow: []string{"--dangerously-skip-permissions"}}, "starts with '-'"},
		{"rule with comma", Claude{DisallowedTools: []string{"A,B"}}, Turn{Prompt: "p"}, "comma"},
		{"two tools in one name", Claude{Tools: []string{"Read,Edit"}}, Turn{Prompt: "p"}, "bad tool name"},
		{"a rule for a tool name", Claude{Tools: []string{"Bash(git diff)"}}, Turn{Prompt: "p"}, "bad tool name"},
		{"empty tool name", Claude{Tools: []string{""}}, Turn{Prompt: "p"}, "empty tool name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.claude.Command(tt.turn)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestClaudeParseAcceptEditsDenial(t *testing.T) {
	events := collect(t, parseClaude, "claude-a_acceptEdits.stdout.jsonl")

	require.Equal(t, KindInit, events[0].Kind)
	init := events[0].Init
	assert.Equal(t, "3adf9bc0-415f-491c-a862-82bdb014b72b", init.SessionID)
	assert.Equal(t, "acceptEdits", init.PermissionMode)
	assert.Equal(t, "claude-opus-5-5", init.Model)
	assert.Equal(t, "2.1.332", init.CLIVersion)
	assert.Equal(t, "/sandbox/work", init.CWD)
	assert.Contains(t, init.Tools, "Write")

	var kinds []Kind
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []Kind{KindInit, KindText, KindToolUse, KindToolResult, KindToolUse, KindToolResult, KindText, KindResult}, kinds)

	uses := ofKind(events, KindToolUse)
	assert.Equal(t, "toolu_01", uses[0].ToolUse.ID)
	assert.Equal(t, "Write", uses[0].ToolUse.Name)
	assert.JSONEq(t, `{"file_path":"/sandbox/work/hello.txt","content":"hello\n"}`, string(uses[0].ToolUse.Input))
	assert.Equal(t, "Bash", uses[1].ToolUse.Name)

	results := ofKind(events, KindToolResult)
	assert.Equal(t, "toolu_01", results[0].ToolResult.ToolUseID)
	assert.False(t, results[0].ToolResult.IsError)
	assert.Empty(t, results[0].ToolResult.Content.String(), "the text of a Write's result is not decoded: only a shell call's is read")
	assert.Equal(t, "toolu_02", results[1].ToolResult.ToolUseID)
	assert.True(t, results[1].ToolResult.IsError)
	assert.Contains(t, results[1].ToolResult.Content.String(), "require approval: git add -A, git commit -m msg")
	assert.Empty(t, results[1].ToolResult.ErrorType)

	res := onlyResult(t, events)
	assert.Equal(t, "success", res.Subtype, "a denial does not change the subtype")
	assert.False(t, res.IsError)
	assert.Equal(t, "FINAL: committed.", res.Text)
	assert.Equal(t, "3adf9bc0-415f-491c-a862-82bdb014b72b", res.SessionID)
	assert.Equal(t, 3, res.NumTurns)
	assert.Equal(t, Usage{InputTokens: 30, OutputTokens: 15, CostUSD: 0.00042}, res.Usage)
	assert.Zero(t, res.APIErrorStatus)
	assert.Empty(t, res.ErrorType)
	require.Len(t, res.Denials, 1)
	assert.Equal(t, "Bash", res.Denials[0].Tool)
	assert.Equal(t, "toolu_02", res.Denials[0].ToolUseID)
	assert.JSONEq(t, `{"command":"git add -A && git commit -m msg","description":"Commit changes"}`, string(res.Denials[0].Input))
}

func TestClaudeParseTranscripts(t *testing.T) {
	tests := []struct {
		file        string
		sessionID   string
		toolUses    []string // tool names, in order
		toolErrors  []bool   // IsError of each tool result, in order
		denials     []string // denied tools
		subtype     string
		isError     bool
		text        string
		numTurns    int
		apiStatus   int
		errorType   string
		errorPrefix string
	}{
		{
			file:       "claude-b_allow_git.stdout.jsonl",
			sessionID:  "a00d2a0e-2f30-4999-a6d0-6da0c21767b7",
			toolUses:   []string{"Write", "Bash"},
			toolErrors: []bool{false, false},
			subtype:    "success",
			text:       "FINAL: committed.",
			numTurns:   3,
		},
		{
			file:       "claude-c_default.stdout.jsonl",
			sessionID:  "5e528fbf-0008-42a5-a81e-ab93d2590d6c",
			toolUses:   []string{"Write", "Bash"},
			toolErrors: []bool{true, true},
			denials:    []string{"Write", "Bash"},
			subtype:    "success",
			text:       "FINAL: committed.",
			numTurns:   3,
		},
		{
			file:       "claude-u_parallel.stdout.jsonl",
			sessionID:  "e7b55718-c51e-4b53-970c-8d01871a3a48",
			toolUses:   []string{"Write", "Bash"},
			toolErrors: []bool{false, false},
			subtype:    "success",
			text:       "FINAL",
			numTurns:   3,
		},
		{
			file:        "claude-l_maxturns.stdout.jsonl",
			sessionID:   "0f49fb93-eabc-4922-98ff-4e507894acdb",
			toolUses:    []string{"Write"},
			toolErrors:  []bool{false},
			subtype:     "error_max_turns",
			isError:     true,
			numTurns:    2,
			errorType:   "max_turns",
			errorPrefix: "Reached maximum number of turns (1)",
		},
		{
			file:        "claude-err500.stdout.jsonl",
			sessionID:   "b684d9b2-a98b-4929-b7e2-fbb2db5ad8d5",
			subtype:     "success",
			isError:     true,
			text:        "API Error: 500 fake 500. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:PORT).",
			numTurns:    1,
			apiStatus:   500,
			errorType:   "api_error",
			errorPrefix: "API Error: 500 fake 500.",
		},
		{
			// CLAUDE_CODE_MAX_RETRIES=0: one 529, reported with its status.
			file:        "claude-err529.stdout.jsonl",
			sessionID:   "ec7ea326-b8f2-4c05-b354-37c6378228ee",
			subtype:     "success",
			isError:     true,
			text:        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:PORT).",
			numTurns:    1,
			apiStatus:   529,
			errorType:   "api_error",
			errorPrefix: "API Error: 529 Overloaded.",
		},
		{
			// Retries exhausted on 529: claude says "Repeated 529 Overloaded
			// errors" (2.1.197 with api_error_status null, the status then
			// taken from the text: TestClaudeParseDerivesAPIStatus; 2.1.332
			// with 529).
			file:        "claude-err529_retries.stdout.jsonl",
			sessionID:   "892bd9c9-db76-444a-a9c7-4653255913ca",
			subtype:     "success",
			isError:     true,
			text:        "API Error: Repeated 529 Overloaded errors. The API is at capacity — this is usually temporary. Try again in a moment. If it persists, check your inference gateway (127.0.0.1:PORT).",
			numTurns:    1,
			apiStatus:   529,
			errorType:   "api_error",
			errorPrefix: "API Error: Repeated 529 Overloaded errors.",
		},
		{
			file:        "claude-connrefused.stdout.jsonl",
			sessionID:   "def69ad6-1bcd-48db-a046-799fdebcaf0f",
			subtype:     "success",
			isError:     true,
			text:        "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)",
			numTurns:    1,
			errorType:   "api_error",
			errorPrefix: "API Error: Connection refused",
		},
		{
			file:       "claude-v_struct.stdout.jsonl",
			sessionID:  "711538e5-0815-48b1-a57e-77ab5666cd82",
			toolUses:   []string{"StructuredOutput"},
			toolErrors: []bool{false},
			subtype:    "success",
			text:       `{"verdict":"APPROVED"}`,
			numTurns:   2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			events := collect(t, parseClaude, tt.file)
			if inits := ofKind(events, KindInit); len(inits) > 0 {
				require.Len(t, inits, 1)
				assert.Equal(t, tt.sessionID, inits[0].Init.SessionID)
			}
			var uses []string
			for _, e := range ofKind(events, KindToolUse) {
				uses = append(uses, e.ToolUse.Name)
			}
			assert.Equal(t, tt.toolUses, uses)
			var toolErrors []bool
			for _, e := range ofKind(events, KindToolResult) {
				toolErrors = append(toolErrors, e.ToolResult.IsError)
			}
			assert.Equal(t, tt.toolErrors, toolErrors)

			res := onlyResult(t, events)
			assert.Equal(t, tt.sessionID, res.SessionID)
			assert.Equal(t, tt.subtype, res.Subtype)
			assert.Equal(t, tt.isError, res.IsError)
			assert.Equal(t, tt.text, res.Text)
			assert.Equal(t, tt.numTurns, res.NumTurns)
			assert.Equal(t, tt.apiStatus, res.APIErrorStatus)
			assert.Equal(t, tt.errorType, res.ErrorType)
			assert.True(t, strings.HasPrefix(res.ErrorMessage, tt.errorPrefix), "ErrorMessage %q", res.ErrorMessage)
			if !tt.isError {
				assert.Empty(t, res.ErrorMessage)
			}
			var denied []string
			for _, d := range res.Denials {
				denied = append(denied, d.Tool)
			}
			assert.Equal(t, tt.denials, denied)
		})
	}
}

func TestClaudeParseRetries(t *testing.T) {
	events := collect(t, parseClaude, "claude-err500.stdout.jsonl")
	retries := ofKind(events, KindRetry)
	require.Len(t, retries, 2)
	assert.Equal(t, Retry{Attempt: 1, MaxRetries: 2, ErrorStatus: 500, Error: "server_error"}, *retries[0].Retry)
	assert.Equal(t, 2, retries[1].Retry.Attempt)
}

func TestClaudeParseShapes(t *testing.T) {
	// Shapes the recorded transcripts do not show: array tool_result content,
	// thinking blocks, a string user message, null fields, an interrupted run.
	stream := strings.Join([]string{
		`not json at all`,
		`{"type":"stream_event","event":{"type":"message_start"}}`,
		`{"type":"user","message":{"role":"user","content":"a replayed prompt"}}`,
		`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"hi"}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"one"},{"type":"image","source":{}},{"type":"text","text":"two"}]}]}}`,
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"error_status":null,"error":"unknown"}`,
		`{"type":"result","subtype":"error_during_execution","is_error":true,"result":null,"api_error_status":null,"num_turns":1,"session_id":"s","terminal_reason":"aborted_streaming","usage":{"input_tokens":5,"cache_creation_input_tokens":7,"cache_read_input_tokens":11,"output_tokens":3},"permission_denials":[],"errors":[]}`,
	}, "\r\n")
	var events []Event
	require.NoError(t, (&Claude{}).Parse(strings.NewReader(stream), func(e Event) { events = append(events, e) }))
	require.Len(t, events, 4)
	assert.Equal(t, Event{Kind: KindText, Text: "hi"}, events[0])
	assert.Equal(t, &ToolResult{ToolUseID: "t1", Content: OutputOf("one\ntwo")}, events[1].ToolResult)
	assert.Equal(t, &Retry{Attempt: 1, MaxRetries: 10, Error: "unknown"}, events[2].Retry)
	assert.Equal(t, &Result{
		Subtype:      "error_during_execution",
		IsError:      true,
		SessionID:    "s",
		NumTurns:     1,
		Usage:        Usage{InputTokens: 23, OutputTokens: 3},
		ErrorType:    "aborted_streaming",
		ErrorMessage: "",
	}, events[3].Result)
}

func TestClaudeParseToleratesOddFieldTypes(t *testing.T) {
	// One field of an unexpected type must not cost the whole result.
	line := `{"type":"result","subtype":"success","is_error":false,"num_turns":"three","result":"done","session_id":"s","permission_denials":[{"tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"ls"}}]}`
	var events []Event
	require.NoError(t, (&Claude{}).Parse(strings.NewReader(line), func(e Event) { events = append(events, e) }))
	require.Len(t, events, 1)
	res := events[0].Result
	assert.Equal(t, "done", res.Text)
	assert.Equal(t, "s", res.SessionID)
	require.Len(t, res.Denials, 1)
	assert.Equal(t, json.RawMessage(`{"command":"ls"}`), res.Denials[0].Input)
}

// Each text and tool_use event names the model response it came from and
// carries that response's usage, so a watcher can count turns and estimate
// cost while the stream goes on.
func TestClaudeEventsCarryMessageAndUsage(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "testdata", "transcripts", "claude-b_allow_git.stdout.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var first *Event
	messages := map[string]bool{}
	require.NoError(t, (&Claude{}).Parse(f, func(ev Event) {
		if ev.Kind == KindText || ev.Kind == KindToolUse {
			if first == nil {
				first = &ev
			}
			messages[ev.Message] = true
		}
	}))
	require.NotNil(t, first)
	assert.Equal(t, "msg_fake_936b698d_0001", first.Message)
	require.NotNil(t, first.Usage)
	// claude 2.1.332 writes the usage the response started with (the
	// scripted server's message_start says 1 output token, its
	// message_delta 5; 2.1.197 wrote the final 5): the result line has the
	// totals.
	assert.Equal(t, Usage{InputTokens: 10, OutputTokens: 1}, *first.Usage)
	assert.Len(t, messages, 3, "three model responses")
}

func TestClaudeHTTPStatus(t *testing.T) {
	tests := []struct {
		msg  string
		want int
	}{
		{"API Error: Repeated 529 Overloaded errors. The API is at capacity — this is usually temporary.", 529},
		{"API Error: 503 upstream unavailable. This is a server-side issue. If it persists, check your inference gateway (127.0.0.1:18121).", 503},
		{"API Error: Request rejected (429) · slow down", 429},
		{`API Error: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 529},
		{"API Error: Overloaded", 529},
		{"API Error: Opus is experiencing high load, please use /model to switch to Sonnet", 529},
		{"API Error: Unable to connect to API (ConnectionRefused)", 0},
		{"API Error: API returned an empty or malformed response (HTTP 200) — check for a proxy or gateway intercepting the request", 0},
		// The gateway host after the first sentence is not a status.
		{"API Error: Request timed out. If it persists, check your inference gateway (10.0.0.1:502).", 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, claudeHTTPStatus(tt.msg), tt.msg)
	}
}

func TestClaudeParseDerivesAPIStatus(t *testing.T) {
	parse := func(lines ...string) *Result {
		t.Helper()
		var events []Event
		require.NoError(t, (&Claude{}).Parse(strings.NewReader(strings.Join(lines, "\n")), func(e Event) { events = append(events, e) }))
		return onlyResult(t, events)
	}
	retry := `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"error_status":529,"error":"overloaded"}`
	t.Run("status from the last retry when the text has none", func(t *testing.T) {
		res := parse(retry, `{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"result":"API Error: Request timed out"}`)
		assert.Equal(t, 529, res.APIErrorStatus)
	})
	t.Run("the result's own status wins", func(t *testing.T) {
		res := parse(retry, `{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"API Error: 400 bad request"}`)
		assert.Equal(t, 400, res.APIErrorStatus)
	})
	t.Run("not an API error", func(t *testing.T) {
		res := parse(retry, `{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"result":"Not logged in · Please run /login"}`)
		assert.Equal(t, 0, res.APIErrorStatus)
	})
	t.Run("a successful answer that talks about overload", func(t *testing.T) {
		res := parse(`{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"result":"API Error: 529 Overloaded is handled now."}`)
		assert.Equal(t, 0, res.APIErrorStatus)
	})
}

// A claude reviewer is offered only the built-in tools its allowed rules
// name, each once; MCP tools are not built in. A coder keeps claude's
// default set.
func TestAClaudeReviewerIsOfferedTheBuiltinToolsItsRulesName(t *testing.T) {
	a, err := NewRegistry().Lookup("claude")
	require.NoError(t, err)
	set := a.Defaults()
	set.AllowedTools = []string{"Read", "Grep", "Bash(git diff:*)", "Bash(git log:*)", "mcp__docs__search"}
	for _, tt := range []struct {
		role  SeatRole
		tools []string // the value of --tools; nil: no --tools
	}{
		{RoleReviewer, []string{"Read,Grep,Bash"}},
		{RoleCoder, nil},
	} {
		t.Run(string(tt.role), func(t *testing.T) {
			ag, err := a.Seat(Seat{Role: tt.role, Bin: "claude", Settings: set, Dir: t.TempDir(), RelayURL: "http://127.0.0.1:9/x", RelayKey: "k"})
			require.NoError(t, err)
			cmd, err := ag.Command(Turn{Prompt: "review it", Dir: "/w"})
			require.NoError(t, err)
			var got []string
			for i, arg := range cmd.Args {
				if arg == "--tools" {
					require.Less(t, i+1, len(cmd.Args))
					got = append(got, cmd.Args[i+1])
				}
			}
			assert.Equal(t, tt.tools, got)
		})
	}
}
