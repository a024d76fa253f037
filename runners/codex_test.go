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

// codexSettings are the -c settings every codex turn gets after the
// provider's, as Command's doc lists them.
var codexSettings = []string{
	"-c", "shell_environment_policy.ignore_default_excludes=false",
	"-c", `shell_environment_policy.exclude=["OPENAI_API_KEY"]`,
	"-c", `sandbox_mode="read-only"`, "-c", `approval_policy="never"`,
	"-c", `web_search="disabled"`, "-c", "features.multi_agent=false",
	"-c", "features.goals=false", "-c", "features.view_image=false",
	"-c", "features.plugins=false", "-c", "features.unbounded_connection_retries=false",
	"-c", "skills.include_instructions=false", "-c", "skills.bundled.enabled=false",
	"-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false",
	"--skip-git-repo-check", "--ignore-user-config", "--ignore-rules",
}

func TestCodexCommand(t *testing.T) {
	provider := []string{
		"-c", `model_provider="spawn"`,
		"-c", `model_providers.spawn.name="spawn"`,
		"-c", `model_providers.spawn.base_url="http://127.0.0.1:4000/v1"`,
		"-c", `model_providers.spawn.wire_api="responses"`,
	}
	coder := strings.Join(codexSettings, "\x00")
	coder = strings.Replace(coder, `sandbox_mode="read-only"`, `sandbox_mode="workspace-write"`, 1)
	tests := []struct {
		name     string
		codex    Codex
		turn     Turn
		wantPath string
		wantArgs []string
	}{
		{
			name:     "a reviewer's new turn",
			codex:    Codex{Model: "gpt-5.5", BaseURL: "http://127.0.0.1:4000/v1", Home: "/run/spawn/codex"},
			turn:     Turn{Prompt: strings.Repeat("é", 1<<20), Dir: "/w", MaxTurns: 5}, // codex's longest prompt; no turn cap
			wantPath: "codex",
			wantArgs: concat([]string{"exec", "--json", "-m", "gpt-5.5"}, provider,
				[]string{"-c", `model_providers.spawn.env_key="OPENAI_API_KEY"`,
					"-c", "model_providers.spawn.request_max_retries=0", "-c", "model_providers.spawn.stream_max_retries=0"},
				codexSettings, []string{"-"}),
		},
		{
			name: "a coder's resumed turn",
			codex: Codex{Bin: "/opt/codex", Model: "gpt-5.5", BaseURL: "http://127.0.0.1:4000/v1", Home: "/run/spawn/codex",
				KeyEnv: "SPAWN_SEAT_KEY", Sandbox: CodexWorkspaceWrite, MaxRetries: 2},
			turn:     Turn{Prompt: "fix", Dir: "/w", Resume: "01a219b5-fd50-74b0-afb1-1ed61034aa40"},
			wantPath: "/opt/codex",
			wantArgs: concat([]string{"exec", "resume", "--json", "-m", "gpt-5.5"}, provider,
				[]string{"-c", `model_providers.spawn.env_key="SPAWN_SEAT_KEY"`,
					"-c", "model_providers.spawn.request_max_retries=2", "-c", "model_providers.spawn.stream_max_retries=2"},
				strings.Split(strings.Replace(coder, `exclude=["OPENAI_API_KEY"]`, `exclude=["SPAWN_SEAT_KEY"]`, 1), "\x00"),
				[]string{"01a219b5-fd50-74b0-afb1-1ed61034aa40", "-"}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.codex
			cmd, err := c.Command(tc.turn)
			require.NoError(t, err)
			assert.Equal(t, tc.wantPath, cmd.Path)
			assert.Equal(t, tc.wantArgs, cmd.Args)
			assert.Equal(t, []string{"CODEX_HOME=/run/spawn/codex"}, cmd.Env)
			assert.Equal(t, tc.turn.Dir, cmd.Dir)
			assert.Equal(t, tc.turn.Prompt, cmd.Stdin)
		})
	}

	// # negative MaxRetries keeps codex's own retry counts; full access
	// inside spawn's sandbox
	c := Codex{Model: "m", BaseURL: "https://relay.local/v1", Home: "/h", MaxRetries: -1, Sandbox: CodexFullAccess, Confined: true}
	cmd, err := c.Command(Turn{Prompt: "p"})
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(cmd.Args, " "), "max_retries")
	assert.Contains(t, cmd.Args, `sandbox_mode="danger-full-access"`)
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func TestCodexCommandRefuses(t *testing.T) {
	ok := Codex{Model: "gpt-5.5", BaseURL: "http://127.0.0.1:1/v1", Home: "/h"}
	for _, tc := range []struct {
		name  string
		edit  func(*Codex)
		turn  Turn
		error string
	}{
		{"no model", func(c *Codex) { c.Model = "" }, Turn{Prompt: "p"}, "no model"},
		{"empty prompt", nil, Turn{}, "empty prompt"},
		{"a prompt over codex's limit", nil, Turn{Prompt: strings.Repeat("é", 1<<20+1)}, "over codex's limit of 1048576"},
		{"tool rules", nil, Turn{Prompt: "p", Allow: []string{"Bash(git:*)"}}, "not supported"},
		{"no base URL", func(c *Codex) { c.BaseURL = "" }, Turn{Prompt: "p"}, "not an http(s) URL"},
		{"a base URL of another scheme", func(c *Codex) { c.BaseURL = "file:///etc" }, Turn{Prompt: "p"}, "not an http(s) URL"},
		{"no home", func(c *Codex) { c.Home = "" }, Turn{Prompt: "p"}, "absolute path"},
		{"a relative home", func(c *Codex) { c.Home = "codex-home" }, Turn{Prompt: "p"}, "absolute path"},
		{"a bad key variable", func(c *Codex) { c.KeyEnv = "A=B" }, Turn{Prompt: "p"}, "not an environment variable name"},
		{"full access unconfined", func(c *Codex) { c.Sandbox = CodexFullAccess }, Turn{Prompt: "p"}, "needs spawn's own sandbox"},
		{"an unknown sandbox", func(c *Codex) { c.Sandbox = "yolo" }, Turn{Prompt: "p"}, `sandbox "yolo" not one of`},
		{"a thread id like a flag", nil, Turn{Prompt: "p", Resume: "--last"}, "starts with '-'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			if tc.edit != nil {
				tc.edit(&c)
			}
			_, err := c.Command(tc.turn)
			assert.ErrorContains(t, err, tc.error)
		})
	}
}

func TestCodexTOMLString(t *testing.T) {
	assert.Equal(t, `"http://x/v1"`, tomlString("http://x/v1"))
	assert.Equal(t, `"a\"b\\c\u000Ad"`, tomlString("a\"b\\c\nd"))
}

// readCodexTranscript parses a recorded codex transcript.
func readCodexTranscript(t *testing.T, c *Codex, name string) []Event {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "transcripts", name))
	require.NoError(t, err)
	defer f.Close()
	var events []Event
	require.NoError(t, c.Parse(f, func(e Event) { events = append(events, e) }))
	return events
}

func TestCodexParseTranscripts(t *testing.T) {
	tests := []struct {
		file        string
		toolUses    []string // name and input of each KindToolUse
		toolResults []string // IsError and content of each KindToolResult
		isError     bool
		text        string
		numTurns    int
		usage       Usage
		apiStatus   int
		errorMsg    string
	}{
		{
			file:     "codex-text.stdout.jsonl",
			text:     "The first answer.",
			numTurns: 1,
			usage:    Usage{InputTokens: 10, CachedTokens: 2, OutputTokens: 5},
		},
		{
			file:     "codex-resume.stdout.jsonl",
			text:     "The second answer.",
			numTurns: 1,
			usage:    Usage{InputTokens: 20, CachedTokens: 4, OutputTokens: 10}, // the thread's two requests
		},
		{
			file: "codex-coder.stdout.jsonl",
			toolUses: []string{
				`command_execution {"command":"/bin/bash -lc 'git status --short \u0026\u0026 ls \u0026\u0026 echo key=[$OPENAI_API_KEY] plain=[$PLAIN] tokens=$(env | grep -c _TOKEN=)'"}`,
				`file_change {"changes":[{"path":"/sandbox/work/hello.txt","kind":"add"}]}`,
				`command_execution {"command":"/bin/bash -lc 'cat hello.txt'"}`,
			},
			toolResults: []string{"ok README.md\nkey=[] plain=[plain] tokens=0\n", "ok add /sandbox/work/hello.txt", "ok hello from codex\n"},
			text:        "Let me look around.\n\nAdded hello.txt.",
			numTurns:    4,
			usage:       Usage{InputTokens: 40, CachedTokens: 8, OutputTokens: 20},
		},
		{
			file: "codex-reviewer_readonly.stdout.jsonl",
			toolUses: []string{
				`command_execution {"command":"/bin/bash -lc 'cat README.md'"}`,
				`command_execution {"command":"/bin/bash -lc 'echo owned \u003e owned.txt'"}`,
			},
			toolResults: []string{"ok # test\n", "error /bin/bash: line 1: owned.txt: Read-only file system\n"},
			text:        `{"verdict": "approve", "summary": "fine", "findings": []}`,
			numTurns:    3,
			usage:       Usage{InputTokens: 50, CachedTokens: 10, OutputTokens: 25},
		},
		{
			file:      "codex-err401.stdout.jsonl",
			isError:   true,
			apiStatus: 401,
			errorMsg:  "unexpected status 401 Unauthorized: Incorrect API key provided: test-key., url: http://127.0.0.1:PORT/v1/responses",
		},
		{
			file:      "codex-err500.stdout.jsonl",
			isError:   true,
			apiStatus: 500,
			errorMsg:  "We’re currently experiencing high demand, which may cause temporary errors.",
		},
		{
			file:      "codex-err503.stdout.jsonl",
			isError:   true,
			apiStatus: 503,
			errorMsg:  "Selected model is at capacity. Please try a different model.",
		},
		{
			file:      "codex-err404_model.stdout.jsonl",
			isError:   true,
			apiStatus: 404,
			errorMsg:  "The model `gpt-5.5` does not exist or you do not have access to it.",
		},
		{
			file:      "codex-err429_rate_limit.stdout.jsonl",
			isError:   true,
			apiStatus: 429,
			errorMsg:  "exceeded retry limit, last status: 429 Too Many Requests",
		},
		{
			file:     "codex-unreachable.stdout.jsonl",
			isError:  true,
			errorMsg: "Connection failed: error sending request",
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			events := readCodexTranscript(t, &Codex{Model: "gpt-5.5"}, tc.file)
			require.NotEmpty(t, events)
			require.Equal(t, KindInit, events[0].Kind)
			thread := events[0].Init.SessionID
			assert.Len(t, thread, 36)
			assert.Equal(t, "gpt-5.5", events[0].Init.Model)
			var uses, results []string
			var texts []string
			for _, e := range events {
				switch e.Kind {
				case KindToolUse:
					uses = append(uses, e.ToolUse.Name+" "+string(e.ToolUse.Input))
					assert.Equal(t, e.ToolUse.ID, e.Message)
				case KindToolResult:
					state := "ok"
					if e.ToolResult.IsError {
						state = "error"
					}
					results = append(results, state+" "+e.ToolResult.Content.String())
				case KindText:
					texts = append(texts, e.Text)
				}
			}
			assert.Equal(t, tc.toolUses, uses)
			assert.Equal(t, tc.toolResults, results)
			last := events[len(events)-1]
			require.Equal(t, KindResult, last.Kind)
			res := last.Result
			assert.Equal(t, tc.isError, res.IsError)
			if tc.isError {
				assert.Equal(t, "error", res.Subtype)
			} else {
				assert.Equal(t, "success", res.Subtype)
			}
			assert.Equal(t, tc.text, res.Text)
			assert.Equal(t, strings.Join(texts, ""), strings.ReplaceAll(res.Text, "\n\n", ""))
			assert.Equal(t, thread, res.SessionID)
			assert.Equal(t, tc.numTurns, res.NumTurns)
			assert.Equal(t, tc.usage, res.Usage)
			assert.Equal(t, !tc.isError, res.UsageCumulative, "a running total where codex reported one: none on a failed turn")
			assert.Equal(t, tc.apiStatus, res.APIErrorStatus)
			assert.Equal(t, tc.errorMsg, res.ErrorMessage)
		})
	}
}

func TestCodexParseShapes(t *testing.T) {
	long := strings.Repeat("x", 5<<20)
	stream := strings.Join([]string{
		`not json`,
		`{"type":"thread.started","thread_id":"t1"}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`m`" + ` not found."}}`,
		// a command seen completed only, with a 5 MiB output
		`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"yes","aggregated_output":"` + long + `","exit_code":0,"status":"completed"}}`,
		`{"type":"item.started","item":{"id":"item_2","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"a":1},"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"item_2","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"a":1},"result":"r","status":"failed"}}`,
		`{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}`,
		`{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"/w/a","kind":"update"},{"path":"/w/b","kind":"delete"}],"status":"failed"}}`,
		`{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"done"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":7,"cached_input_tokens":1,"output_tokens":3}}`,
		`{"type":"turn.completed"}`,
	}, "\n") // no newline after the last line
	var events []Event
	require.NoError(t, (&Codex{}).Parse(strings.NewReader(stream), func(e Event) { events = append(events, e) }))
	var kinds []Kind
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []Kind{KindInit, KindToolUse, KindToolResult, KindToolUse, KindToolResult, KindRetry,
		KindToolUse, KindToolResult, KindText, KindResult}, kinds)
	assert.Equal(t, long, events[2].ToolResult.Content.String())
	assert.False(t, events[2].ToolResult.IsError)
	assert.Equal(t, "mcp_tool_call:s/t", events[3].ToolUse.Name)
	assert.JSONEq(t, `{"a":1}`, string(events[3].ToolUse.Input))
	assert.Equal(t, &ToolResult{ToolUseID: "item_2", IsError: true, Content: OutputOf("r")}, events[4].ToolResult)
	assert.Equal(t, &Retry{Attempt: 1, Error: "Reconnecting... waiting for network (Connection failed: error sending request)"}, events[5].Retry)
	assert.Equal(t, &ToolResult{ToolUseID: "item_3", IsError: true, Content: OutputOf("update /w/a\ndelete /w/b")}, events[7].ToolResult)
	res := events[9].Result
	assert.Equal(t, "done", res.Text)
	assert.Equal(t, 4, res.NumTurns)
	assert.Equal(t, Usage{InputTokens: 7, CachedTokens: 1, OutputTokens: 3}, res.Usage)
	assert.Equal(t, "Model metadata for `m` not found.", res.ErrorMessage, "a warning kept in a successful result")

	// # a command that exited non-zero is an error even when completed
	var tr *ToolResult
	require.NoError(t, (&Codex{}).Parse(strings.NewReader(
		`{"type":"item.completed","item":{"id":"i","type":"command_execution","aggregated_output":"","exit_code":2,"status":"completed"}}`),
		func(e Event) {
			if e.Kind == KindToolResult {
				tr = e.ToolResult
			}
		}))
	require.NotNil(t, tr)
	assert.True(t, tr.IsError)
}

func TestCodexHTTPStatus(t *testing.T) {
	for msg, want := range map[string]int{
		"unexpected status 403 Forbidden: scripted 403, url: http://127.0.0.1:1/v1/responses":                 403,
		"unexpected status 529 <unknown status code>: scripted 529, url: http://127.0.0.1:1/v1/responses":     529,
		"exceeded retry limit, last status: 429 Too Many Requests":                                            429,
		"You’ve hit your usage limit. Upgrade to Pro, or try again at 9:17 PM.":                               429,
		"We’re currently experiencing high demand, which may cause temporary errors.":                         500,
		"Selected model is at capacity. Please try a different model.":                                        503,
		"The model `x` does not exist or you do not have access to it.":                                       404,
		`{"error":{"code":null,"message":"scripted 400","param":null,"type":"invalid_request_error"}}` + "\n": 400,
		"Connection failed: error sending request":                                                            0,
		"Missing environment variable: `OPENAI_API_KEY`.":                                                     0,
	} {
		assert.Equal(t, want, codexHTTPStatus(msg), msg)
	}
}

func TestCodexClassify(t *testing.T) {
	c := &Codex{Model: "gpt-5.5"}
	result := func(file string) *Result {
		events := readCodexTranscript(t, c, file)
		return events[len(events)-1].Result
	}
	// The usage-limit transcripts were recorded at 21:47 UTC on 2026-11-26
	// (TZ=UTC): one resets three hours later, on the next day, the other ten
	// minutes later, the same day.
	now := time.Date(2026, 11, 26, 21, 47, 50, 0, time.UTC)
	f := c.Classify(result("codex-err429_usage_limit.stdout.jsonl"), "", now)
	assert.Equal(t, FailureUsageLimit, f.Kind)
	assert.Equal(t, time.Date(2026, 11, 27, 0, 48, 0, 0, time.UTC), f.ResetAt)
	assert.Contains(t, f.Message, "You’ve hit your usage limit.")
	f = c.Classify(result("codex-err429_usage_limit_soon.stdout.jsonl"), "", now)
	assert.Equal(t, FailureUsageLimit, f.Kind)
	assert.Equal(t, time.Date(2026, 11, 26, 21, 59, 0, 0, time.UTC), f.ResetAt)

	for file, want := range map[string]FailureKind{
		"codex-text.stdout.jsonl":              FailureNone,
		"codex-coder.stdout.jsonl":             FailureNone,
		"codex-err401.stdout.jsonl":            FailureAuth,
		"codex-err500.stdout.jsonl":            FailureUnavailable,
		"codex-err503.stdout.jsonl":            FailureUnavailable,
		"codex-err404_model.stdout.jsonl":      FailureUnavailable,
		"codex-err429_rate_limit.stdout.jsonl": FailureUnavailable,
		"codex-unreachable.stdout.jsonl":       FailureUnreachable,
	} {
		f := c.Classify(result(file), "", now)
		assert.Equal(t, want, f.Kind, file)
		assert.True(t, f.ResetAt.IsZero(), file)
		assert.Equal(t, want == FailureNone, f.Message == "", file)
	}

	// # no result: codex's usage errors are on stderr only
	f = c.Classify(nil, "No prompt provided via stdin.\n", now)
	assert.Equal(t, Failure{Kind: FailureCrash, Message: "No prompt provided via stdin."}, f)
	f = c.Classify(nil, "Error: thread/resume: thread/resume failed: no rollout found for thread id 01a2 (code -32600)\n", now)
	assert.Equal(t, FailureCrash, f.Kind)
	assert.Contains(t, f.Message, "no rollout found")
	// # a missing key variable, as codex reports it in turn.failed
	f = c.Classify(&Result{IsError: true, ErrorMessage: "Missing environment variable: `OPENAI_API_KEY`."}, "", now)
	assert.Equal(t, FailureAuth, f.Kind)
	// # a bad request is a crash, not something to retry
	f = c.Classify(&Result{IsError: true, APIErrorStatus: 400, ErrorMessage: `{"error":{"type":"invalid_request_error"}}`}, "", now)
	assert.Equal(t, FailureCrash, f.Kind)
}

func TestCodexResetAt(t *testing.T) {
	utc := time.UTC
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	now := time.Date(2026, 11, 26, 21, 17, 14, 0, utc)
	for _, tc := range []struct {
		msg  string
		now  time.Time
		want time.Time
	}{
		{"... or try again at 9:17 PM.", now, time.Date(2026, 11, 26, 21, 18, 0, 0, utc)},
		{"... or try again at 11:59 PM.", now, time.Date(2026, 11, 27, 0, 0, 0, 0, utc)},
		{"... or try again at Nov 27th, 2026 7:17 AM.", now, time.Date(2026, 11, 27, 7, 18, 0, 0, utc)},
		{"... or try again at Dec 1st, 2026 12:05 AM.", now, time.Date(2026, 12, 1, 0, 6, 0, 0, utc)},
		{"... or try again at Dec 22nd, 2026 12:05 PM.", now, time.Date(2026, 12, 22, 12, 6, 0, 0, utc)},
		{"... or try again at Dec 3rd, 2026 1:00 PM.", now, time.Date(2026, 12, 3, 13, 1, 0, 0, utc)},
		// the local time of the codex process
		{"... or try again at Nov 27th, 2026 10:17 PM.", now.In(ny), time.Date(2026, 11, 27, 22, 18, 0, 0, ny)},
		// the day turned between codex's message and now
		{"... or try again at 11:58 PM.", time.Date(2026, 11, 27, 0, 0, 30, 0, utc), time.Date(2026, 11, 26, 23, 59, 0, 0, utc).Add(24 * time.Hour)},
		{"You've hit your usage limit. Try again later.", now, time.Time{}},
	} {
		got := codexResetAt(tc.msg, tc.now)
		assert.True(t, tc.want.Equal(got), "%s: got %v, want %v", tc.msg, got, tc.want)
	}
}

// The version doctor checks codex against is the one agents/package.json pins.
func TestPinnedCodexIsThePackageJSONs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "agents", "package.json"))
	require.NoError(t, err)
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	require.NoError(t, json.Unmarshal(b, &pkg))
	assert.Equal(t, PinnedCodex, pkg.Dependencies["@openai/codex"])
}

// FuzzCodexParse checks Codex.Parse on any stream (see checkStream).
// Seeds: the recorded codex transcripts.
func FuzzCodexParse(f *testing.F) {
	addTranscripts(f, "codex-")
	f.Add([]byte(`{"type":"item.completed","item":{"id":"i","type":"command_execution","exit_code":"x"}}` + "\n" + `{"type":"turn.failed","error":{"message":"status: 99999"}}`))
	f.Fuzz(func(t *testing.T, stream []byte) {
		checkStream(t, (&Codex{}).Parse, stream)
	})
}

// TestCodexToolInputIsTheMapsJSON: a tool call's Input is the JSON of the
// map {key: value} codex's item gives, byte for byte, whatever the value
// holds (HTML, line separators, malformed UTF-8, raw JSON with spaces,
// none, or not JSON at all).
func TestCodexToolInputIsTheMapsJSON(t *testing.T) {
	for _, v := range []string{"", "go test ./...", "a <b> && c", "x\u2028y", "bad \xff utf8", `q"uote\`} {
		for _, typ := range []string{CodexToolCommand, CodexToolWebSearch} {
			it := &codexItem{ID: "i", Type: typ, Command: v, Query: v}
			key := map[string]string{CodexToolCommand: "command", CodexToolWebSearch: "query"}[typ]
			want, err := json.Marshal(map[string]any{key: v})
			require.NoError(t, err)
			assert.Equal(t, string(want), string(codexToolInput(t, it)), "%s %q", typ, v)
		}
	}
	for _, raw := range []string{"", `[{"path": "a<b>.go", "kind" : "add"}]`, `null`, `{not json`, ` [ 1 ] `} {
		changes := json.RawMessage(raw)
		if raw == "" {
			changes = nil
		}
		want, err := json.Marshal(map[string]any{"changes": changes})
		if err != nil {
			want = []byte("{}")
		}
		assert.Equal(t, string(want), string(codexToolInput(t, &codexItem{ID: "i", Type: CodexToolFileChange, Changes: changes})), "changes %q", raw)
	}
}

// FuzzCodexToolInput: the input of a command or a web search is, for any
// string, the JSON json.Marshal makes of a map of its one key.
func FuzzCodexToolInput(f *testing.F) {
	for _, v := range []string{"", "go test ./...", "a <b> && c", "x\u2028y", "bad \xff utf8", `q"uote\`, "\x00\x1f\x7f"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, typ := range []string{CodexToolCommand, CodexToolWebSearch} {
			key := map[string]string{CodexToolCommand: "command", CodexToolWebSearch: "query"}[typ]
			want, err := json.Marshal(map[string]any{key: v})
			require.NoError(t, err)
			tu := codexToolUse(t, &codexItem{ID: "i", Type: typ, Command: v, Query: v})
			require.Equal(t, string(want), string(tu.Input), "%s %q", typ, v)
			// The command the call keeps is the one its input holds.
			require.Equal(t, (&ToolUse{Input: tu.Input, Kind: tu.Kind}).Command(), tu.Command(), "%s %q", typ, v)
		}
	})
}

// codexToolInput is the Input of the tool call an item starts.
func codexToolInput(t *testing.T, it *codexItem) json.RawMessage {
	t.Helper()
	return codexToolUse(t, it).Input
}

// codexToolUse is the tool call an item starts.
func codexToolUse(t *testing.T, it *codexItem) *ToolUse {
	t.Helper()
	s := codexStream{started: map[string]bool{}}
	var tu *ToolUse
	s.toolUse(it, func(e Event) { tu = e.ToolUse })
	require.NotNil(t, tu)
	require.NotNil(t, tu.Input)
	return tu
}

// FuzzMarshalRaw: marshalRaw writes what json.Marshal writes of a raw
// message, and fails where it fails.
func FuzzMarshalRaw(f *testing.F) {
	for _, s := range []string{"", "null", `[{"path":"/w/a","kind":"add"}]`, `{"a": 1}`, `{"a":"<b>"}`, "\"\u2028\"", `[1,2`, `{"a":1e999}`, "\"\xff\"", `{"a":"\t"}`, `[[[[[[]]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []json.RawMessage{b, nil} {
			want, wantErr := json.Marshal(m)
			got, err := marshalRaw(m)
			if (err != nil) != (wantErr != nil) || string(got) != string(want) {
				t.Fatalf("marshalRaw(%q) = %q, %v; json.Marshal: %q, %v", m, got, err, want, wantErr)
			}
		}
	})
}
