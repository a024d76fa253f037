package runners

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseGemini(f *os.File, emit func(Event)) error { return (&Gemini{}).Parse(f, emit) }

func TestGeminiCommand(t *testing.T) {
	tests := []struct {
		name     string
		gemini   Gemini
		turn     Turn
		wantPath string
		wantArgs []string
		wantEnv  []string
	}{
		{
			name:     "defaults",
			gemini:   Gemini{Model: "gemini-2.5-pro"},
			turn:     Turn{Prompt: "review", Dir: "/w"},
			wantPath: "gemini",
			wantArgs: []string{"-m", "gemini-2.5-pro", "--output-format", "stream-json", "--approval-mode", "default", "--skip-trust"},
			wantEnv:  []string{"GEMINI_CLI_NO_RELAUNCH=true"},
		},
		{
			name: "everything",
			gemini: Gemini{
				Bin:          "/opt/gemini",
				Model:        "gemini-2.5-flash",
				ApprovalMode: "auto_edit",
				AllowedTools: []string{"run_shell_command(git)", "write_file"},
				Home:         "/run/spawn/gemini-home",
			},
			turn: Turn{
				Prompt:   "fix",
				Dir:      "/w",
				Resume:   "8474fb3c-0748-40dc-9c55-294236205dd6",
				Allow:    []string{"run_shell_command(go test)"},
				MaxTurns: 9, // gemini has no flag for it
			},
			wantPath: "/opt/gemini",
			wantArgs: []string{
				"-m", "gemini-2.5-flash", "--output-format", "stream-json", "--approval-mode", "auto_edit", "--skip-trust",
				"--allowed-tools", "run_shell_command(git),write_file,run_shell_command(go test)",
				"--resume", "8474fb3c-0748-40dc-9c55-294236205dd6",
			},
			wantEnv: []string{"GEMINI_CLI_NO_RELAUNCH=true", "GEMINI_CLI_HOME=/run/spawn/gemini-home"},
		},
		{
			name:     "plan",
			gemini:   Gemini{Model: "m", ApprovalMode: "plan"},
			turn:     Turn{Prompt: strings.Repeat("x", 1<<20)},
			wantPath: "gemini",
			wantArgs: []string{"-m", "m", "--output-format", "stream-json", "--approval-mode", "plan", "--skip-trust"},
			wantEnv:  []string{"GEMINI_CLI_NO_RELAUNCH=true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := tt.gemini.Command(tt.turn)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPath, cmd.Path)
			assert.Equal(t, tt.wantArgs, cmd.Args)
			assert.Equal(t, tt.wantEnv, cmd.Env)
			assert.Equal(t, tt.turn.Dir, cmd.Dir)
			assert.Equal(t, tt.turn.Prompt, cmd.Stdin, "the prompt goes on stdin")
			for _, a := range cmd.Args {
				assert.NotEqual(t, tt.turn.Prompt, a, "the prompt is never in argv")
				assert.NotContains(t, []string{"-p", "--prompt", "-y", "--yolo", "yolo"}, a)
			}
		})
	}
}

func TestGeminiCommandRefuses(t *testing.T) {
	tests := []struct {
		name    string
		gemini  Gemini
		turn    Turn
		wantErr string
	}{
		{"no model", Gemini{}, Turn{Prompt: "p"}, "no model"},
		{"yolo", Gemini{Model: "m", ApprovalMode: "yolo"}, Turn{Prompt: "p"}, "yolo"},
		{"unknown mode", Gemini{Model: "m", ApprovalMode: "autoEdit"}, Turn{Prompt: "p"}, "autoEdit"},
		{"empty prompt", Gemini{Model: "m"}, Turn{}, "empty prompt"},
		{"prompt over stdin limit", Gemini{Model: "m"}, Turn{Prompt: strings.Repeat("x", 8<<20+1)}, "stdin limit"},
		{"rule with space-separated second value", Gemini{Model: "m", AllowedTools: []string{"write_file\nread_file"}}, Turn{Prompt: "p"}, "line break"},
		{"rule like a flag", Gemini{Model: "m"}, Turn{Prompt: "p", Allow: []string{"-y"}}, "starts with '-'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.gemini.Command(tt.turn)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestGeminiParseDefaultModeToolErrors(t *testing.T) {
	events := collect(t, parseGemini, "gemini-w_default.stdout.jsonl")

	var kinds []Kind
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []Kind{KindInit, KindToolUse, KindToolResult, KindToolUse, KindToolResult, KindText, KindResult}, kinds)
	assert.Equal(t, &Init{SessionID: "dd93b27f-279d-420f-845e-814a58c363b7", Model: "gemini-2.5-pro"}, events[0].Init)

	uses := ofKind(events, KindToolUse)
	assert.Equal(t, "write_file", uses[0].ToolUse.Name)
	assert.Equal(t, "write_file__write_file_1795221619582_0", uses[0].ToolUse.ID)
	assert.JSONEq(t, `{"file_path":"/sandbox/work/hello.txt","content":"hello\n"}`, string(uses[0].ToolUse.Input))
	assert.Equal(t, "run_shell_command", uses[1].ToolUse.Name)

	results := ofKind(events, KindToolResult)
	require.Len(t, results, 2)
	for i, name := range []string{"write_file", "run_shell_command"} {
		tr := results[i].ToolResult
		assert.Equal(t, uses[i].ToolUse.ID, tr.ToolUseID)
		assert.True(t, tr.IsError)
		assert.Equal(t, "tool_not_registered", tr.ErrorType)
		assert.True(t, strings.HasPrefix(tr.Content.String(), `Tool "`+name+`" not found.`), tr.Content.String())
	}

	res := onlyResult(t, events)
	assert.Equal(t, "success", res.Subtype)
	assert.False(t, res.IsError)
	assert.Equal(t, "FINAL: committed.", res.Text)
	assert.Equal(t, "dd93b27f-279d-420f-845e-814a58c363b7", res.SessionID)
	assert.Equal(t, 3, res.NumTurns)
	assert.Equal(t, Usage{InputTokens: 30, OutputTokens: 15}, res.Usage)
	assert.Empty(t, res.ErrorMessage)
}

func TestGeminiParseTranscripts(t *testing.T) {
	tests := []struct {
		file       string
		sessionID  string
		toolUses   []string // tool names, in order
		toolErrors []string // ErrorType of each tool result, in order ("" for success)
		subtype    string
		isError    bool
		text       string
		numTurns   int
		usage      Usage
		apiStatus  int
		errorType  string
		errorMsg   string
	}{
		{
			file:      "gemini-text_stream.stdout.jsonl",
			sessionID: "8474fb3c-0748-40dc-9c55-294236205dd6",
			subtype:   "success",
			text:      "LGTM. APPROVED: no issues found.",
			numTurns:  1,
			usage:     Usage{InputTokens: 10, OutputTokens: 5},
		},
		{
			file:       "gemini-read_stream.stdout.jsonl",
			sessionID:  "6cbbf1f0-7221-405d-9ea4-cfcc078c69db",
			toolUses:   []string{"read_file"},
			toolErrors: []string{""},
			subtype:    "success",
			text:       "Let me read the file.\n\nREVIEW: seed.txt looks fine. APPROVED",
			numTurns:   2,
			usage:      Usage{InputTokens: 20, OutputTokens: 10},
		},
		{
			file:       "gemini-parallel_read.stdout.jsonl",
			sessionID:  "f320effd-be13-4f55-9bbf-fcac737879c2",
			toolUses:   []string{"read_file", "read_file"},
			toolErrors: []string{"", "invalid_tool_params"},
			subtype:    "success",
			text:       "Reading two files.\n\n```json\n{\"verdict\":\"approve\",\"summary\":\"ok\",\"findings\":[]}\n```",
			numTurns:   2,
			usage:      Usage{InputTokens: 20, OutputTokens: 10},
		},
		{
			file:       "gemini-allow3.stdout.jsonl",
			sessionID:  "f3c3d464-5d7e-4ca9-8493-e9424678706c",
			toolUses:   []string{"write_file", "run_shell_command"},
			toolErrors: []string{"", "policy_violation"},
			subtype:    "success",
			text:       "FINAL: committed.",
			numTurns:   3,
			usage:      Usage{InputTokens: 30, OutputTokens: 15},
		},
		{
			file:       "gemini-w_yolo.stdout.jsonl",
			sessionID:  "6e10b1df-389c-439f-8c29-81f4c011ad7f",
			toolUses:   []string{"write_file", "run_shell_command"},
			toolErrors: []string{"", ""},
			subtype:    "success",
			text:       "FINAL: committed.",
			numTurns:   3,
			usage:      Usage{InputTokens: 30, OutputTokens: 15},
		},
		{
			file:      "gemini-err500b.stdout.jsonl",
			sessionID: "a650e48d-68f9-4605-8954-2c1ebb85a82c",
			subtype:   "error",
			isError:   true,
			apiStatus: 500,
			errorType: "unknown",
			errorMsg:  `[API Error: {"error":{"code":500,"message":"fake 500","status":"INTERNAL"}}]`,
		},
		{
			// A 529 keeps the API's JSON body in the message.
			file:      "gemini-err529.stdout.jsonl",
			sessionID: "b8478ad3-f909-411f-82ba-7332a5a3617f",
			subtype:   "error",
			isError:   true,
			apiStatus: 529,
			errorType: "unknown",
			errorMsg:  `[API Error: {"error":{"code":529,"message":"Overloaded","status":"UNKNOWN"}}]`,
		},
		{
			// A 503 UNAVAILABLE keeps only the API's message: no code, no
			// status name; "overloaded" is all there is.
			file:      "gemini-err503.stdout.jsonl",
			sessionID: "a345b30f-739a-451b-9150-b77ce7b34e3d",
			subtype:   "error",
			isError:   true,
			apiStatus: 503,
			errorType: "unknown",
			errorMsg:  `[API Error: The model is overloaded. Please try again later.]`,
		},
		{
			file:      "gemini-err400.stdout.jsonl",
			sessionID: "28ab7490-e5ec-43a4-ba2e-d1070807e001",
			subtype:   "error",
			isError:   true,
			apiStatus: 400,
			errorType: "unknown",
			errorMsg:  `[API Error: {"error":{"code":400,"message":"fake 400","status":"INTERNAL"}}]`,
		},
		{
			file:      "gemini-err429.stdout.jsonl",
			sessionID: "53ba207d-75cf-4ddc-99c8-a43848f870d6",
			subtype:   "error",
			isError:   true,
			apiStatus: 429,
			errorType: "unknown",
			errorMsg:  "[API Error: fake 429]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method",
		},
		{
			file:       "gemini-maxturns.stdout.jsonl",
			sessionID:  "71beb26e-361f-47ae-b3a9-cbce3bcdbaf7",
			toolUses:   []string{"read_file"},
			toolErrors: []string{""},
			subtype:    "error",
			isError:    true,
			text:       "Let me read the file.",
			numTurns:   1,
			usage:      Usage{InputTokens: 10, OutputTokens: 5},
			errorType:  "FatalTurnLimitedError",
			errorMsg:   "Reached max session turns for this session. Increase the number of turns by specifying maxSessionTurns in settings.json.",
		},
		{
			// An empty model response: an "error" line, then an error result
			// without an error object.
			file:      "gemini-empty_response.stdout.jsonl",
			sessionID: "9ef09b77-443f-4bda-beb8-cec83542a40d",
			subtype:   "error",
			isError:   true,
			usage:     Usage{InputTokens: 10},
			errorMsg:  "The model returned an empty response with no text or thoughts. This may be a transient API issue; please try again.",
		},
		{
			// A detected loop: a "warning" error line, then a success result.
			file:       "gemini-loop_detected.stdout.jsonl",
			sessionID:  "7726c9a1-15ba-4407-a7ae-86c84015e4e5",
			toolUses:   []string{"read_file", "read_file", "read_file", "read_file"},
			toolErrors: []string{"", "", "", ""},
			subtype:    "success",
			numTurns:   4,
			usage:      Usage{InputTokens: 40, OutputTokens: 20},
			errorMsg:   "Loop detected, stopping execution",
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			events := collect(t, parseGemini, tt.file)
			inits := ofKind(events, KindInit)
			require.Len(t, inits, 1)
			assert.Equal(t, tt.sessionID, inits[0].Init.SessionID)
			var uses []string
			for _, e := range ofKind(events, KindToolUse) {
				uses = append(uses, e.ToolUse.Name)
			}
			assert.Equal(t, tt.toolUses, uses)
			var toolErrors []string
			for _, e := range ofKind(events, KindToolResult) {
				assert.Equal(t, e.ToolResult.ErrorType != "", e.ToolResult.IsError)
				toolErrors = append(toolErrors, e.ToolResult.ErrorType)
			}
			assert.Equal(t, tt.toolErrors, toolErrors)

			res := onlyResult(t, events)
			assert.Equal(t, tt.sessionID, res.SessionID)
			assert.Equal(t, tt.subtype, res.Subtype)
			assert.Equal(t, tt.isError, res.IsError)
			assert.Equal(t, tt.text, res.Text)
			assert.Equal(t, tt.numTurns, res.NumTurns)
			assert.Equal(t, tt.usage, res.Usage)
			assert.Equal(t, tt.apiStatus, res.APIErrorStatus)
			assert.Equal(t, tt.errorType, res.ErrorType)
			assert.Equal(t, tt.errorMsg, res.ErrorMessage)
			assert.Empty(t, res.Denials, "gemini reports no denials summary")
		})
	}
}

func TestGeminiHTTPStatus(t *testing.T) {
	tests := []struct {
		code json.RawMessage
		msg  string
		want int
	}{
		{json.RawMessage(`503`), "whatever", 503},
		{json.RawMessage(`"UNAVAILABLE"`), `[API Error: {"error":{"code":502,"message":"bad gateway"}}]`, 502},
		{nil, `[API Error: {"error":{"code":500,"message":"fake 500","status":"INTERNAL"}}]`, 500},
		{nil, "[API Error: You exceeded your current quota]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method", 429},
		{nil, "[API Error: The model is overloaded. (Status: UNAVAILABLE)]", 503},
		{nil, "[API Error: got HTTP 504 from upstream]", 504},
		{nil, "[API Error: The model is overloaded. Please try again later.]", 503},
		{nil, "[API Error: Model OVERLOADED]", 503},
		{nil, "[API Error: An unknown error occurred.]", 0},
		{nil, "Reached max session turns for this session.", 0},
		{nil, "[API Error: 1500 tokens, 4000 bytes]", 0},
		{nil, "", 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, geminiHTTPStatus(tt.code, tt.msg), "code %s msg %q", tt.code, tt.msg)
	}
}

func TestGeminiParseShapes(t *testing.T) {
	// Shapes the recorded transcripts do not show: a result error with a
	// numeric code, a user message between turns, noise lines, CRLF.
	stream := strings.Join([]string{
		`Warning: 256-color support not detected.`,
		`{"type":"init","session_id":"s","model":"m"}`,
		`{"type":"message","role":"user","content":"hello"}`,
		`{"type":"message","role":"assistant","content":"part 1, ","delta":true}`,
		`{"type":"message","role":"assistant","content":"part 2","delta":true}`,
		`{"type":"something_new","x":1}`,
		`{"type":"error","severity":"warning","message":"ignored: the result has its own error"}`,
		`{"type":"result","status":"error","error":{"type":"ApiError","message":"quota","code":429},"stats":{"input_tokens":3,"output_tokens":4}}`,
	}, "\r\n")
	var events []Event
	require.NoError(t, (&Gemini{}).Parse(strings.NewReader(stream), func(e Event) { events = append(events, e) }))
	require.Len(t, events, 4)
	assert.Equal(t, "part 1, ", events[1].Text)
	assert.Equal(t, "part 2", events[2].Text)
	assert.Equal(t, &Result{
		Subtype:        "error",
		IsError:        true,
		Text:           "part 1, part 2",
		SessionID:      "s",
		NumTurns:       1,
		Usage:          Usage{InputTokens: 3, OutputTokens: 4},
		APIErrorStatus: 429,
		ErrorType:      "ApiError",
		ErrorMessage:   "quota",
	}, events[3].Result)
}
