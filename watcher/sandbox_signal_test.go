package watcher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// inBwrap is an agent whose commands run under bubblewrap in the
// namespaces spawn runs them in (a pid namespace and a session of their
// own, dying with their parent). The host's files are shown as they are
// (the agent CLI and its home may be anywhere, /tmp included) and the
// network is shared (the scripted model listens on the host's loopback):
// what is tested is how signals reach the agent, not what it may touch.
type inBwrap struct{ runners.Agent }

// bwrapArgs are inBwrap's namespaces and mounts.
func bwrapArgs() []string {
	return []string{"--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
}

func (a inBwrap) Command(t runners.Turn) (runners.Command, error) {
	cmd, err := a.Agent.Command(t)
	if err != nil {
		return cmd, err
	}
	args := append(bwrapArgs(), "--chdir", cmd.Dir, "--", cmd.Path)
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
	testenv.Bubblewrap(t, append(bwrapArgs(), "--")...)
	srv := testenv.ModelServer(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "b1", Name: "Bash", Input: map[string]any{"command": "sleep 3171", "description": "wait"}}}},
	}}}})
	repo := testenv.Repo(t)
	env := testenv.Env(t, srv.ClaudeEnv()...)
	out, err := Run(context.Background(), inBwrap{&runners.Claude{Bin: claude}}, runners.Turn{Prompt: "wait", Dir: repo}, Options{
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
