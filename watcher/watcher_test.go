package watcher

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// The real gemini, driven through runners.Gemini: the prompt arrives on
// stdin, the read-only tool round trip runs, the stream is parsed into a
// successful result carrying the model's answer.
func TestGeminiReviewerRunsUnderTheWatcher(t *testing.T) {
	gemini := testenv.Gemini(t)
	srv := testenv.ModelServer(t, modelserver.Scenario{Gemini: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "r1", Name: "read_file", Input: map[string]any{"file_path": "{{workdir}}/main.go"}}}},
		{Text: `{"verdict":"approve","summary":"fine","findings":[]}`},
	}}}})
	home := t.TempDir()
	genv, err := srv.GeminiEnv(home)
	require.NoError(t, err)
	repo := testenv.Repo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644))

	g := &runners.Gemini{Bin: gemini, Model: "gemini-2.5-pro"}
	var events []runners.Event
	var transcript bytes.Buffer
	prompt := "Review the change. " + strings.Repeat("x", 200<<10) // larger than one argv string may be
	out, err := Run(context.Background(), g, runners.Turn{Prompt: prompt, Dir: repo}, Options{
		Env:          testenv.Env(t, genv...),
		Transcript:   &transcript,
		IdleTimeout:  time.Minute,
		TotalTimeout: 2 * time.Minute,
		OnEvent:      func(ev runners.Event) StopReason { events = append(events, ev); return "" },
	})
	require.NoError(t, err)
	assert.Empty(t, out.Stopped)
	assert.Equal(t, 0, out.ExitCode)
	require.NotNil(t, out.Init)
	assert.NotEmpty(t, out.Init.SessionID)
	require.NotNil(t, out.Result, "transcript:\n%s", transcript.String())
	assert.False(t, out.Result.IsError)
	assert.Equal(t, `{"verdict":"approve","summary":"fine","findings":[]}`, out.Result.Text)
	assert.Equal(t, "gemini", filepath.Base(out.Argv[0]))

	var tools []string
	for _, ev := range events {
		if ev.Kind == runners.KindToolUse {
			tools = append(tools, ev.ToolUse.Name)
		}
	}
	assert.Equal(t, []string{"read_file"}, tools)

	// The model saw the whole prompt, and the file's content came back.
	var sawPrompt, sawFile bool
	for _, req := range srv.Requests() {
		for _, txt := range req.UserTexts() {
			sawPrompt = sawPrompt || strings.Contains(txt, prompt)
		}
		for _, tr := range req.ToolResults() {
			sawFile = sawFile || (tr.ID == "r1" && strings.Contains(tr.Content, "package main"))
		}
	}
	assert.True(t, sawPrompt, "the 200 KiB prompt reached the model whole")
	assert.True(t, sawFile)
}

// A model that never answers leaves claude silent: the idle timer fires
// without any output arriving, and the whole process group is gone after.
func TestIdleTimeoutFiresOnSilence(t *testing.T) {
	claude := testenv.Claude(t)
	srv := testenv.ModelServer(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{{Hang: true}}}}})
	repo := testenv.Repo(t)

	c := &runners.Claude{Bin: claude}
	start := time.Now()
	out, err := Run(context.Background(), c, runners.Turn{Prompt: "hello", Dir: repo}, Options{
		Env:         testenv.Env(t, srv.ClaudeEnv()...),
		IdleTimeout: 3 * time.Second,
		Grace:       time.Second,
	})
	require.NoError(t, err)
	elapsed := time.Since(start)
	assert.Equal(t, StopIdleTimeout, out.Stopped)
	assert.Nil(t, out.Result, "a killed agent has no result")
	assert.Less(t, elapsed, 3*time.Second+3*time.Second+5*time.Second, "stopped within idle timeout + grace")
	// No process of the agent's group survives.
	testenv.AssertGroupGone(t, out.Pid)
}

func TestTranscriptsAreRedactedLineByLine(t *testing.T) {
	var buf bytes.Buffer
	red := observability.NewRedactor([]string{"X_TOKEN=supersecret-123"})
	tee := &lineTee{w: &buf, red: red}
	// The secret arrives split across two writes.
	_, _ = tee.Write([]byte(`{"a":"supers`))
	_, _ = tee.Write([]byte("ecret-123\"}\n{\"b\":1}"))
	tee.flush()
	assert.Equal(t, "{\"a\":\"[REDACTED]\"}\n{\"b\":1}", buf.String())
}

func TestMergeEnvOverrides(t *testing.T) {
	got := mergeEnv([]string{"A=1", "B=2", "C=3"}, []string{"B=20", "D=4"})
	assert.Equal(t, []string{"A=1", "C=3", "B=20", "D=4"}, got)
}

// gemini relaunches itself as a child node process unless told not to: the
// watcher starts it in its own group and kills the whole tree on silence.
func TestGeminiHangIsKilledWithItsTree(t *testing.T) {
	gemini := testenv.Gemini(t)
	srv := testenv.ModelServer(t, modelserver.Scenario{Gemini: []modelserver.Script{{Turns: []modelserver.Turn{{Hang: true}}}}})
	genv, err := srv.GeminiEnv(t.TempDir())
	require.NoError(t, err)

	out, err := Run(context.Background(), &runners.Gemini{Bin: gemini, Model: "gemini-2.5-pro"},
		runners.Turn{Prompt: "review", Dir: testenv.Repo(t)},
		// The idle timeout leaves gemini time to start and ask (node's
		// start-up takes seconds on a loaded machine): the hang it is to
		// catch is the model's, after the request.
		Options{Env: testenv.Env(t, genv...), IdleTimeout: 10 * time.Second, Grace: time.Second})
	require.NoError(t, err)
	assert.Equal(t, StopIdleTimeout, out.Stopped)
	assert.Nil(t, out.Result)
	testenv.AssertGroupGone(t, out.Pid)
}

// A budget stops the agent gracefully: SIGINT first, so claude can write
// its result, and Stopped names the budget.
func TestOnEventStopStopsTheAgent(t *testing.T) {
	claude := testenv.Claude(t)
	srv := testenv.ModelServer(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Text: "first"},
	}}}})
	out, err := Run(context.Background(), &runners.Claude{Bin: claude}, runners.Turn{Prompt: "hello", Dir: testenv.Repo(t)}, Options{
		Env:   testenv.Env(t, srv.ClaudeEnv()...),
		Grace: 2 * time.Second,
		OnEvent: func(ev runners.Event) StopReason {
			if ev.Kind == runners.KindText {
				return StopMaxTurns
			}
			return ""
		},
	})
	require.NoError(t, err)
	assert.Equal(t, StopMaxTurns, out.Stopped)
	testenv.AssertGroupGone(t, out.Pid)
}
