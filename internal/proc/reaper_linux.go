package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// On Linux the reaper is spawn-shim (Own), or, without one, this binary
// re-executed through /proc/self/exe, the very file this process runs,
// whatever its path has become since.
const selfExe = "/proc/self/exe"

// deathSignal is the reaper's parent-death signal: it is sent when the
// process that started the reaper dies. The reaper acts on it only when
// its parent is really gone, so a stray SIGUSR1 changes nothing.
const deathSignal = syscall.SIGUSR1

// settleWait is how long the reaper waits, once the agent has exited, for
// the descendants left to exit by themselves before it kills them.
const settleWait = 10 * time.Millisecond

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h),
// which package syscall does not define.
const prSetChildSubreaper = 36

func reaperExe() (string, error) {
	own, err := Own()
	if err != nil || IsShim(own) {
		return own, err
	}
	return selfExe, nil
}

// startReaperCmd starts the reaper in a process group of its own, with
// deathSignal as its parent-death signal, forked from the fork thread.
func startReaperCmd(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSignal}
	var err error
	onForkThread(func() { err = cmd.Start() })
	return err
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

// reap is the reaper's life; it returns the exit code. argv is reaperArg0,
// the agent's resolved path, then the agent's argv (argv[0] as given).
//
// It becomes a child subreaper, so that every process the agent starts,
// however it detaches (a new session, a double fork), stays its descendant.
// It starts the agent in the reaper's own process group, so that signals to
// the group reach the agent (the reaper takes no notice of SIGINT, SIGTERM,
// SIGHUP, SIGQUIT or SIGPIPE), with SIGKILL as the agent's parent-death
// signal, and waits, reaping every orphan handed to it meanwhile. When the
// agent exits it kills every descendant that did not exit by itself at once
// (settleWait), reaps them, and exits with the agent's status (128+N for a death by signal N). When the process that
// started it dies, it kills the agent and every descendant, and exits.
func reap() int {
	// The agent's parent-death signal is tied to this thread.
	runtime.LockOSThread()
	status := newStatusReporter()
	if len(os.Args) < 3 {
		status.report("error bad argv %q", os.Args)
		return 2
	}
	path, argv := os.Args[1], os.Args[2:]

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, deathSignal, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	parent, err := strconv.Atoi(os.Getenv(reaperEnv))
	if err != nil || os.Getppid() != parent {
		// The starter died before this reaper listened for it.
		status.report("error the process that started the reaper is gone")
		return 1
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		status.report("error prctl(PR_SET_CHILD_SUBREAPER): %v", e)
		return 1
	}
	if err := enterCage(); err != nil {
		status.report("error %v", err)
		return 1
	}
	agent, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   withoutReaperEnv(os.Environ()),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		status.reportExecError(err)
		return 127
	}
	status.report("ok %d", agent)

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
	// What is left most often ends by itself at once: bubblewrap's init,
	// handed to this reaper when bubblewrap's monitor exits before it. The
	// process table is walked (milliseconds) only for what is left after
	// settleWait.
	select {
	case <-noChildren:
		return code
	case <-time.After(settleWait):
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
