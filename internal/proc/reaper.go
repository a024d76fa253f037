package proc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The reaper is the binary spawn runs from, re-executed (reaperExe) in
// reaper mode: argv[0] is reaperArg0 and reaperEnv holds the pid of the
// process that started it. Both must be there; reaperEnv is removed from
// the agent's environment.
const (
	reaperArg0 = "spawn-reaper"
	reaperEnv  = "SPAWN_PROC_REAPER"
	cageEnv    = "SPAWN_PROC_CAGE" // the agent's Cage, as JSON; removed from its environment too
)

// reapWait bounds how long the reaper waits, after killing the agent's
// leftovers, for them to be reaped: a process that got SIGKILL dies as soon
// as the kernel lets it (one in uninterruptible sleep may take a while), and
// init reaps it if the reaper is gone by then.
const reapWait = 5 * time.Second

// hooked is set by Main: Start may re-execute this binary as a reaper.
var hooked atomic.Bool

// errNoHook is Start's error in a process that did not call Main.
var errNoHook = errors.New("proc: Start re-executes this binary as the agent's reaper, and " +
	"this binary did not declare that it may: call proc.Main() at the top of main (or TestMain)")

// Main declares that this binary starts agents: call it in main(), and at
// the top of TestMain in every test binary whose tests start agents
// (directly or through watcher, team, spawn or the CLI). Start refuses to
// run in a process that did not call it, with an error that says so.
//
// Start re-executes this binary as the agent's reaper: Main runs the
// reaper (Reaper) when this process is one, and exits; a binary that
// dispatches its own entry points first (cmd/spawn, through
// internal/entry) finds the reaper there.
func Main() {
	if code, ok := Reaper(os.Args); ok {
		Exit(code)
	}
	hooked.Store(true)
}

// Reaper runs the reaper when args (the process's arguments, argv[0]
// first) and the environment say that Start re-executed this binary as an
// agent's reaper, and returns its exit code; ok is false otherwise, and
// nothing ran.
func Reaper(args []string) (code int, ok bool) {
	if len(args) == 0 || args[0] != reaperArg0 || os.Getenv(reaperEnv) == "" {
		return 0, false
	}
	return reap(), true
}

// Exit ends the process with code at once. Not os.Exit: an entry point
// has nothing to flush, and os.Exit in a binary built with -race sleeps
// first (GORACE atexit_sleep_ms), once per agent and per hook call.
func Exit(code int) {
	syscall.Exit(code)
}

// startReaper starts c's agent under a reaper, in a new process group led
// by the reaper, and returns once the agent runs (or could not be started).
func startReaper(c Cmd) (*Process, error) {
	if !hooked.Load() {
		return nil, errNoHook
	}
	// Resolved here, from spawn's PATH, as exec.Command would.
	path, err := exec.LookPath(c.Path)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	exe, err := reaperExe()
	if err != nil {
		return nil, fmt.Errorf("start %s: find this binary to run the reaper: %w", c.Path, err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: status pipe: %w", c.Path, err)
	}
	cmd := exec.Command(exe)
	cmd.Args = append([]string{reaperArg0, path, c.Path}, c.Args...)
	cmd.Env = append(withoutReaperEnv(c.Env), reaperEnv+"="+strconv.Itoa(os.Getpid()))
	if c.Cage != nil {
		b, err := json.Marshal(c.Cage)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("start %s: %w", c.Path, err), statusR.Close(), statusW.Close())
		}
		cmd.Env = append(cmd.Env, cageEnv+"="+string(b))
	}
	cmd.Dir = c.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.ExtraFiles = []*os.File{statusW}
	var cageW *os.File
	if c.Cage != nil && len(c.Cage.Cgroups) > 0 {
		cageR, w, err := os.Pipe()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("start %s: cage pipe: %w", c.Path, err), statusR.Close(), statusW.Close())
		}
		defer cageR.Close()
		cmd.ExtraFiles, cageW = append(cmd.ExtraFiles, cageR), w
	}
	cmd.WaitDelay = waitDelay
	err = startReaperCmd(cmd)
	// The reaper holds the write end now: EOF comes when it has reported.
	err = errors.Join(err, statusW.Close())
	if cageW != nil {
		// The reaper waits for its cage before it starts the agent; it is
		// put there while it starts up (see cageFd).
		if cmd.Process != nil {
			_, werr := io.WriteString(cageW, joinCgroups(c.Cage.Cgroups, cmd.Process.Pid)+"\n")
			err = errors.Join(err, werr)
		}
		err = errors.Join(err, cageW.Close())
	}
	if cmd.Process == nil {
		return nil, errors.Join(fmt.Errorf("start %s: reaper: %w", c.Path, err), statusR.Close())
	}
	status, rerr := io.ReadAll(statusR)
	err = errors.Join(err, rerr, statusR.Close())
	agent, serr := parseStatus(string(status), path)
	if err = errors.Join(err, serr); err == nil {
		p := watch(cmd, c.Path, agent, true)
		if c.Wrapper {
			p.wrapper = agent
		}
		return p, nil
	}
	// A reaper that reported a failure exits by itself; any other is killed
	// with whatever it started. Its exit says nothing the error does not.
	if serr == nil {
		killTree(cmd.Process.Pid, true)
	}
	if werr := cmd.Wait(); werr != nil && !isExit(werr) {
		err = errors.Join(err, fmt.Errorf("wait for the reaper: %w", werr))
	}
	return nil, fmt.Errorf("start %s: %w", c.Path, err)
}

// withoutReaperEnv returns env without reaperEnv and cageEnv, never nil.
func withoutReaperEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, reaperEnv+"=") && !strings.HasPrefix(kv, cageEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// cageFd is the reaper's end of the pipe on which the process that
// started it says, in one line, that it has put the reaper in its cage's
// cgroups ("ok") or could not ("error <text>"). Joining a cgroup takes a
// few milliseconds (the kernel waits for an RCU grace period), which the
// starter spends while the reaper starts up, not after.
const cageFd = 4

// joinCgroups puts the process pid in every cgroup of dirs, and says how
// that went as the reaper reads it on cageFd.
func joinCgroups(dirs []string, pid int) string {
	for _, dir := range dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Sprintf("error join the cgroup %s: %v", dir, err)
		}
	}
	return "ok"
}

// enterCage waits until the reaper is in the cgroups of the cage cageEnv
// describes, if any (see cageFd), and sets its resource limits: the agent
// inherits both.
func enterCage() error {
	v := os.Getenv(cageEnv)
	if v == "" {
		return nil
	}
	var c Cage
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return fmt.Errorf("read the agent's cage: %w", err)
	}
	if len(c.Cgroups) > 0 {
		f := os.NewFile(cageFd, "reaper-cage")
		line, err := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
		err = errors.Join(err, f.Close())
		switch line = strings.TrimSpace(line); {
		case line == "ok":
		case strings.HasPrefix(line, "error "):
			return errors.New(strings.TrimPrefix(line, "error "))
		default:
			return fmt.Errorf("the process that started the reaper did not put it in its cage: %q: %w", line, err)
		}
	}
	for _, r := range c.Rlimits {
		if err := syscall.Setrlimit(r.Resource, &syscall.Rlimit{Cur: r.Limit, Max: r.Limit}); err != nil {
			return fmt.Errorf("set resource limit %d: %w", r.Resource, err)
		}
	}
	return nil
}

// statusReporter is the reaper's end of its status pipe (fd 3): it reports
// once, in one line, then closes it: "ok <pid>" once the agent runs,
// "errno <n>" when exec failed with that error, or "error <text>".
type statusReporter struct{ f *os.File }

func newStatusReporter() *statusReporter {
	syscall.CloseOnExec(3)
	return &statusReporter{f: os.NewFile(3, "reaper-status")}
}

func (s *statusReporter) report(format string, args ...any) {
	if s.f == nil {
		return
	}
	_, err := fmt.Fprintf(s.f, format+"\n", args...)
	if err = errors.Join(err, s.f.Close()); err != nil {
		fmt.Fprintf(os.Stderr, "spawn reaper: report to spawn: %v\n", err)
	}
	s.f = nil
}

// reportExecError reports a failed start of the agent.
func (s *statusReporter) reportExecError(err error) {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s.report("errno %d", int(errno))
	} else {
		s.report("error %v", err)
	}
}

// parseStatus reads the reaper's report (statusReporter).
func parseStatus(s, path string) (int, error) {
	word, arg, _ := strings.Cut(strings.TrimSpace(s), " ")
	switch word {
	case "ok":
		pid, err := strconv.Atoi(arg)
		if err != nil || pid <= 0 {
			return 0, fmt.Errorf("reaper: bad status %q", s)
		}
		return pid, nil
	case "errno":
		n, err := strconv.Atoi(arg)
		if err != nil {
			return 0, fmt.Errorf("reaper: bad status %q", s)
		}
		return 0, &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
	case "error":
		return 0, fmt.Errorf("reaper: %s", arg)
	}
	return 0, fmt.Errorf("reaper: exited without starting the agent (status %q)", s)
}

// statusCode maps a wait status to an exit code: 128+N for a death by
// signal N, the shell's convention.
func statusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
