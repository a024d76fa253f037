package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// helperEnv makes the test binary a supervisor that starts the command in
// its value through Start, says "started" and waits to be killed.
const helperEnv = "SPAWN_PROC_TEST_SUPERVISE"

func TestMain(m *testing.M) {
	Main()
	if script := os.Getenv(helperEnv); script != "" {
		os.Exit(supervise(script))
	}
	if script := os.Getenv(detachHelperEnv); script != "" {
		os.Exit(detach(script))
	}
	os.Exit(m.Run())
}

func supervise(script string) int {
	p, err := Start(Cmd{Path: "sh", Args: []string{"-c", script}, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("started %d\n", p.Pid())
	if _, err := p.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// spawn itself dies by SIGKILL (the OOM killer, kill -9): the agent it
// supervised and everything the agent started go with it, daemons that
// moved to sessions of their own included.
func TestSupervisorKilledTakesTheAgentTreeWithIt(t *testing.T) {
	const daemon, worker = "sleep 3133", "sleep 3134"
	gone := func(c string) bool { return strings.Contains(c, daemon) || strings.Contains(c, worker) }
	testenv.KillAtCleanup(t, gone)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=setsid "+daemon+" & "+worker+"; wait")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the supervisor started its agent")
	require.True(t, strings.HasPrefix(line, "started "), line)
	require.Eventually(t, func() bool { return running(t, daemon) && running(t, worker) }, 10*time.Second, 20*time.Millisecond)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, cmd.Wait())
	testenv.AwaitGone(t, "the agent tree of a killed supervisor", gone)
}
