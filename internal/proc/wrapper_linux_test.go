package proc

import (
	"bufio"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// sandboxed is script run by sh under bubblewrap as spawn runs an agent
// there (its own pid namespace and session, dying with its parent), or
// skips the test where bubblewrap cannot run, except under CI=true.
func sandboxed(t *testing.T, script string) Cmd {
	t.Helper()
	args := []string{"--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--"}
	testenv.Bubblewrap(t, args...)
	return Cmd{Path: "bwrap", Args: append(args, "sh", "-c", script), Env: env(), Wrapper: true}
}

// bubblewrap dies of SIGINT and SIGTERM, and its sandbox with it, at once:
// the agent inside never saw the signal. Signal sends them past it, to
// the agent, which ends on its own terms (claude writes its result event
// on SIGINT); Terminate's grace is the agent's to use.
func TestASignalReachesTheAgentInsideItsSandbox(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 3}, {syscall.SIGTERM, 4}} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			c := sandboxed(t, "trap 'sleep 0.2; exit 3' INT; trap 'sleep 0.2; exit 4' TERM; echo ready; while :; do sleep 0.05; done")
			c.Stdout = w
			p, err := Start(c)
			require.NoError(t, errors.Join(err, w.Close()))
			line, err := bufio.NewReader(r).ReadString('\n')
			require.NoError(t, errors.Join(err, r.Close()))
			require.Equal(t, "ready\n", line)

			p.Signal(tt.sig)
			code, err := p.Wait()
			require.NoError(t, err)
			assert.Equal(t, tt.code, code, "the agent's own exit, after its handler ran")
		})
	}
}

// What the agent inside its sandbox started is gone with it, whether it
// exits, is killed, or ignores SIGTERM past Terminate's grace.
func TestAnAgentInItsSandboxLeavesNothingBehind(t *testing.T) {
	const daemon = "sleep 3161"
	gone := func(c string) bool { return strings.HasPrefix(c, daemon) }
	testenv.KillAtCleanup(t, gone)
	for name, stop := range map[string]func(*Process){
		"exit":      func(*Process) {},
		"kill":      (*Process).Kill,
		"terminate": func(p *Process) { p.Terminate(200 * time.Millisecond) },
	} {
		t.Run(name, func(t *testing.T) {
			script := "trap '' TERM; setsid " + daemon + " >/dev/null 2>&1 & sleep 0.3"
			if name != "exit" {
				script += "; sleep 3162"
			}
			p, err := Start(sandboxed(t, script))
			require.NoError(t, err)
			require.Eventually(t, func() bool { return running(t, daemon) }, 10*time.Second, 20*time.Millisecond)
			stop(p)
			_, err = p.Wait()
			require.NoError(t, err)
			testenv.AwaitGone(t, "the sandboxed agent's daemon", gone)
			testenv.AssertGroupGone(t, p.Pid())
		})
	}
}
