package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// An agent that exits normally leaves nothing behind, not even a daemon
// that detached into a session of its own: by the time Wait returns, it is
// gone.
func TestAgentExitTakesItsDaemonsWithIt(t *testing.T) {
	testenv.KillAtCleanup(t, func(c string) bool { return strings.HasPrefix(c, "sleep 3135") })
	p, err := Start(Cmd{Path: "sh", Args: []string{"-c", "setsid sleep 3135 >/dev/null 2>&1 & echo started"}, Env: env()})
	require.NoError(t, err)
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.False(t, running(t, "sleep 3135"), "the daemon is gone when Wait returns")
	testenv.AssertGroupGone(t, p.Pid())
}

// An agent that dies by a signal (a crash, or kill -9 by someone) leaves
// nothing behind either, and Wait reports the agent's death, not the
// reaper's.
func TestAgentCrashTakesItsDescendantsWithIt(t *testing.T) {
	testenv.KillAtCleanup(t, func(c string) bool { return strings.HasPrefix(c, "sleep 3136") })
	p, err := Start(Cmd{Path: "sh", Args: []string{"-c", "setsid sleep 3136 & wait"}, Env: env()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return running(t, "sleep 3136") }, 10*time.Second, 20*time.Millisecond)
	assert.NotEqual(t, p.Pid(), p.AgentPid())
	assert.Equal(t, p.Pid(), testenv.Parent(t, p.AgentPid()), "the reaper is the agent's parent")

	require.NoError(t, syscall.Kill(p.AgentPid(), syscall.SIGKILL))
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 128+int(syscall.SIGKILL), code)
	assert.False(t, running(t, "sleep 3136"), "the orphan is gone when Wait returns")
}

// The agent's exit code and signal death come through the reaper as they
// are; a signal to the group stops the agent, not the reaper, which
// reports it; the agent's stdin and stdout are the ones given.
func TestReaperIsTransparent(t *testing.T) {
	for _, tt := range []struct {
		name, script string
		signal       syscall.Signal
		code         int
	}{
		{"exit code", "exit 7", 0, 7},
		{"signal death", "kill -SEGV $$", 0, 128 + int(syscall.SIGSEGV)},
		{"SIGTERM to the tree", "echo ready; exec sleep 3137", syscall.SIGTERM, 128 + int(syscall.SIGTERM)},
		{"SIGINT to the tree", "echo ready; exec sleep 3138", syscall.SIGINT, 128 + int(syscall.SIGINT)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			p, err := Start(Cmd{Path: "sh", Args: []string{"-c", tt.script}, Env: env(), Stdout: w})
			require.NoError(t, errors.Join(err, w.Close()))
			if tt.signal != 0 {
				line, err := bufio.NewReader(r).ReadString('\n')
				require.NoError(t, err)
				require.Equal(t, "ready\n", line)
				p.Signal(tt.signal)
			}
			code, err := p.Wait()
			require.NoError(t, errors.Join(err, r.Close()))
			assert.Equal(t, tt.code, code)
		})
	}

	var out bytes.Buffer
	p, err := Start(Cmd{Path: "cat", Env: env(), Stdin: strings.NewReader("to the agent"), Stdout: &out})
	require.NoError(t, err)
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "to the agent", out.String())
}

// The agent's environment is the one given, without the reaper's marker
// (on Darwin, with the tree's mark the reaper finds its processes by).
func TestAgentEnvironmentIsTheGivenOne(t *testing.T) {
	var out bytes.Buffer
	p, err := Start(Cmd{Path: "env", Env: []string{"A=1", "B=2"}, Stdout: &out, Dir: t.TempDir()})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	got := out.String()
	if runtime.GOOS == "darwin" {
		var mark string
		got, mark, _ = strings.Cut(got, "SPAWN_PROC_TREE=")
		assert.Regexp(t, `^\d+-[0-9a-f]{24}\n$`, mark)
	}
	assert.Equal(t, "A=1\nB=2\n", got)
}

func TestStartReportsAnAgentThatCannotRun(t *testing.T) {
	_, err := Start(Cmd{Path: "no-such-agent-cli", Env: env()})
	assert.ErrorIs(t, err, exec.ErrNotFound)

	// Found, but not executable by the kernel: the reaper's exec fails and
	// Start says so, with the errno.
	bin := filepath.Join(t.TempDir(), "agent")
	require.NoError(t, os.WriteFile(bin, []byte("not a program"), 0o755))
	_, err = Start(Cmd{Path: bin, Env: env()})
	assert.ErrorIs(t, err, syscall.ENOEXEC)
	assert.Contains(t, err.Error(), bin)

	_, err = Start(Cmd{Path: "sh", Env: env(), Dir: filepath.Join(t.TempDir(), "missing")})
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// An agent whose cage cannot be entered never runs, and Start says which
// cgroup failed; one whose cage is entered runs in it, limits and all.
func TestAnAgentRunsOnlyInsideItsCage(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	missing := filepath.Join(t.TempDir(), "no-such-cgroup")
	_, err := Start(Cmd{Path: "sh", Args: []string{"-c", "touch " + ran}, Env: env(), Cage: &Cage{Cgroups: []string{missing}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "join the cgroup "+missing)
	assert.NoFileExists(t, ran, "the agent never ran")

	// A folder that takes cgroup.procs as a file stands in for a cgroup:
	// the reaper's pid is written there before the agent starts.
	fake := t.TempDir()
	var out strings.Builder
	p, err := Start(Cmd{Path: "sh", Args: []string{"-c", "cat " + filepath.Join(fake, "cgroup.procs") + "; echo; echo $PPID; ulimit -n"}, Env: env(), Stdout: &out,
		Cage: &Cage{Cgroups: []string{fake}, Rlimits: []Rlimit{{Resource: syscall.RLIMIT_NOFILE, Limit: 77}}}})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	lines := strings.Fields(out.String())
	require.Len(t, lines, 3, out.String())
	assert.Equal(t, lines[1], lines[0], "the reaper (the agent's parent) was put in the cgroup")
	assert.Equal(t, "77", lines[2], "the cage's limits hold in the agent")
}

// A binary that forgot proc.Main would re-execute itself as a normal
// program instead of a reaper: Start refuses, loudly.
func TestStartWithoutMainFails(t *testing.T) {
	hooked.Store(false)
	defer hooked.Store(true)
	_, err := Start(Cmd{Path: "true", Env: env()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "proc.Main()")
}

// The reaper killed on its own (kill -9 of its pid): spawn kills what was
// left in its process group before it reaps it, so a process the agent
// started without leaving the group does not run on. On Darwin, where the
// agent has no parent-death signal, the agent itself is among them.
func TestAReaperKilledAloneLeavesNothingInItsGroup(t *testing.T) {
	const worker = "sleep 3141"
	testenv.KillAtCleanup(t, func(c string) bool { return strings.HasPrefix(c, worker) })
	p, err := Start(Cmd{Path: "sh", Args: []string{"-c", worker + " & wait"}, Env: env()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return running(t, worker) }, 10*time.Second, 20*time.Millisecond)

	require.NoError(t, syscall.Kill(p.Pid(), syscall.SIGKILL))
	_, err = p.Wait()
	require.NoError(t, err)
	testenv.AssertGroupGone(t, p.Pid())
	assert.False(t, running(t, worker), "the worker in the reaper's group is gone when Wait returns")
}

// A piped process reads what its starter writes and answers on the pipe
// the starter reads; closing its input ends it.
func TestStartPipedTalksOverItsPipes(t *testing.T) {
	p, err := StartPiped(Cmd{Path: "cat", Env: env()})
	require.NoError(t, err)
	_, err = io.WriteString(p.In, "ping\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(p.Out).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", line)
	require.NoError(t, p.In.Close())
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	require.NoError(t, p.Out.Close())
}
