package proc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Darwin has neither Linux's child subreaper nor its parent-death signal,
// so the reaper supervises with what it has, and is weaker in two ways:
//
//   - A process the agent starts that leaves the agent's process group
//     (setsid, setpgid) and whose parent then exits is handed to launchd,
//     not to the reaper: it is no longer anyone's descendant that the
//     reaper could find by walking parents. The reaper makes up for it by
//     following the tree as it grows: it watches every process of it for
//     NOTE_FORK (kqueue), lists the process table (sysctl kern.proc.all)
//     at each fork, and remembers every process it ever saw below it or in
//     its group, with its start time, so that one re-parented since is
//     still killed and a reused pid is not. A process that detaches and is
//     orphaned between a fork and that listing would still escape, so
//     every process the agent starts carries a mark in the environment it
//     was executed with (treeEnv, unique to this reaper), which the reaper
//     looks for (sysctl kern.procargs2) when it kills the tree. Only a
//     process that detaches, is orphaned before the reaper's next look, and
//     was executed with an environment cleared of the mark gets away; it
//     is still inside the agent's sandbox (Seatbelt, which no process can
//     leave), and still counts against the agent's process limit.
//   - The agent has no parent-death signal: were the reaper killed on its
//     own (kill -9 of its pid), the agent would run on. spawn makes up for
//     it when it learns of the reaper's death: before reaping the reaper it
//     kills the reaper's process group, which holds the agent and every
//     process of its that did not leave it.
//
// spawn's own death is seen as on Linux: the reaper watches spawn's pid
// for NOTE_EXIT (kqueue), which comes however spawn dies, even by SIGKILL,
// and then kills the whole tree and exits.

// treeEnv is the variable whose value marks every process an agent's
// reaper started (see above): the reaper's pid and a random word.
const treeEnv = "SPAWN_PROC_TREE"

// reaperExe is spawn-shim (Own), or, without one, this binary's path, from
// the loader (there is no /proc/self/exe on Darwin): a binary replaced at
// that path since spawn started runs as the reaper.
func reaperExe() (string, error) { return Own() }

// startReaperCmd starts the reaper in a process group of its own.
func startReaperCmd(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}

// reap is the reaper's life; it returns the exit code. argv is reaperArg0,
// the agent's resolved path, then the agent's argv (argv[0] as given).
//
// It watches the process that started it for its exit, starts the agent in
// the reaper's own process group (so that signals to the group reach the
// agent; the reaper takes no notice of SIGINT, SIGTERM, SIGHUP, SIGQUIT or
// SIGPIPE) with the tree's mark in its environment, and follows every fork
// of the agent's tree. When the agent exits it kills every process of the
// tree left and exits with the agent's status (128+N for a death by signal
// N). When the process that started it dies, it kills the agent and the
// whole tree, and exits.
func reap() int {
	status := newStatusReporter()
	if len(os.Args) < 3 {
		status.report("error bad argv %q", os.Args)
		return 2
	}
	path, argv := os.Args[1], os.Args[2:]

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	parent, err := strconv.Atoi(os.Getenv(reaperEnv))
	if err != nil || os.Getppid() != parent {
		status.report("error the process that started the reaper is gone")
		return 1
	}
	kq, err := unix.Kqueue()
	if err != nil {
		status.report("error kqueue: %v", err)
		return 1
	}
	// Watched first, then checked: a death before the watch is seen by
	// the check, one after it by the watch.
	if err := watchPid(kq, parent, unix.NOTE_EXIT); err != nil || os.Getppid() != parent {
		status.report("error the process that started the reaper is gone")
		return 1
	}
	if err := enterCage(); err != nil {
		status.report("error %v", err)
		return 1
	}
	mark, err := newMark()
	if err != nil {
		status.report("error %v", err)
		return 1
	}
	agent, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   append(withoutReaperEnv(os.Environ()), mark),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		status.reportExecError(err)
		return 127
	}
	status.report("ok %d", agent)

	line := newLineage(os.Getpid())
	follow := func() {
		procs, err := listProcs()
		if err != nil {
			return // the next fork, or the next second, lists again
		}
		for _, pid := range line.observe(procs) {
			// ESRCH only: it may have exited since the listing.
			_ = watchPid(kq, pid, unix.NOTE_FORK|unix.NOTE_EXIT)
		}
	}
	if err := watchPid(kq, agent, unix.NOTE_FORK|unix.NOTE_EXIT); err == nil {
		follow()
	}
	events := kevents(kq)
	exited := waitAgent(agent)

	code, agentDone := 128+int(syscall.SIGKILL), false
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
wait:
	for {
		select {
		case code = <-exited:
			agentDone = true
			break wait
		case ev, ok := <-events:
			switch {
			case !ok:
				events = nil // kqueue failed: the ticker still watches spawn
			case int(ev.Ident) == parent && ev.Fflags&unix.NOTE_EXIT != 0:
				break wait // spawn is gone: so is everything it started
			case ev.Fflags&unix.NOTE_FORK != 0:
				follow()
			}
		case <-tick.C:
			if os.Getppid() != parent {
				break wait
			}
			follow()
		case <-sigs:
		}
	}

	return killAgentTree(line, mark, exited, code, agentDone)
}

// kevents delivers the events of kq until it fails.
func kevents(kq int) <-chan unix.Kevent_t {
	events := make(chan unix.Kevent_t, 64)
	go func() {
		defer close(events)
		buf := make([]unix.Kevent_t, 32)
		for {
			n, err := unix.Kevent(kq, nil, buf, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return
			}
			for _, ev := range buf[:n] {
				events <- ev
			}
		}
	}()
	return events
}

// waitAgent delivers the agent's exit code once it exits (128+SIGKILL
// when it cannot be waited for).
func waitAgent(agent int) <-chan int {
	exited := make(chan int, 1)
	go func() {
		for {
			var ws syscall.WaitStatus
			_, err := syscall.Wait4(agent, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				exited <- 128 + int(syscall.SIGKILL)
				return
			}
			exited <- statusCode(ws)
			return
		}
	}()
	return exited
}

// killAgentTree kills every process of the agent's tree (line's, and any
// carrying mark) until none is left and the agent has exited (agentDone,
// else its code arrives on exited), or reapWait has passed; it returns the
// agent's exit code.
func killAgentTree(line *lineage, mark string, exited <-chan int, code int, agentDone bool) int {
	marked := map[[2]int64]bool{} // (pid, start) -> carries the mark
	deadline := time.Now().Add(reapWait)
	for {
		procs, err := listProcs()
		if err != nil {
			// Nothing is known to be gone: look again, until the deadline.
			fmt.Fprintf(os.Stderr, "spawn reaper: %v\n", err)
		}
		line.observe(procs)
		starts := index(procs)
		left := line.targets(procs, func(pid int) bool {
			key := [2]int64{int64(pid), starts[pid].start}
			m, ok := marked[key]
			if !ok {
				m = carries(pid, mark)
				marked[key] = m
			}
			return m
		})
		if err == nil && len(left) == 0 && agentDone {
			return code
		}
		killPids(left)
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "spawn reaper: %d killed processes still there after %s\n", len(left), reapWait)
			return code
		}
		select {
		case c := <-exited:
			if !agentDone {
				code, agentDone = c, true
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newMark is a new tree mark, as an environment entry.
func newMark() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the tree's mark: %w", err)
	}
	return treeEnv + "=" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b), nil
}

// killPids freezes every process of pids (so none forks meanwhile), then
// kills them.
func killPids(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP) // ESRCH only
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH only
		_ = syscall.Kill(pid, syscall.SIGCONT) // ESRCH only
	}
}
