package runners

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

var record = flag.Bool("record", false, "rewrite testdata/transcripts/claude-*.stdout.jsonl and codex-*.stdout.jsonl (and the model server's recorded requests) from the real CLI runs of the e2e tests")

// codexModel is a model the pinned codex's catalog knows: it is offered
// apply_patch as a freeform (custom) tool.
const codexModel = "gpt-5.5"

// codexRun is one real codex process run under a scripted model server.
type codexRun struct {
	stdout []byte
	stderr string
	events []Event
	result *Result // the KindResult, nil if none
	err    error   // the process's exit error
}

// codexSeat is a codex adapter for a test: a fresh CODEX_HOME, pointed at srv.
type codexSeat struct {
	t     *testing.T
	codex *Codex
	srv   *modelserver.Server
	repo  string
	home  string   // CODEX_HOME
	env   []string // the environment of every run
	tmp   string   // its TMPDIR
	wrap  []string // argv codex runs under (bwrap ... --), if any
}

func newCodexSeat(t *testing.T, sc modelserver.Scenario, sandbox CodexSandbox) *codexSeat {
	t.Helper()
	bin := testenv.Codex(t)
	srv := testenv.ModelServer(t, sc, modelserver.WithLogf(t.Logf))
	repo, err := filepath.EvalSymlinks(testenv.Repo(t))
	require.NoError(t, err)
	home := t.TempDir()
	env := testenv.Env(t, append(srv.CodexEnv(), "TZ=UTC")...)
	var tmp string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			tmp = v
		}
	}
	return &codexSeat{t: t, srv: srv, repo: repo, home: home, env: env, tmp: tmp, codex: &Codex{
		Bin: bin, Model: codexModel, BaseURL: srv.OpenAIBaseURL(), Home: home, Sandbox: sandbox,
	}}
}

// run runs one turn of the real codex and parses its stdout. name, when
// not empty, is the transcript the run is recorded as with -record.
func (s *codexSeat) run(turn Turn, name string) codexRun {
	t := s.t
	t.Helper()
	turn.Dir = s.repo
	cmd, err := s.codex.Command(turn)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := append(append(append([]string{}, s.wrap...), cmd.Path), cmd.Args...)
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = cmd.Dir
	c.Env = append(s.env, cmd.Env...)
	c.Stdin = strings.NewReader(cmd.Stdin)
	c.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	start := time.Now()
	r := codexRun{err: c.Run()}
	t.Logf("codex ran in %v (rc %d); stderr: %s", time.Since(start).Round(time.Millisecond), c.ProcessState.ExitCode(), stderr.String())
	r.stdout, r.stderr = stdout.Bytes(), stderr.String()
	require.NoError(t, s.codex.Parse(bytes.NewReader(r.stdout), func(e Event) {
		r.events = append(r.events, e)
		if e.Kind == KindResult {
			r.result = e.Result
		}
	}))
	assert.NotContains(t, r.stderr, "WARNING", "codex warned about its setup")
	if *record && name != "" {
		out := s.anonymize(string(r.stdout))
		path := filepath.Join("..", "testdata", "transcripts", "codex-"+name+".stdout.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
	}
	return r
}

// anonymize rewrites the test's paths and port in a recording: the working
// directory is /sandbox/work, CODEX_HOME /sandbox/home/.codex, TMPDIR
// /sandbox/tmp, the server 127.0.0.1:PORT.
func (s *codexSeat) anonymize(text string) string {
	return strings.NewReplacer(s.repo, "/sandbox/work", s.home, "/sandbox/home/.codex", s.tmp, "/sandbox/tmp",
		strings.TrimPrefix(s.srv.URL(), "http://"), "127.0.0.1:PORT").Replace(text)
}

// mainRequests returns the server's main requests, in order.
func mainRequests(srv *modelserver.Server) []modelserver.Request {
	var main []modelserver.Request
	for _, r := range srv.Requests() {
		if r.Main {
			main = append(main, r)
		}
	}
	return main
}

// toolResult returns the result the server saw for a call id in its last
// main request.
func toolResultSeen(t *testing.T, srv *modelserver.Server, id string) modelserver.ToolResultSeen {
	t.Helper()
	main := mainRequests(srv)
	require.NotEmpty(t, main)
	for _, r := range main[len(main)-1].ToolResults() {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no result for %s in the last request", id)
	return modelserver.ToolResultSeen{}
}

func TestCodexCoderRunsACommandAndWritesAFileWithApplyPatch(t *testing.T) {
	t.Parallel()
	s := newCodexSeat(t, modelserver.Scenario{OpenAI: []modelserver.Script{{Match: "add hello.txt", Turns: []modelserver.Turn{
		{Text: "Let me look around.", Tools: []modelserver.ToolCall{{ID: "call_status", Name: "exec_command",
			Input: map[string]any{"cmd": "git status --short && ls && echo key=[$OPENAI_API_KEY] plain=[$PLAIN] tokens=$(env | grep -c _TOKEN=)"}}}},
		{Tools: []modelserver.ToolCall{{ID: "call_patch", Name: "apply_patch",
			Input: map[string]any{"input": "*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n"}}}},
		{Tools: []modelserver.ToolCall{{ID: "call_cat", Name: "exec_command", Input: map[string]any{"cmd": "cat hello.txt"}}}},
		{Text: "Added hello.txt."},
	}}}}, CodexWorkspaceWrite)

	s.env = append(s.env, "GH_TOKEN=gh-secret", "PLAIN=plain")
	r := s.run(Turn{Prompt: "add hello.txt"}, "coder")
	require.NoError(t, r.err)

	// # the file is on disk, written by codex's apply_patch
	b, err := os.ReadFile(filepath.Join(s.repo, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello from codex\n", string(b))

	// # the stream says what ran: two commands and one file change, all fine
	require.NotNil(t, r.result)
	assert.False(t, r.result.IsError, r.result.ErrorMessage)
	assert.Equal(t, "Let me look around.\n\nAdded hello.txt.", r.result.Text)
	assert.Equal(t, int64(40), r.result.Usage.InputTokens, "four requests of 10 input tokens")
	var uses []string
	var results []*ToolResult
	for _, e := range r.events {
		switch e.Kind {
		case KindToolUse:
			uses = append(uses, e.ToolUse.Name+" "+string(e.ToolUse.Input))
		case KindToolResult:
			results = append(results, e.ToolResult)
		}
	}
	assert.Equal(t, []string{
		`command_execution {"command":"/bin/bash -lc 'git status --short \u0026\u0026 ls \u0026\u0026 echo key=[$OPENAI_API_KEY] plain=[$PLAIN] tokens=$(env | grep -c _TOKEN=)'"}`,
		`file_change {"changes":[{"path":"` + s.repo + `/hello.txt","kind":"add"}]}`,
		`command_execution {"command":"/bin/bash -lc 'cat hello.txt'"}`,
	}, uses)
	require.Len(t, results, 3)
	for _, tr := range results {
		assert.False(t, tr.IsError, tr.Content.String())
	}
	// # the commands saw the environment without the key and secrets
	assert.Equal(t, "README.md\nkey=[] plain=[plain] tokens=0\n", results[0].Content.String())
	assert.Equal(t, "add "+s.repo+"/hello.txt", results[1].Content.String())
	assert.Equal(t, "hello from codex\n", results[2].Content.String())

	// # codex wrote no bundled skills into its home: nothing for spawn to
	// remove at the run's end
	assert.NoDirExists(t, filepath.Join(s.home, "skills"))

	// # the model saw the command's output and the patch's success
	assert.Contains(t, toolResultSeen(t, s.srv, "call_patch").Content, "Success. Updated the following files:\nA hello.txt")
	assert.Contains(t, toolResultSeen(t, s.srv, "call_cat").Content, "hello from codex")

	// # what codex sent: a POST /v1/responses with the key, streamed, with
	// exec_command and the freeform apply_patch and nothing else
	main := mainRequests(s.srv)
	require.Len(t, main, 4)
	last := main[3]
	assert.Equal(t, "Bearer "+modelserver.APIKey, last.Header.Get("Authorization"))
	var body struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
		Store  bool   `json:"store"`
		Tools  []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(last.Body, &body))
	assert.Equal(t, codexModel, body.Model)
	assert.True(t, body.Stream)
	assert.False(t, body.Store)
	var tools []string
	for _, tl := range body.Tools {
		tools = append(tools, tl.Type+" "+tl.Name)
	}
	assert.Equal(t, []string{"function exec_command", "function write_stdin", "function request_user_input", "custom apply_patch"}, tools)
	if *record {
		headers := map[string]string{}
		for k, v := range last.Header {
			headers[k] = s.anonymize(v[0])
		}
		rec, err := json.Marshal(map[string]any{
			"note":   "Recorded from codex " + PinnedCodex + " by runners' TestCodexCoderRunsACommandAndWritesAFileWithApplyPatch -record.",
			"method": last.Method, "path": last.Path, "headers": headers, "body": json.RawMessage(last.Body),
		})
		require.NoError(t, err)
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, []byte(s.anonymize(string(rec))), "", "  "))
		path := filepath.Join("..", "internal", "modelserver", "testdata", "openai-request-turn3.json")
		require.NoError(t, os.WriteFile(path, append(pretty.Bytes(), '\n'), 0o644))
	}
}

func TestCodexResumedTurnSeesTheFirstTurn(t *testing.T) {
	t.Parallel()
	s := newCodexSeat(t, modelserver.Scenario{OpenAI: []modelserver.Script{
		{Match: "and the second?", Turns: []modelserver.Turn{{Text: "The second answer."}}},
		{Match: "what is the first?", Turns: []modelserver.Turn{{Text: "The first answer."}}},
	}}, CodexReadOnly)

	first := s.run(Turn{Prompt: "what is the first?"}, "text")
	require.NoError(t, first.err)
	require.NotNil(t, first.result)
	require.Equal(t, KindInit, first.events[0].Kind)
	thread := first.events[0].Init.SessionID
	require.NotEmpty(t, thread)
	assert.Equal(t, "The first answer.", first.result.Text)
	assert.Equal(t, thread, first.result.SessionID)

	second := s.run(Turn{Prompt: "and the second?", Resume: thread}, "resume")
	require.NoError(t, second.err)
	require.NotNil(t, second.result)
	assert.False(t, second.result.IsError, second.result.ErrorMessage)
	assert.Equal(t, "The second answer.", second.result.Text)
	assert.Equal(t, thread, second.result.SessionID, "the resumed turn goes on in the same thread")
	assert.True(t, second.result.UsageCumulative)
	assert.Equal(t, int64(20), second.result.Usage.InputTokens, "the thread's two requests")

	// # the server saw the same thread, and the first turn in its history
	main := mainRequests(s.srv)
	require.Len(t, main, 2)
	assert.Equal(t, thread, main[0].SessionID)
	assert.Equal(t, thread, main[1].SessionID)
	assert.Contains(t, main[1].UserTexts(), "what is the first?")
	assert.Contains(t, main[1].UserTexts(), "and the second?")
	assert.Contains(t, string(main[1].Body), "The first answer.")
}

func TestCodexReviewerCannotWrite(t *testing.T) {
	t.Parallel()
	s := newCodexSeat(t, modelserver.Scenario{OpenAI: []modelserver.Script{{Match: "review the change", Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "call_read", Name: "exec_command", Input: map[string]any{"cmd": "cat README.md"}}}},
		{Tools: []modelserver.ToolCall{{ID: "call_patch", Name: "apply_patch",
			Input: map[string]any{"input": "*** Begin Patch\n*** Update File: README.md\n@@\n-# test\n+# owned\n*** End Patch\n"}}}},
		{Tools: []modelserver.ToolCall{{ID: "call_echo", Name: "exec_command", Input: map[string]any{"cmd": "echo owned > owned.txt"}}}},
		{Tools: []modelserver.ToolCall{{ID: "call_escalate", Name: "exec_command", Input: map[string]any{
			"cmd": "echo owned > escalated.txt", "sandbox_permissions": "require_escalated", "justification": "need to write"}}}},
		{Text: `{"verdict": "approve", "summary": "fine", "findings": []}`},
	}}}}, CodexReadOnly)

	r := s.run(Turn{Prompt: "review the change"}, "reviewer_readonly")
	require.NoError(t, r.err)
	require.NotNil(t, r.result)
	assert.False(t, r.result.IsError)
	assert.Contains(t, r.result.Text, `"verdict": "approve"`)

	// # the reviewer read, and wrote nothing
	b, err := os.ReadFile(filepath.Join(s.repo, "README.md"))
	require.NoError(t, err)
	assert.Equal(t, "# test\n", string(b))
	assert.NoFileExists(t, filepath.Join(s.repo, "owned.txt"))
	assert.NoFileExists(t, filepath.Join(s.repo, "escalated.txt"))
	assert.Empty(t, testenv.Git(t, s.repo, "status", "--porcelain"))

	// # each write was refused, and the model was told so
	assert.Contains(t, toolResultSeen(t, s.srv, "call_read").Content, "# test")
	assert.Contains(t, toolResultSeen(t, s.srv, "call_patch").Content, "patch rejected: writing is blocked by read-only sandbox")
	assert.Contains(t, toolResultSeen(t, s.srv, "call_echo").Content, "Read-only file system")
	assert.Contains(t, toolResultSeen(t, s.srv, "call_escalate").Content, "approval policy is Never")
	// # the stream shows the read; the write its sandbox denied shows as a
	// failed command in some runs and not at all in others (codex 0.171.0
	// drops that item 4 times in 6); the refused patch and escalation
	// appear on stderr only
	var commands []string
	failed := map[string]bool{}
	for _, e := range r.events {
		switch e.Kind {
		case KindToolUse:
			assert.Equal(t, CodexToolCommand, e.ToolUse.Name)
			commands = append(commands, string(e.ToolUse.Input))
		case KindToolResult:
			failed[e.ToolResult.ToolUseID] = e.ToolResult.IsError
		}
	}
	require.NotEmpty(t, commands)
	assert.Equal(t, `{"command":"/bin/bash -lc 'cat README.md'"}`, commands[0])
	if len(commands) > 1 {
		assert.Equal(t, []string{`{"command":"/bin/bash -lc 'echo owned \u003e owned.txt'"}`}, commands[1:])
	}
	assert.Len(t, failed, len(commands))
	trueCount := 0
	for _, f := range failed {
		if f {
			trueCount++
		}
	}
	assert.Equal(t, len(commands)-1, trueCount, "every command but the read failed")
	assert.Contains(t, r.stderr, "patch rejected")
}

func TestCodexFailuresAreClassified(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: taken, then released.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String() + "/v1"
	require.NoError(t, ln.Close())

	for _, tc := range []struct {
		name    string
		err     *modelserver.HTTPError
		baseURL string
		kind    FailureKind
		status  int
		resets  time.Duration
	}{
		{name: "err429_usage_limit", err: &modelserver.HTTPError{Status: 429, ResetsIn: modelserver.Duration(3 * time.Hour)},
			kind: FailureUsageLimit, status: 429, resets: 3 * time.Hour},
		{name: "err429_usage_limit_soon", err: &modelserver.HTTPError{Status: 429, ResetsIn: modelserver.Duration(10 * time.Minute)},
			kind: FailureUsageLimit, status: 429, resets: 10 * time.Minute},
		{name: "err429_rate_limit", err: &modelserver.HTTPError{Status: 429, Message: "Rate limit reached for requests"},
			kind: FailureUnavailable, status: 429},
		{name: "err503", err: &modelserver.HTTPError{Status: 503, Message: "The server is overloaded."},
			kind: FailureUnavailable, status: 503},
		{name: "err401", err: &modelserver.HTTPError{Status: 401, Message: "Incorrect API key provided: test-key."},
			kind: FailureAuth, status: 401},
		{name: "err500", err: &modelserver.HTTPError{Status: 500, Message: "The server had an error while processing your request."},
			kind: FailureUnavailable, status: 500},
		{name: "err404_model", err: &modelserver.HTTPError{Status: 404, Message: "The model `gpt-5.5` does not exist or you do not have access to it."},
			kind: FailureUnavailable, status: 404},
		{name: "unreachable", baseURL: closed, kind: FailureUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := modelserver.Scenario{}
			if tc.err != nil {
				sc.OpenAI = []modelserver.Script{{Turns: []modelserver.Turn{{Error: tc.err}}}}
			}
			s := newCodexSeat(t, sc, CodexReadOnly)
			if tc.baseURL != "" {
				s.codex.BaseURL = tc.baseURL
			}
			r := s.run(Turn{Prompt: "review the repo"}, tc.name)
			end := time.Now().UTC()
			var exit *exec.ExitError
			require.ErrorAs(t, r.err, &exit)
			assert.Equal(t, 1, exit.ExitCode())
			require.NotNil(t, r.result, "a failed turn still ends with turn.failed")
			assert.True(t, r.result.IsError)
			assert.Equal(t, tc.status, r.result.APIErrorStatus, r.result.ErrorMessage)

			f := s.codex.Classify(r.result, r.stderr, end)
			assert.Equal(t, tc.kind, f.Kind, f.Message)
			assert.NotEmpty(t, f.Message)
			if tc.resets == 0 {
				assert.True(t, f.ResetAt.IsZero())
				return
			}
			// codex prints the reset to the minute; ResetAt is the end of it
			want := end.Add(tc.resets)
			assert.WithinRange(t, f.ResetAt, want.Add(-time.Minute), want.Add(2*time.Minute), f.Message)
		})
	}
}
