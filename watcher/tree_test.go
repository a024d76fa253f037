package watcher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/runners"
)

func bashCall(id, command string) modelserver.ToolCall {
	return modelserver.ToolCall{ID: id, Name: "Bash", Input: map[string]any{"command": command, "description": "run " + command}}
}

// containing matches a command line holding s.
func containing(s string) func(string) bool {
	return func(c string) bool { return strings.Contains(c, s) }
}

// A coder that crashes (here: SIGKILL) while its Bash tool runs a command
// takes the command with it. claude runs Bash commands in sessions of their
// own, so once claude is gone the shell and the command are orphans: only a
// subreaper still knows them.
func TestCoderKilledMidCommandLeavesNoCommandBehind(t *testing.T) {
	claude := testenv.Claude(t)
	const marker = "sleep 3001"
	testenv.KillAtCleanup(t, containing(marker))
	srv := testenv.ModelServer(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{bashCall("s1", marker)}},
	}}}})

	c := &runners.Claude{Bin: claude, AllowedTools: []string{"Bash(sleep:*)"}}
	turn := runners.Turn{Prompt: "wait a while", Dir: testenv.Repo(t)}
	opts := Options{
		Env:          testenv.Env(t, srv.ClaudeEnv()...),
		IdleTimeout:  2 * time.Minute,
		TotalTimeout: 3 * time.Minute,
		Grace:        time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // a test that fails early stops the agent
	type result struct {
		out Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := Run(ctx, c, turn, opts)
		done <- result{out, err}
	}()

	// The command runs: find it, and the claude above it.
	var sleeper []int
	require.Eventually(t, func() bool {
		sleeper = testenv.Processes(t, func(c string) bool { return strings.HasPrefix(c, marker) })
		return len(sleeper) > 0
	}, 2*time.Minute, 20*time.Millisecond, "claude never ran %q", marker)
	agent := testenv.Ancestor(t, sleeper[0], func(c string) bool { return strings.HasPrefix(c, claude) })
	require.NotZero(t, agent, "claude is an ancestor of its Bash command")

	require.NoError(t, syscall.Kill(agent, syscall.SIGKILL))
	res := <-done
	require.NoError(t, res.err)
	out := res.out
	assert.Equal(t, agent, out.AgentPid)
	assert.Equal(t, 128+int(syscall.SIGKILL), out.ExitCode)
	assert.Nil(t, out.Result, "a killed agent has no result")
	assert.Empty(t, out.Stopped, "the agent died by itself; the watcher stopped nothing")
	testenv.AwaitGone(t, "the Bash command of the killed claude", containing(marker))
	testenv.AssertGroupGone(t, out.Pid)
}

// Cancelling a turn while the coder's Bash command runs stops the coder
// and the command, though the command runs in a session of its own.
func TestCancelledCoderLeavesNoCommandBehind(t *testing.T) {
	claude := testenv.Claude(t)
	const marker = "sleep 3002"
	testenv.KillAtCleanup(t, containing(marker))
	srv := testenv.ModelServer(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{bashCall("s2", marker)}},
	}}}})

	// Cancelled once the command runs.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan bool, 1)
	go func() {
		defer cancel()
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
			if len(testenv.Processes(t, func(c string) bool { return strings.HasPrefix(c, marker) })) > 0 {
				ran <- true
				return
			}
		}
		ran <- false
	}()
	out, err := Run(ctx, &runners.Claude{Bin: claude, AllowedTools: []string{"Bash(sleep:*)"}},
		runners.Turn{Prompt: "wait a while", Dir: testenv.Repo(t)},
		Options{
			Env:          testenv.Env(t, srv.ClaudeEnv()...),
			IdleTimeout:  2 * time.Minute,
			TotalTimeout: 3 * time.Minute,
			Grace:        time.Second,
		})
	require.NoError(t, err)
	require.True(t, <-ran, "claude ran %q before the turn was cancelled", marker)
	assert.Equal(t, StopCancelled, out.Stopped)
	testenv.AwaitGone(t, "the Bash command of the cancelled claude", containing(marker))
	testenv.AssertGroupGone(t, out.Pid)
}

// A coder that finishes normally but left a daemon behind (a Bash command
// that detached itself into a session of its own) does not leave it
// running: nothing an agent started outlives its turn.
func TestDaemonStartedByTheCoderDiesWithTheTurn(t *testing.T) {
	claude := testenv.Claude(t)
	const marker = "sleep 4242"
	testenv.KillAtCleanup(t, containing(marker))
	// claude refuses to run setsid itself (it "cannot be statically
	// analyzed"); make runs it through a shell, as a build step would, and
	// returns once the daemon runs.
	repo := testenv.Repo(t)
	makefile := "daemon:\n\tsetsid " + marker + " >/dev/null 2>&1 & until grep -qs 4242 /proc/$$!/cmdline; do sleep 0.01; done\n"
	require.NoError(t, os.WriteFile(filepath.Join(repo, "Makefile"), []byte(makefile), 0o644))
	srv := testenv.ModelServer(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{bashCall("d1", "make daemon")}},
		{Text: "The daemon runs."},
	}}}})

	c := &runners.Claude{Bin: claude, AllowedTools: []string{"Bash(make:*)"}}
	var daemonRan bool
	out, err := Run(context.Background(), c, runners.Turn{Prompt: "start a daemon", Dir: repo}, Options{
		Env:          testenv.Env(t, srv.ClaudeEnv()...),
		IdleTimeout:  2 * time.Minute,
		TotalTimeout: 3 * time.Minute,
		Grace:        time.Second,
		OnEvent: func(ev runners.Event) StopReason {
			// The model's closing text comes after make returned: the
			// daemon runs by then.
			if ev.Kind == runners.KindText && strings.Contains(ev.Text, "The daemon runs") {
				daemonRan = len(testenv.Processes(t, func(c string) bool { return strings.HasPrefix(c, marker) })) > 0
			}
			return ""
		},
	})
	require.NoError(t, err)
	require.NotNil(t, out.Result, "claude finished its turn")
	assert.False(t, out.Result.IsError)
	assert.Equal(t, 0, out.ExitCode)
	assert.Empty(t, out.Stopped)
	assert.True(t, daemonRan, "the daemon was running while claude worked")
	testenv.AwaitGone(t, "the daemon the coder started", containing(marker))
	testenv.AssertGroupGone(t, out.Pid)
}

// randomText returns at least n bytes of words that do not repeat: gemini
// stops a reply that repeats itself ("Loop detected").
func randomText(n int) string {
	rnd := rand.New(rand.NewPCG(1, 2))
	var text strings.Builder
	for text.Len() < n {
		fmt.Fprintf(&text, "%016x ", rnd.Uint64())
	}
	return text.String()
}

// gemini's stdout, when it is a pipe, is cut at 128 KiB: node exits before
// its pending pipe writes drain. The watcher gives it a regular file, so a
// review stream of more than 1 MiB arrives whole, result event included.
func TestReviewStreamOverOneMebibyteKeepsItsResult(t *testing.T) {
	gemini := testenv.Gemini(t)
	answer := randomText(1 << 20)
	srv := testenv.ModelServer(t, modelserver.Scenario{Gemini: []modelserver.Script{{Turns: []modelserver.Turn{
		{Text: answer},
	}}}})
	genv, err := srv.GeminiEnv(t.TempDir())
	require.NoError(t, err)

	var streamed int
	var transcript countingWriter
	out, err := Run(context.Background(), &runners.Gemini{Bin: gemini, Model: "gemini-2.5-pro"},
		runners.Turn{Prompt: "review", Dir: testenv.Repo(t)},
		Options{
			Env:          testenv.Env(t, genv...),
			Transcript:   &transcript,
			IdleTimeout:  2 * time.Minute,
			TotalTimeout: 3 * time.Minute,
			OnEvent: func(ev runners.Event) StopReason {
				if ev.Kind == runners.KindText {
					streamed += len(ev.Text)
				}
				return ""
			},
		})
	require.NoError(t, err)
	assert.Equal(t, 0, out.ExitCode)
	assert.NoError(t, out.WatchErr)
	assert.Greater(t, transcript.n, 1<<20, "the stream is over 1 MiB")
	require.NotNil(t, out.Result, "the result event after %d bytes of stream was lost", transcript.n)
	assert.False(t, out.Result.IsError)
	assert.Equal(t, answer, out.Result.Text)
	assert.Equal(t, len(answer), streamed)
	assert.Equal(t, "gemini", filepath.Base(out.Argv[0]))
}

// claude too loses the tail of a long stream written to a pipe, when the
// reader is behind as it exits (measured: 63 KB to 2.6 MB of 6.3 MB, exit
// code 0). Through a file, a 2 MiB answer arrives whole.
func TestCoderStreamOverOneMebibyteKeepsItsResult(t *testing.T) {
	claude := testenv.Claude(t)
	answer := randomText(2 << 20)
	srv := testenv.ModelServer(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{{Text: answer}}}}})

	var transcript countingWriter
	out, err := Run(context.Background(), &runners.Claude{Bin: claude}, runners.Turn{Prompt: "say it", Dir: testenv.Repo(t)}, Options{
		Env:          testenv.Env(t, srv.ClaudeEnv()...),
		Transcript:   &transcript,
		IdleTimeout:  2 * time.Minute,
		TotalTimeout: 3 * time.Minute,
	})
	require.NoError(t, err)
	assert.Equal(t, 0, out.ExitCode)
	assert.NoError(t, out.WatchErr)
	assert.Greater(t, transcript.n, 2*len(answer), "the answer is in the stream twice: the message and the result")
	require.NotNil(t, out.Result, "the result event after %d bytes of stream was lost", transcript.n)
	assert.False(t, out.Result.IsError)
	assert.Equal(t, answer, out.Result.Text)
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int }

func (w *countingWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	return len(b), nil
}
