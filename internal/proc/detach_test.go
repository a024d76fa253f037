package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// detachHelperEnv makes the test binary a starter that starts the command
// in its value through StartDetached, says "started PID" and waits to be
// killed.
const detachHelperEnv = "SPAWN_PROC_TEST_DETACH"

func detach(script string) int {
	p, err := StartDetached(Cmd{Path: "sh", Args: []string{"-c", script}, Env: []string{"PATH=" + os.Getenv("PATH")}}, "")
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

// A detached process (spawn run --detach) outlives its starter, even one
// killed by SIGKILL, and lives in a session of its own, out of reach of the
// starter's terminal and process group.
func TestStartDetachedOutlivesItsStarter(t *testing.T) {
	const marker = "sleep 3135"
	testenv.KillAtCleanup(t, func(c string) bool { return strings.Contains(c, marker) })

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), detachHelperEnv+"=exec "+marker)
	cmd.Stderr = os.Stderr
	// The starter leads a process group, as a shell's job in a terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the starter started its process")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "started ")))
	require.NoError(t, err, line)
	require.Eventually(t, func() bool { return running(t, marker) }, 10*time.Second, 20*time.Millisecond)

	sid, err := getsid(pid)
	require.NoError(t, err)
	require.Equal(t, pid, sid, "the detached process leads a session of its own")
	starterSid, err := getsid(cmd.Process.Pid)
	require.NoError(t, err)
	require.NotEqual(t, starterSid, sid)

	// The starter's group gets a hangup, then the starter dies by SIGKILL.
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGHUP))
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, cmd.Wait())
	// Give a parent-death signal, were there one, the time to arrive.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.True(t, running(t, marker), "the detached process died with its starter")
		time.Sleep(20 * time.Millisecond)
	}
}

// The caller of StartDetached can wait for the process and learns its exit
// code; the process's output goes where the caller said.
func TestStartDetachedWait(t *testing.T) {
	out, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	p, err := StartDetached(Cmd{Path: "sh", Args: []string{"-c", "echo $0; exit 3"}, Stdout: out, Env: []string{}}, "spawn-detached")
	require.NoError(t, err)
	require.NoError(t, out.Close())
	code, err := p.Wait()
	require.NoError(t, err)
	require.Equal(t, 3, code)
	b, err := os.ReadFile(out.Name())
	require.NoError(t, err)
	require.Equal(t, "spawn-detached\n", string(b), "sh -c's $0 is its argv[0], arg0")
}

// getsid is getsid(2): the session pid belongs to.
func getsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}
