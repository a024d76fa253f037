package modelserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agentBinary returns the pinned real CLI installed by agents/package.json.
// When it is missing the test is skipped, unless CI=true: there the
// binaries must be installed and a missing one fails the test.
func agentBinary(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "agents", "node_modules", ".bin", name))
	require.NoError(t, err)
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed at %s (run npm ci in agents/): %v", name, path, err)
		}
		t.Skipf("%s not installed at %s (run npm ci in agents/)", name, path)
	}
	return path
}

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// gitRepo makes a repository with one commit and returns its real path.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "config", "user.name", "Test")
	git(t, dir, "config", "user.email", "test@example.com")
	git(t, dir, "config", "commit.gpgsign", "false")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# test\n"), 0o644))
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// agentEnv is the small environment an agent starts from: PATH (node,
// git), a fresh TMPDIR and the given entries (later entries win).
func agentEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir(), "LANG=C.UTF-8"}
	return append(env, extra...)
}

// runAgent runs cmd with a 60 s limit and returns its stdout lines decoded
// as JSON objects.
func runAgent(t *testing.T, bin, dir, stdin string, env []string, args ...string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s ran in %v", filepath.Base(bin), time.Since(start).Round(time.Millisecond))
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	var events []map[string]any
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev map[string]any
		require.NoError(t, json.Unmarshal(line, &ev), "stdout line %q", line)
		events = append(events, ev)
	}
	require.NoError(t, sc.Err())
	return events
}

// lastResult returns the last event of type "result".
func lastResult(t *testing.T, events []map[string]any) map[string]any {
	t.Helper()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i]["type"] == "result" {
			return events[i]
		}
	}
	t.Fatalf("no result event in %d events", len(events))
	return nil
}

func TestClaudeEndToEnd(t *testing.T) {
	t.Parallel()
	bin := agentBinary(t, "claude")
	repo := gitRepo(t)
	sc := Scenario{Anthropic: []Script{{Match: "create hello.txt", Turns: []Turn{
		{Text: "I'll create the file.", Tools: []ToolCall{{ID: "toolu_e2e_write", Name: "Write",
			Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}}}},
		{Tools: []ToolCall{{ID: "toolu_e2e_commit", Name: "Bash",
			Input: map[string]any{"command": "git add -A && git commit -m msg", "description": "Commit changes"}}}},
		{Text: "FINAL: committed."},
	}}}}
	srv := startServer(t, sc)

	env := agentEnv(t, append(srv.ClaudeEnv(), "HOME="+t.TempDir(), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")...)
	events := runAgent(t, bin, repo, "create hello.txt and commit it", env,
		"-p", "--output-format", "stream-json", "--verbose",
		"--permission-mode", "acceptEdits", "--allowedTools", "Bash(git:*)")

	res := lastResult(t, events)
	assert.Equal(t, false, res["is_error"], "result: %v", res)
	assert.Equal(t, "FINAL: committed.", res["result"])
	assert.Empty(t, res["permission_denials"])

	// # the commit is in the repository
	assert.Equal(t, "msg", git(t, repo, "log", "-1", "--format=%s"))
	assert.Equal(t, "hello.txt", git(t, repo, "show", "--name-only", "--format=", "HEAD"))
	assert.Equal(t, "hi", git(t, repo, "show", "HEAD:hello.txt"))

	// # the server saw the three main turns and both tool results
	var main []Request
	for _, r := range srv.Requests() {
		if r.Main {
			main = append(main, r)
		}
	}
	require.Len(t, main, 3)
	for i, r := range main {
		assert.Equal(t, APIAnthropic, r.API)
		assert.Equal(t, i, r.Turn)
		assert.NotEmpty(t, r.SessionID)
		assert.Contains(t, r.UserTexts(), "create hello.txt and commit it")
	}
	results := main[2].ToolResults()
	require.Len(t, results, 2)
	assert.Equal(t, "toolu_e2e_write", results[0].ID)
	assert.Equal(t, "Write", results[0].Name)
	assert.False(t, results[0].IsError, results[0].Content)
	assert.Equal(t, "toolu_e2e_commit", results[1].ID)
	assert.Equal(t, "Bash", results[1].Name)
	assert.False(t, results[1].IsError, results[1].Content)
	assert.Contains(t, results[1].Content, "msg")
}

func TestGeminiEndToEnd(t *testing.T) {
	t.Parallel()
	bin := agentBinary(t, "gemini")
	repo := gitRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "seed.txt"), []byte("seed content line\n"), 0o644))
	sc := Scenario{Gemini: []Script{{Match: "review the repo", Turns: []Turn{
		{Text: "Let me read the file.", Tools: []ToolCall{{ID: "call_e2e_read", Name: "read_file",
			Input: map[string]any{"file_path": "{{workdir}}/seed.txt"}}}},
		{Text: "LGTM. APPROVED: no issues found."},
	}}}}
	srv := startServer(t, sc)
	genv, err := srv.GeminiEnv(t.TempDir())
	require.NoError(t, err)

	env := agentEnv(t, append(genv, "GEMINI_CLI_NO_RELAUNCH=true")...)
	events := runAgent(t, bin, repo, "", env,
		"-m", "gemini-2.5-pro", "--output-format", "stream-json", "-p", "review the repo")

	res := lastResult(t, events)
	assert.Equal(t, "success", res["status"], "result: %v", res)
	var said strings.Builder
	var toolResult map[string]any
	for _, ev := range events {
		if ev["type"] == "message" && ev["role"] == "assistant" {
			said.WriteString(ev["content"].(string))
		}
		if ev["type"] == "tool_result" {
			toolResult = ev
		}
	}
	assert.Contains(t, said.String(), "LGTM. APPROVED")
	require.NotNil(t, toolResult, "no tool_result event")
	assert.Equal(t, "success", toolResult["status"])

	var main []Request
	for _, r := range srv.Requests() {
		if r.Main {
			main = append(main, r)
		}
	}
	require.Len(t, main, 2)
	assert.Equal(t, "gemini-2.5-pro", main[0].Model)
	assert.Equal(t, 0, main[0].Turn)
	assert.Equal(t, 1, main[1].Turn)
	results := main[1].ToolResults()
	require.Len(t, results, 1)
	assert.Equal(t, ToolResultSeen{ID: "call_e2e_read", Name: "read_file", Content: "seed content line\n"}, results[0])
}
