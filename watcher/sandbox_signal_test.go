package watcher

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// inBwrap is an agent whose commands run under bubblewrap as spawn runs
// them (a pid namespace and a session of their own, dying with their
// parent), dir writable, the network shared (the scripted model listens
// on the host's loopback).
type inBwrap struct {
	runners.Agent
	dir string
}

func (a inBwrap) Command(t runners.Turn) (runners.Command, error) {
	cmd, err := a.Agent.Command(t)
	if err != nil {
		return cmd, err
	}
	args := []string{"--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--bind", a.dir, a.dir,
		"--bind", os.Getenv("HOME"), os.Getenv("HOME"), "--chdir", cmd.Dir, "--", cmd.Path}
	cmd.Path, cmd.Args, cmd.Wrapper = "bwrap", append(args, cmd.Args...), true
	return cmd, nil
}

// A budget's graceful stop holds in the sandbox: the SIGINT reaches claude
// past bubblewrap (which dies of it, taking the sandbox along at once), so
// claude ends its turn itself, as it does outside one: it exits 0 (it
// writes no result event then). Before, bubblewrap's death by SIGINT was
// the agent's exit (130), claude killed mid-write.
func TestABudgetStopsASandboxedClaudeGracefully(t *testing.T) {
	claude := testenv.Claude(t)
	if out, err := exec.Command("bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "true").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs bubblewrap: %v: %s", err, out)
		}
		t.Skipf("no bubblewrap here: %v: %s", err, out)
	}
	srv := testenv.ModelServer(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "b1", Name: "Bash", Input: map[string]any{"command": "sleep 3171", "description": "wait"}}}},
	}}}})
	repo := testenv.Repo(t)
	env := testenv.Env(t, srv.ClaudeEnv()...)
	out, err := Run(context.Background(), inBwrap{&runners.Claude{Bin: claude}, repo}, runners.Turn{Prompt: "wait", Dir: repo}, Options{
		Env:   env,
		Grace: 20 * time.Second,
		OnEvent: func(ev runners.Event) StopReason {
			if ev.Kind == runners.KindToolUse {
				return StopMaxTurns
			}
			return ""
		},
	})
	require.NoError(t, err)
	assert.Equal(t, StopMaxTurns, out.Stopped)
	assert.Equal(t, 0, out.ExitCode, "claude's own exit on SIGINT, not bubblewrap's death by it")
	assert.Less(t, out.Duration, 20*time.Second, "claude ended within the grace, not at its end")
	testenv.AssertGroupGone(t, out.Pid)
}
