package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The reaper is the binary spawn runs from, re-executed through
// /proc/self/exe in reaper mode: argv[0] is reaperArg0 and reaperEnv holds
// the pid of the process that started it. Both must be there; reaperEnv is
// removed from the agent's environment.
const (
	reaperArg0 = "spawn-reaper"
	reaperEnv  = "SPAWN_PROC_REAPER"
	cageEnv    = "SPAWN_PROC_CAGE" // the agent's Cage, as JSON; removed from its environment too
	selfExe    = "/proc/self/exe"
)

// deathSignal is the reaper's parent-death signal: it is sent when the
// process that started the reaper dies. The reaper acts on it only when
// its parent is really gone, so a stray SIGUSR1 changes nothing.
const deathSignal = syscall.SIGUSR1

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h),
// which package syscall does not define.
const prSetChildSubreaper = 36

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

// Main declares that this binary starts agents: call it at the top of
// main(), and of TestMain in every test binary whose tests start agents
// (directly or through watcher, team, spawn or the CLI). Start refuses to
// run in a process that did not call it, with an error that says so.
//
// Start re-executes this binary as the agent's reaper. The reaper runs from
// this package's initialisation, before any main or TestMain code: a binary
// that calls Main late, or whose TestMain dispatches elsewhere first (as
// testscript.Main does), still never runs as a normal program, or as a test
// suite, in a reaper's place.
func Main() {
	hooked.Store(true)
}

func init() {
	if len(os.Args) > 0 && os.Args[0] == reaperArg0 && os.Getenv(reaperEnv) != "" {
		// Not os.Exit: the reaper has nothing to flush, and os.Exit in a
		// binary built with -race sleeps a second first (GORACE
		// atexit_sleep_ms), once per agent.
		syscall.Exit(reap())
	}
}

// forkThread runs every fork of a reaper on one OS thread that never exits.
// A parent-death signal is tied to the thread that forked, not to the
// process: were that thread to exit (Go ends a thread whose goroutine exits
// while locked to it), the reaper would take it for spawn's death.
var forkThread struct {
	once sync.Once
	reqs chan func()
}

// onForkThread runs f on the fork thread and returns when f has returned.
func onForkThread(f func()) {
	forkThread.once.Do(func() {
		forkThread.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the goroutine never returns
			for f := range forkThread.reqs {
				f()
			}
		}()
	})
	done := make(chan struct{})
	forkThread.reqs <- func() { f(); close(done) }
	<-done
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
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: status pipe: %w", c.Path, err)
	}
	cmd := exec.Command(selfExe)
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSignal}
	cmd.WaitDelay = waitDelay
	onForkThread(func() { err = cmd.Start() })
	// The reaper holds the write end now: EOF comes when it has reported.
	err = errors.Join(err, statusW.Close())
	if cmd.Process == nil {
		return nil, errors.Join(fmt.Errorf("start %s: reaper: %w", c.Path, err), statusR.Close())
	}
	status, rerr := io.ReadAll(statusR)
	err = errors.Join(err, rerr, statusR.Close())
	agent, serr := parseStatus(string(status), path)
	if err = errors.Join(err, serr); err == nil {
		return watch(cmd, c.Path, agent, true), nil
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

// enterCage joins the cgroups and sets the resource limits of the cage
// cageEnv describes, if any, in the reaper: the agent inherits both.
func enterCage() error {
	v := os.Getenv(cageEnv)
	if v == "" {
		return nil
	}
	var c Cage
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return fmt.Errorf("read the agent's cage: %w", err)
	}
	for _, dir := range c.Cgroups {
		// "0" is the writing process.
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("join the cgroup %s: %w", dir, err)
		}
	}
	for _, r := range c.Rlimits {
		if err := syscall.Setrlimit(r.Resource, &syscall.Rlimit{Cur: r.Limit, Max: r.Limit}); err != nil {
			return fmt.Errorf("set resource limit %d: %w", r.Resource, err)
		}
	}
	return nil
}

// The reaper reports on fd 3, in one line, then closes it: "ok <pid>" once
// the agent runs, "errno <n>" when exec failed with that error, or "error
// <text>".
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

// reap is the reaper's life; it returns the exit code. argv is reaperArg0,
// the agent's resolved path, then the agent's argv (argv[0] as given).
//
// It becomes a child subreaper, so that every process the agent starts,
// however it detaches (a new session, a double fork), stays its descendant.
// It starts the agent in the reaper's own process group, so that signals to
// the group reach the agent (the reaper takes no notice of SIGINT, SIGTERM,
// SIGHUP, SIGQUIT or SIGPIPE), with SIGKILL as the agent's parent-death
// signal, and waits, reaping every orphan handed to it meanwhile. When the agent
// exits it kills every descendant left, reaps them, and exits with the
// agent's status (128+N for a death by signal N). When the process that
// started it dies, it kills the agent and every descendant, and exits.
func reap() int {
	// The agent's parent-death signal is tied to this thread.
	runtime.LockOSThread()
	status := os.NewFile(3, "reaper-status")
	syscall.CloseOnExec(3)
	report := func(format string, args ...any) {
		if status == nil {
			return
		}
		_, err := fmt.Fprintf(status, format+"\n", args...)
		if err = errors.Join(err, status.Close()); err != nil {
			fmt.Fprintf(os.Stderr, "spawn reaper: report to spawn: %v\n", err)
		}
		status = nil
	}
	if len(os.Args) < 3 {
		report("error bad argv %q", os.Args)
		return 2
	}
	path, argv := os.Args[1], os.Args[2:]

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, deathSignal, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	parent, err := strconv.Atoi(os.Getenv(reaperEnv))
	if err != nil || os.Getppid() != parent {
		// The starter died before this reaper listened for it.
		report("error the process that started the reaper is gone")
		return 1
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		report("error prctl(PR_SET_CHILD_SUBREAPER): %v", e)
		return 1
	}
	if err := enterCage(); err != nil {
		report("error %v", err)
		return 1
	}
	agent, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   withoutReaperEnv(os.Environ()),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			report("errno %d", int(errno))
		} else {
			report("error %v", err)
		}
		return 127
	}
	report("ok %d", agent)

	exited := make(chan syscall.WaitStatus, 1)
	noChildren := make(chan struct{})
	go func() {
		defer close(noChildren)
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil { // ECHILD: no child left, so no descendant either
				return
			}
			if pid == agent {
				exited <- ws
			}
		}
	}()

	code := 128 + int(syscall.SIGKILL)
wait:
	for {
		select {
		case ws := <-exited:
			code = statusCode(ws)
			break wait
		case sig := <-sigs:
			if sig == deathSignal && os.Getppid() != parent {
				break wait // spawn is gone: so is everything it started
			}
		}
	}
	deadline := time.After(reapWait)
	for {
		killTree(os.Getpid(), false)
		select {
		case <-noChildren:
			return code
		case <-deadline:
			fmt.Fprintf(os.Stderr, "spawn reaper: killed descendants not reaped after %s; init will reap them\n", reapWait)
			return code
		case <-time.After(100 * time.Millisecond):
			// Kill again whatever appeared meanwhile.
		}
	}
}

// statusCode maps a wait status to an exit code: 128+N for a death by
// signal N, the shell's convention.
func statusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
