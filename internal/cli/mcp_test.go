package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/mcpserver"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// mcpScenario scripts the coders of the MCP tests, told apart by their
// task: one writes a file and takes its time, one writes a file and then
// hangs until it is stopped.
var (
	notesScript = modelserver.Script{Match: "write notes for the host", Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "n1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/notes.txt", "content": "notes\n"}}}},
		{Delay: modelserver.Duration(2 * time.Second), Text: "Wrote the notes."},
	}}
	stopScript = modelserver.Script{Match: "work until stopped", Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "h1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/partial.txt", "content": "partial\n"}}}},
		{Hang: true},
	}}
	mcpScenario = modelserver.Scenario{Anthropic: []modelserver.Script{notesScript, stopScript}}
)

// mcpEnv starts the scripted model server and returns the environment of
// a spawn that stands in for the real one (this test binary, see
// TestMain) with the real claude talking to it.
func mcpEnv(t *testing.T, sc modelserver.Scenario, repo string) ([]string, *modelserver.Server) {
	t.Helper()
	claude := testenv.Claude(t)
	srv := testenv.ModelServer(t, sc)
	env := testenv.Env(t, append([]string{"SPAWN_TEST_BE_SPAWN=1", "SPAWN_CLAUDE_COMMAND=" + claude}, srv.ClaudeEnv()...)...)
	// The detached runs are this test's processes too: none outlives it.
	testenv.KillAtCleanup(t, func(c string) bool { return strings.Contains(c, "--repo="+repo+" ") })
	return env, srv
}

// mcpClient connects a client to an in-process spawn MCP server working
// on repo, and returns it with the progress notifications it got.
func mcpClient(t *testing.T, env []string, repo string) (*mcp.ClientSession, *progressLog) {
	t.Helper()
	d := &deps{io: IO{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &testenv.SyncBuffer{}}, env: env}
	opts := d.mcpOptions(repo)
	opts.Poll, opts.ProgressEvery = 50*time.Millisecond, 200*time.Millisecond
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(opts).Connect(ctx, st, nil)
	require.NoError(t, err)
	progress := &progressLog{}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress.add(req.Params)
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, cs.Close())
		assert.NoError(t, ss.Wait())
	})
	return cs, progress
}

// progressLog collects progress notifications.
type progressLog struct {
	mu    sync.Mutex
	notes []mcp.ProgressNotificationParams
}

func (p *progressLog) add(n *mcp.ProgressNotificationParams) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, *n)
}

func (p *progressLog) all() []mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.notes)
}

// toolDone reports whether the model server saw the result of tool call
// id: the agent ran it.
func toolDone(srv *modelserver.Server, id string) bool {
	for _, req := range srv.Requests() {
		for _, tr := range req.ToolResults() {
			if tr.ID == id {
				return true
			}
		}
	}
	return false
}

// call calls a tool, fails the test on a protocol error, and decodes the
// tool's answer into out (when not nil). It returns the result.
func call(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err, params.Name)
	if out != nil {
		require.False(t, res.IsError, "%s: %s", params.Name, resultText(res))
		require.NoError(t, json.Unmarshal([]byte(resultText(res)), out), resultText(res))
	}
	return res
}

// resultText is a tool result's text.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// A host drives a run over MCP: it lists the tools and their schemas,
// starts a run and gets its id at once, looks at its status, waits for it
// with progress notifications, reads its result; it stops another run
// (whose work stays on its branch); a new server (the host restarted)
// lists both; bad input is a tool error that says what is wrong.
func TestMCPHostDrivesRuns(t *testing.T) {
	repo := testenv.Repo(t)
	env, srv := mcpEnv(t, mcpScenario, repo)
	cs, progress := mcpClient(t, env, repo)

	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		assert.NotNil(t, tool.OutputSchema, tool.Name)
	}
	assert.ElementsMatch(t, []string{"spawn_start", "spawn_status", "spawn_wait", "spawn_result", "spawn_cancel", "spawn_list", "spawn_send", "spawn_run"}, names)
	i := slices.Index(names, "spawn_start")
	schema, err := json.Marshal(tools.Tools[i].InputSchema)
	require.NoError(t, err)
	assert.Contains(t, string(schema), `"required":["task"]`)
	assert.Contains(t, string(schema), `"mode":{"description":"solo (coder only)`)

	// Start: the id comes back at once, long before the run ends.
	began := time.Now()
	var started mcpserver.Started
	call(t, cs, &mcp.CallToolParams{Name: "spawn_start", Arguments: map[string]any{"task": "write notes for the host", "mode": "solo", "branch": "spawn/notes"}}, &started)
	assert.Regexp(t, `^\d{8}-\d{6}-[0-9a-f]{4}$`, started.ID)
	assert.Less(t, time.Since(began), 30*time.Second)

	var st mcpserver.Status
	call(t, cs, &mcp.CallToolParams{Name: "spawn_status", Arguments: map[string]any{"id": started.ID}}, &st)
	assert.Equal(t, started.ID, st.ID)
	assert.Equal(t, "running", st.State)
	assert.False(t, st.Done)
	assert.Equal(t, "write notes for the host", st.Task)

	// Wait, with a progress token: notifications come while it waits, and
	// the answer is the result.
	var waited mcpserver.Waited
	params := &mcp.CallToolParams{Name: "spawn_wait", Arguments: map[string]any{"id": started.ID, "seconds": 120}}
	params.SetProgressToken("wait-1")
	call(t, cs, params, &waited)
	require.True(t, waited.Done, "%+v", waited.Status)
	require.NotNil(t, waited.Result)
	notes := progress.all()
	require.NotEmpty(t, notes, "spawn_wait sent progress notifications")
	assert.Equal(t, "wait-1", notes[0].ProgressToken)
	assert.Contains(t, notes[0].Message, "run "+started.ID)

	var res mcpserver.Result
	call(t, cs, &mcp.CallToolParams{Name: "spawn_result", Arguments: map[string]any{"id": started.ID}}, &res)
	assert.Equal(t, "succeeded", res.Status)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "spawn/notes", res.Branch)
	assert.NotEmpty(t, res.Commits)
	assert.FileExists(t, res.Record)
	assert.Equal(t, *waited.Result, res)
	assert.Equal(t, "notes", testenv.Git(t, repo, "show", "spawn/notes:notes.txt"))

	// Cancel: a graceful stop; the work is committed on the branch.
	call(t, cs, &mcp.CallToolParams{Name: "spawn_start", Arguments: map[string]any{"task": "work until stopped", "mode": "solo", "branch": "spawn/stopped", "repo": repo}}, &started)
	stopped := started.ID
	require.Eventually(t, func() bool { return toolDone(srv, "h1") }, agentWait, 50*time.Millisecond, "the coder wrote its file")
	call(t, cs, &mcp.CallToolParams{Name: "spawn_status", Arguments: map[string]any{"id": stopped}}, &st)
	assert.Equal(t, "Write partial.txt", st.LastAction)
	assert.Equal(t, "coder", st.Phase)
	assert.NotEmpty(t, st.Events)
	var cancelled mcpserver.Waited
	call(t, cs, &mcp.CallToolParams{Name: "spawn_cancel", Arguments: map[string]any{"id": stopped}}, &cancelled)
	require.True(t, cancelled.Done)
	assert.Equal(t, "interrupted", cancelled.Result.Status)
	assert.Equal(t, 130, cancelled.Result.ExitCode)
	assert.Equal(t, "partial", testenv.Git(t, repo, "show", "spawn/stopped:partial.txt"))

	// Bad input is a tool error saying what is wrong.
	for _, bad := range []struct {
		params *mcp.CallToolParams
		says   string
	}{
		{&mcp.CallToolParams{Name: "spawn_status", Arguments: map[string]any{"id": "19990101"}}, "19990101"},
		{&mcp.CallToolParams{Name: "spawn_start", Arguments: map[string]any{"task": "  "}}, `"task" is empty`},
		{&mcp.CallToolParams{Name: "spawn_start", Arguments: map[string]any{"task": "x", "mode": "nonsense"}}, "nonsense"},
		{&mcp.CallToolParams{Name: "spawn_start", Arguments: map[string]any{"task": "x", "idle_timeout": "soon"}}, `"idle_timeout" is "soon"`},
		{&mcp.CallToolParams{Name: "spawn_wait", Arguments: map[string]any{"id": stopped, "seconds": -1}}, `"seconds" is -1`},
		{&mcp.CallToolParams{Name: "spawn_cancel", Arguments: map[string]any{"id": stopped}}, "is not running"},
		{&mcp.CallToolParams{Name: "spawn_send", Arguments: map[string]any{"id": stopped, "text": "hi"}}, stopped},
		{&mcp.CallToolParams{Name: "spawn_status", Arguments: map[string]any{}}, "id"},
		{&mcp.CallToolParams{Name: "spawn_list", Arguments: map[string]any{"repo": t.TempDir()}}, "not in a git repository"},
	} {
		res := call(t, cs, bad.params, nil)
		assert.True(t, res.IsError, "%s %v: %s", bad.params.Name, bad.params.Arguments, resultText(res))
		assert.Contains(t, resultText(res), bad.says, bad.params.Name)
	}

	// The host restarts: a new server finds both runs.
	cs2, _ := mcpClient(t, env, repo)
	var listed mcpserver.Listed
	call(t, cs2, &mcp.CallToolParams{Name: "spawn_list", Arguments: map[string]any{}}, &listed)
	var ids []string
	for _, r := range listed.Runs {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []string{stopped, res.ID}, ids)
	assert.Equal(t, "interrupted", listed.Runs[0].Status)
}

// spawn mcp as a real process on stdio: the host's client speaks JSON-RPC
// over its stdin and stdout (nothing else is printed there), a run it
// starts goes on after the server exits, and spawn_run blocks until the
// run ends, with progress notifications.
func TestMCPStdioServer(t *testing.T) {
	repo := testenv.Repo(t)
	env, _ := mcpEnv(t, modelserver.Scenario{Anthropic: []modelserver.Script{notesScript}}, repo)
	ctx := context.Background()
	progress := &progressLog{}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress.add(req.Params) },
	})
	cmd := exec.Command(os.Args[0], "mcp")
	cmd.Dir, cmd.Env, cmd.Stderr = repo, env, &testenv.SyncBuffer{}
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)

	var res mcpserver.Result
	params := &mcp.CallToolParams{Name: "spawn_run", Arguments: map[string]any{"task": "write notes for the host", "mode": "solo"}}
	params.SetProgressToken(7)
	call(t, cs, params, &res)
	assert.Equal(t, "succeeded", res.Status)
	assert.NotEmpty(t, res.Commits)
	assert.Equal(t, filepath.Join(repo, ".spawn", "runs", res.ID, "record.json"), res.Record)
	assert.NotEmpty(t, progress.all(), "spawn_run sent progress notifications")

	// spawn_status's latency, as a host sees it over stdio.
	const n = 20
	began := time.Now()
	for range n {
		call(t, cs, &mcp.CallToolParams{Name: "spawn_status", Arguments: map[string]any{"id": res.ID}}, &mcpserver.Status{})
	}
	t.Logf("spawn_status over stdio: %v per call (mean of %d)", time.Since(began)/n, n)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	t.Logf("spawn_result of a solo run: %d bytes (~%d tokens)", len(b), len(b)/4)
	require.NoError(t, cs.Close())
}
