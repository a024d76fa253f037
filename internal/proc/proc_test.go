package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

func env() []string { return []string{"PATH=" + os.Getenv("PATH")} }

// running reports whether a process whose command line starts with marker
// runs (the shell that starts it does not count).
func running(t *testing.T, marker string) bool {
	t.Helper()
	return len(testenv.Processes(t, func(c string) bool { return strings.HasPrefix(c, marker) })) > 0
}

// A descendant that moved to a session of its own (as claude's Bash tool
// does) is out of the agent's process group; Kill still takes it.
func TestKillTakesDescendantsInOtherSessions(t *testing.T) {
	p, err := Start(Cmd{Path: "sh", Args: []string{"-c", "setsid sleep 313 & sleep 314; wait"}, Env: env()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return running(t, "sleep 313") && running(t, "sleep 314") }, 5*time.Second, 20*time.Millisecond)
	assert.NotEmpty(t, Tree(p.Pid()))

	p.Kill()
	p.Kill() // safe twice
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 128+int(syscall.SIGKILL), code)
	assert.Eventually(t, func() bool { return !running(t, "sleep 313") && !running(t, "sleep 314") }, 5*time.Second, 20*time.Millisecond)
	testenv.AssertGroupGone(t, p.Pid())
}

func TestTerminateGivesGraceThenKills(t *testing.T) {
	// A child that ignores SIGTERM is killed once the grace period is over.
	p, err := Start(Cmd{Path: "sh", Args: []string{"-c", "trap '' TERM; sleep 315"}, Env: env()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return running(t, "sleep 315") }, 5*time.Second, 20*time.Millisecond)
	start := time.Now()
	p.Terminate(300 * time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Eventually(t, func() bool { return !running(t, "sleep 315") }, 5*time.Second, 20*time.Millisecond)
}

func TestRunReportsExitAndStderr(t *testing.T) {
	out, err := Run(context.Background(), Cmd{Path: "sh", Args: []string{"-c", "echo out; echo oops >&2; exit 3"}, Env: env()})
	assert.Equal(t, "out\n", string(out))
	var exit *ExitError
	require.True(t, errors.As(err, &exit))
	assert.Equal(t, 3, exit.Code)
	assert.Contains(t, err.Error(), "exit status 3: oops")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = Run(ctx, Cmd{Path: "sleep", Args: []string{"316"}, Env: env()})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, running(t, "sleep 316"))
}

func TestLookPathUsesTheGivenPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "agent")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
	got, err := LookPath("agent", []string{"PATH=/nonexistent:" + dir})
	require.NoError(t, err)
	assert.Equal(t, bin, got)
	_, err = LookPath("agent", []string{"PATH=/nonexistent"})
	assert.Error(t, err)

	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(dir))
	defer func() { _ = os.Chdir(wd) }()
	got, err = LookPath("./agent", nil)
	require.NoError(t, err)
	assert.Equal(t, bin, got, "a relative path is made absolute")
}
