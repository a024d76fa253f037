package runners

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// claudeE2E is the pinned claude pointed at a scripted model server, with
// a fresh HOME and TMPDIR and a new git repository as its working
// directory.
type claudeE2E struct {
	t    *testing.T
	bin  string
	srv  *modelserver.Server
	repo string
	home string
	tmp  string
	env  []string // the environment of every run, before the command's own
}

func newClaudeE2E(t *testing.T, sc modelserver.Scenario) *claudeE2E {
	t.Helper()
	bin := testenv.Claude(t)
	srv, err := modelserver.Start(sc, modelserver.WithLogf(t.Logf))
	require.NoError(t, err)
	t.Cleanup(func() {
		srv.Close()
		assert.NoError(t, srv.Verify(), "every scripted turn was served")
	})
	repo, err := filepath.EvalSymlinks(testenv.Repo(t))
	require.NoError(t, err)
	env := testenv.Env(t, srv.ClaudeEnv()...)
	e := &claudeE2E{t: t, bin: bin, srv: srv, repo: repo, env: env}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			e.home = v
		}
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			e.tmp = v
		}
	}
	return e
}

// claudeRun is one real claude process.
type claudeRun struct {
	stdout []byte
	stderr string
	code   int
	events []Event
	result *Result // the KindResult, nil if none
}

// texts are the run's KindText events.
func (r claudeRun) texts() []string {
	var out []string
	for _, e := range ofKind(r.events, KindText) {
		out = append(out, e.Text)
	}
	return out
}

// run runs one turn of c (its Bin set to the pinned claude) in the
// repository; edit, when not nil, changes the command first (a flag or a
// variable the runner does not set). name, when not empty, is the
// transcript the run is recorded as with -record.
func (e *claudeE2E) run(c *Claude, turn Turn, name string, edit func(*Command)) claudeRun {
	t := e.t
	t.Helper()
	c.Bin = e.bin
	turn.Dir = e.repo
	cmd, err := c.Command(turn)
	require.NoError(t, err)
	if edit != nil {
		edit(&cmd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	x := exec.CommandContext(ctx, cmd.Path, cmd.Args...)
	x.Dir = cmd.Dir
	x.Env = append(slices.Clone(e.env), cmd.Env...)
	x.Stdin = strings.NewReader(cmd.Stdin)
	x.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	x.Stdout, x.Stderr = &stdout, &stderr
	start := time.Now()
	err = x.Run()
	if exit := (*exec.ExitError)(nil); err != nil && !errors.As(err, &exit) {
		require.NoError(t, err, "claude did not run")
	}
	r := claudeRun{stdout: stdout.Bytes(), stderr: stderr.String(), code: x.ProcessState.ExitCode()}
	t.Logf("claude ran in %v (rc %d); stderr: %s", time.Since(start).Round(time.Millisecond), r.code, r.stderr)
	require.NoError(t, c.Parse(bytes.NewReader(r.stdout), func(ev Event) {
		r.events = append(r.events, ev)
		if ev.Kind == KindResult {
			r.result = ev.Result
		}
	}))
	if *record && name != "" {
		path := filepath.Join("..", "testdata", "transcripts", "claude-"+name+".stdout.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(e.anonymize(string(r.stdout))), 0o644))
	}
	return r
}

// anonymize rewrites the test's paths and port in a recording: the working
// directory is /sandbox/work (also in claude's project folder names, where
// every character but letters and digits is a dash), HOME /sandbox/home,
// TMPDIR /sandbox/tmp, the server 127.0.0.1:PORT.
func (e *claudeE2E) anonymize(text string) string {
	slug := regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(e.repo, "-")
	return strings.NewReplacer(e.repo, "/sandbox/work", slug, "-sandbox-work",
		e.home, "/sandbox/home", e.tmp, "/sandbox/tmp",
		strings.TrimPrefix(e.srv.URL(), "http://"), "127.0.0.1:PORT").Replace(text)
}

// kinds are the kinds of events, in order.
func kinds(events []Event) []Kind {
	var out []Kind
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

// toolResults are the run's tool results by call id.
func (r claudeRun) toolResults() map[string]*ToolResult {
	out := map[string]*ToolResult{}
	for _, e := range ofKind(r.events, KindToolResult) {
		out[e.ToolResult.ToolUseID] = e.ToolResult
	}
	return out
}

// writeAndCommit is the scripted coder of the permission recordings: it
// writes hello.txt, commits it with one compound Bash command, and says so.
func writeAndCommit() modelserver.Scenario {
	return modelserver.Scenario{Anthropic: []modelserver.Script{{Match: "create hello.txt and commit it", Turns: []modelserver.Turn{
		{Text: "I'll create the file.", Tools: []modelserver.ToolCall{{ID: "toolu_01", Name: "Write",
			Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hello\n"}}}},
		{Tools: []modelserver.ToolCall{{ID: "toolu_02", Name: "Bash",
			Input: map[string]any{"command": "git add -A && git commit -m msg", "description": "Commit changes"}}}},
		{Text: "FINAL: committed."},
	}}}}
}

// Under acceptEdits with no Bash rule, claude writes the file and denies
// the commit: the denial is in the result, not in the exit code.
func TestClaudeAcceptEditsWritesButDeniesTheCommit(t *testing.T) {
	t.Parallel()
	e := newClaudeE2E(t, writeAndCommit())
	r := e.run(&Claude{MaxRetries: 0}, Turn{Prompt: "create hello.txt and commit it"}, "a_acceptEdits", nil)
	assert.Equal(t, 0, r.code)

	assert.Equal(t, []Kind{KindInit, KindText, KindToolUse, KindToolResult, KindToolUse, KindToolResult, KindText, KindResult}, kinds(r.events))
	init := r.events[0].Init
	assert.Equal(t, "acceptEdits", init.PermissionMode)
	assert.Equal(t, PinnedClaude, init.CLIVersion)
	assert.Equal(t, e.repo, init.CWD)
	assert.Contains(t, init.Tools, "Write")
	assert.NotContains(t, init.Tools, "TaskOutput", "background tasks are off")

	b, err := os.ReadFile(filepath.Join(e.repo, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(b))
	assert.Equal(t, "initial", testenv.Git(t, e.repo, "log", "--format=%s"), "nothing was committed")

	results := r.toolResults()
	assert.False(t, results["toolu_01"].IsError)
	assert.True(t, results["toolu_02"].IsError)
	assert.Contains(t, results["toolu_02"].Content.String(), "git add -A")

	require.NotNil(t, r.result)
	assert.Equal(t, "success", r.result.Subtype, "a denial does not change the subtype")
	assert.False(t, r.result.IsError)
	assert.Equal(t, "FINAL: committed.", r.result.Text)
	assert.Equal(t, init.SessionID, r.result.SessionID)
	assert.Equal(t, 3, r.result.NumTurns)
	require.Len(t, r.result.Denials, 1)
	assert.Equal(t, "Bash", r.result.Denials[0].Tool)
	assert.Equal(t, "toolu_02", r.result.Denials[0].ToolUseID)
}

// With a Bash(git:*) rule the commit runs; the request claude sends last
// is kept for the model server's tests.
func TestClaudeAllowedGitCommits(t *testing.T) {
	t.Parallel()
	e := newClaudeE2E(t, writeAndCommit())
	r := e.run(&Claude{MaxRetries: 0, AllowedTools: []string{"Bash(git:*)"}}, Turn{Prompt: "create hello.txt and commit it"}, "b_allow_git", nil)
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "msg", testenv.Git(t, e.repo, "log", "-1", "--format=%s"))
	results := r.toolResults()
	assert.False(t, results["toolu_02"].IsError, results["toolu_02"].Content.String())
	assert.Contains(t, results["toolu_02"].Content.String(), "1 file changed")
	require.NotNil(t, r.result)
	assert.Empty(t, r.result.Denials)
	assert.Equal(t, "FINAL: committed.", r.result.Text)

	main := mainRequests(e.srv)
	require.Len(t, main, 3)
	if *record {
		last := main[2]
		headers := map[string]string{}
		for k, v := range last.Header {
			headers[k] = e.anonymize(v[0])
		}
		// The tool definitions are trimmed to their names.
		var body map[string]any
		require.NoError(t, json.Unmarshal(last.Body, &body))
		if tools, ok := body["tools"].([]any); ok {
			for i, tl := range tools {
				if m, ok := tl.(map[string]any); ok {
					tools[i] = map[string]any{"name": m["name"]}
				}
			}
		}
		rec, err := json.Marshal(map[string]any{
			"note":   "Recorded from claude " + PinnedClaude + " by runners' TestClaudeAllowedGitCommits -record; tool definitions trimmed to names.",
			"method": last.Method, "path": last.Path, "headers": headers, "body": body,
		})
		require.NoError(t, err)
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, []byte(e.anonymize(string(rec))), "", " "))
		path := filepath.Join("..", "internal", "modelserver", "testdata", "claude-request-turn3.json")
		require.NoError(t, os.WriteFile(path, append(pretty.Bytes(), '\n'), 0o644))
	}
}

// Under --permission-mode default nothing is allowed: both calls denied.
func TestClaudeDefaultModeDeniesWriteAndBash(t *testing.T) {
	t.Parallel()
	e := newClaudeE2E(t, writeAndCommit())
	r := e.run(&Claude{MaxRetries: 0, PermissionMode: "default"}, Turn{Prompt: "create hello.txt and commit it"}, "c_default", nil)
	assert.Equal(t, 0, r.code)
	assert.NoFileExists(t, filepath.Join(e.repo, "hello.txt"))
	results := r.toolResults()
	assert.True(t, results["toolu_01"].IsError)
	assert.True(t, results["toolu_02"].IsError)
	require.NotNil(t, r.result)
	var denied []string
	for _, d := range r.result.Denials {
		denied = append(denied, d.Tool)
	}
	assert.Equal(t, []string{"Write", "Bash"}, denied)
}

// Two tool calls in one response: both run, both results come back.
func TestClaudeParallelToolCalls(t *testing.T) {
	t.Parallel()
	e := newClaudeE2E(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{
			{ID: "toolu_A", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}},
			{ID: "toolu_B", Name: "Bash", Input: map[string]any{"command": "git status --short", "description": "status"}},
		}},
		{Text: "FINAL"},
	}}}})
	r := e.run(&Claude{MaxRetries: 0, PermissionMode: "default", AllowedTools: []string{"Write", "Bash(git status:*)"}}, Turn{Prompt: "write and look"}, "u_parallel", nil)
	assert.Equal(t, 0, r.code)
	var uses []string
	for _, ev := range ofKind(r.events, KindToolUse) {
		uses = append(uses, ev.ToolUse.Name)
	}
	assert.Equal(t, []string{"Write", "Bash"}, uses)
	results := r.toolResults()
	require.Len(t, results, 2)
	assert.False(t, results["toolu_A"].IsError)
	assert.False(t, results["toolu_B"].IsError)
	require.NotNil(t, r.result)
	assert.Equal(t, "FINAL", r.result.Text)
}

// --max-turns 1 ends the run after the first response's tool call.
func TestClaudeMaxTurns(t *testing.T) {
	t.Parallel()
	e := newClaudeE2E(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Text: "I'll create the file.", Tools: []modelserver.ToolCall{{ID: "toolu_01", Name: "Write",
			Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hello\n"}}}},
	}}}})
	r := e.run(&Claude{MaxRetries: 0}, Turn{Prompt: "create hello.txt", MaxTurns: 1}, "l_maxturns", nil)
	require.NotNil(t, r.result)
	assert.Equal(t, "error_max_turns", r.result.Subtype)
	assert.True(t, r.result.IsError)
	assert.Equal(t, "max_turns", r.result.ErrorType)
	assert.Equal(t, "Reached maximum number of turns (1)", r.result.ErrorMessage)
	assert.FileExists(t, filepath.Join(e.repo, "hello.txt"))
}

// A model API that fails: claude retries as told, then reports the status.
func TestClaudeAPIErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     int
		message    string
		retries    int
		mode       string
		wantStatus int
		wantText   string
		wantRetry  int // the api_retry lines
	}{
		{name: "err500", status: 500, message: "fake 500", retries: 2, mode: "default", wantStatus: 500, wantText: "API Error: 500 fake 500.", wantRetry: 2},
		{name: "err529", status: 529, message: "Overloaded", wantStatus: 529, wantText: "API Error: 529 Overloaded."},
		{name: "err529_retries", status: 529, message: "Overloaded", retries: 2, wantStatus: 529, wantText: "API Error: Repeated 529 Overloaded errors.", wantRetry: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newClaudeE2E(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
				{Error: &modelserver.HTTPError{Status: tt.status, Message: tt.message}},
			}}}})
			r := e.run(&Claude{MaxRetries: tt.retries, PermissionMode: tt.mode}, Turn{Prompt: "review the repo"}, tt.name, nil)
			assert.Equal(t, 1, r.code)
			assert.Len(t, ofKind(r.events, KindRetry), tt.wantRetry)
			require.NotNil(t, r.result)
			assert.True(t, r.result.IsError)
			assert.Equal(t, tt.wantStatus, r.result.APIErrorStatus)
			assert.True(t, strings.HasPrefix(r.result.Text, tt.wantText), r.result.Text)
			assert.Equal(t, FailureUnavailable, (&Claude{}).Classify(r.result, r.stderr, time.Now()).Kind)
		})
	}
}

// A model API nothing listens on: an error result, no status.
func TestClaudeAPIUnreachable(t *testing.T) {
	t.Parallel()
	e := newClaudeE2E(t, modelserver.Scenario{})
	r := e.run(&Claude{MaxRetries: 0, AllowedTools: []string{"Read", "Bash(git:*)"}}, Turn{Prompt: "hi there", MaxTurns: 2}, "connrefused", func(c *Command) {
		c.Env = append(c.Env, "ANTHROPIC_BASE_URL=http://127.0.0.1:1")
	})
	assert.Equal(t, 1, r.code)
	require.NotNil(t, r.result)
	assert.True(t, r.result.IsError)
	assert.Zero(t, r.result.APIErrorStatus)
	// claude 2.1.197 said "API Error: Unable to connect to API
	// (ConnectionRefused)"; 2.1.332 "API Error: Connection refused — a
	// firewall or proxy may be blocking it (ECONNREFUSED)".
	assert.True(t, strings.HasPrefix(r.result.Text, "API Error: Connection refused"), r.result.Text)
	assert.Equal(t, FailureUnreachable, (&Claude{}).Classify(r.result, r.stderr, time.Now()).Kind)
}

// --json-schema: the answer is the StructuredOutput tool's input.
func TestClaudeStructuredOutput(t *testing.T) {
	t.Parallel()
	e := newClaudeE2E(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "toolu_S", Name: "StructuredOutput", Input: map[string]any{"verdict": "APPROVED"}}}},
	}}}})
	schema := `{"type":"object","properties":{"verdict":{"type":"string"}},"required":["verdict"]}`
	r := e.run(&Claude{MaxRetries: 0}, Turn{Prompt: "review the repo"}, "v_struct", func(c *Command) {
		c.Args = append(c.Args, "--json-schema", schema)
	})
	assert.Equal(t, 0, r.code)
	require.NotNil(t, r.result)
	assert.False(t, r.result.IsError)
	assert.JSONEq(t, `{"verdict":"APPROVED"}`, r.result.Text)
}

// bashCall is a scripted Bash tool call.
func bashCall(id, command string) modelserver.ToolCall {
	return modelserver.ToolCall{ID: id, Name: "Bash", Input: map[string]any{"command": command, "description": "run it"}}
}

// resultLines counts the result lines of a stream.
func resultLines(t *testing.T, stdout []byte) int {
	t.Helper()
	n := 0
	for line := range bytes.Lines(stdout) {
		var l struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &l) == nil && l.Type == "result" {
			n++
		}
	}
	return n
}

// A command that reaches the turn's tool timeout is stopped by claude,
// which tells the model so; the turn goes on and ends with one result.
func TestClaudeStopsACommandAtTheToolTimeout(t *testing.T) {
	t.Parallel()
	const marker = "sleep 3171"
	testenv.KillAtCleanup(t, func(c string) bool { return strings.Contains(c, marker) })
	e := newClaudeE2E(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{bashCall("b1", "echo started && "+marker+" && echo finished")}},
		{Text: "The command timed out."},
	}}}})
	start := time.Now()
	r := e.run(&Claude{MaxRetries: 0, AllowedTools: []string{"Bash(echo:*)", "Bash(sleep:*)"}},
		Turn{Prompt: "run the tests", ToolTimeout: 5 * time.Second}, "bash_timeout", nil)
	assert.Less(t, time.Since(start), time.Minute, "the command was stopped at the tool timeout")
	assert.Equal(t, 0, r.code)

	// # the model was told: the command timed out, with what it printed
	seen := toolResultSeen(t, e.srv, "b1")
	assert.True(t, seen.IsError)
	assert.Contains(t, seen.Content, "Command timed out after 5s")
	assert.Contains(t, seen.Content, "started")
	assert.NotContains(t, seen.Content, "finished")
	assert.NotContains(t, seen.Content, "background")
	assert.Empty(t, testenv.Processes(t, func(c string) bool { return strings.HasPrefix(c, marker) }), "claude killed the command")

	// # one turn, one result
	assert.Equal(t, 1, resultLines(t, r.stdout))
	require.NotNil(t, r.result)
	assert.False(t, r.result.IsError)
	assert.Equal(t, "The command timed out.", r.result.Text)
}

// Left to its own settings (background tasks on), claude moves a command
// that outlives its Bash timeout to the background and tells the model so;
// the model answers while the command runs (the first result line), and
// claude -p waits for the command and starts a turn of its own (the second
// result line). The parser reports that turn and the last result. claude's
// default timeout is 2 minutes; BASH_DEFAULT_TIMEOUT_MS=5000 stands for it.
func TestClaudeOnItsOwnMovesALongCommandToTheBackground(t *testing.T) {
	t.Parallel()
	e := newClaudeE2E(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{bashCall("b1", "echo started && sleep 12 && echo finished")}},
		{Text: "I will wait for it."},
	}}}})
	r := e.run(&Claude{MaxRetries: 0, AllowedTools: []string{"Bash(echo:*)", "Bash(sleep:*)"}}, Turn{Prompt: "run the tests"}, "background",
		func(c *Command) {
			c.Env = slices.DeleteFunc(c.Env, func(kv string) bool { return strings.HasPrefix(kv, "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=") })
			c.Env = append(c.Env, "BASH_DEFAULT_TIMEOUT_MS=5000")
		})
	assert.Equal(t, 0, r.code)

	// # the model got the result of a command still running
	results := r.toolResults()
	require.Contains(t, results, "b1")
	assert.False(t, results["b1"].IsError)
	assert.Contains(t, results["b1"].Content.String(), "Command did not complete within its 5s timeout and was moved to the background")
	assert.NotContains(t, results["b1"].Content.String(), "finished")

	// # two turns, two result lines; the parser's result is the last one
	assert.Equal(t, 2, resultLines(t, r.stdout))
	assert.Equal(t, []string{"I will wait for it.", modelserver.FinalText}, r.texts())
	require.NotNil(t, r.result)
	assert.Equal(t, KindResult, r.events[len(r.events)-1].Kind)
	assert.Len(t, ofKind(r.events, KindResult), 1)
	assert.Equal(t, modelserver.FinalText, r.result.Text)
	assert.Equal(t, 3, r.result.NumTurns, "two model calls in the first turn, one in the second")
	assert.Equal(t, int64(30), r.result.Usage.InputTokens, "three requests of 10 input tokens")
}

// A claude waiting for its model does no work of its own meanwhile: its
// runtime collects no garbage on a timer (claudeIdleGC). Left to that
// timer, a claude whose model answered 4 s late collected its heap four
// or five times while it waited (a full collection among them), one
// answered at once not at all: some 40 ms of CPU time for each second of
// waiting, and under spawn, whose relay and sandbox every request passes
// through, each wait is a little longer than a bare claude's.
func TestAClaudeWaitingForItsModelCollectsNoGarbageMeanwhile(t *testing.T) {
	t.Parallel()
	e := newClaudeE2E(t, modelserver.Scenario{Anthropic: []modelserver.Script{
		{Match: "answer late", Turns: []modelserver.Turn{{Delay: modelserver.Duration(4 * time.Second), Text: "Late."}}},
		{Match: "answer at once", Turns: []modelserver.Turn{{Text: "At once."}}},
	}})
	// The runtime logs each collection on stderr: "... => EdenCollection".
	logGC := func(c *Command) { c.Env = append(c.Env, "BUN_JSC_logGC=1") }
	collection := regexp.MustCompile(`=> \w+Collection`)
	now := e.run(&Claude{MaxRetries: 0}, Turn{Prompt: "answer at once"}, "", logGC)
	late := e.run(&Claude{MaxRetries: 0}, Turn{Prompt: "answer late"}, "", logGC)

	// # both turns were answered
	assert.Equal(t, 0, now.code)
	assert.Equal(t, 0, late.code)
	assert.Equal(t, []string{"At once."}, now.texts())
	assert.Equal(t, []string{"Late."}, late.texts())

	// # the late answer's wait cost no collections
	nowGC, lateGC := len(collection.FindAllString(now.stderr, -1)), len(collection.FindAllString(late.stderr, -1))
	assert.LessOrEqual(t, lateGC, nowGC+1, "collections while waiting 4 s for the model: %d, with an answer at once: %d", lateGC, nowGC)
}
