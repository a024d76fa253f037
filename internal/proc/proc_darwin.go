package proc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// szomb is a zombie's p_stat (SZOMB, sys/proc.h).
const szomb = 5

// waitExited blocks until pid, a child of this process, has exited, and
// leaves it unreaped: it waits for the kernel's NOTE_EXIT event on pid
// (kqueue), which comes before the process can be reaped. A process that
// has exited already cannot be watched (ESRCH); a zombie is also seen by
// the once-a-second look at its state, in case its exit raced the watch.
func waitExited(pid int) error {
	kq, err := unix.Kqueue()
	if err != nil {
		return fmt.Errorf("kqueue: %w", err)
	}
	defer unix.Close(kq)
	if err := watchPid(kq, pid, unix.NOTE_EXIT); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return err
	}
	events := make([]unix.Kevent_t, 1)
	second := unix.NsecToTimespec(1e9)
	for {
		n, err := unix.Kevent(kq, nil, events, &second)
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil:
			return fmt.Errorf("kevent: %w", err)
		case n > 0:
			return nil
		default:
			// pid is this process's child, not reaped yet: it is in the
			// table, running or a zombie.
			if kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid); err == nil && kp.Proc.P_stat == szomb {
				return nil
			}
		}
	}
}

// watchPid asks kq for the process events fflags (NOTE_EXIT, NOTE_FORK) of
// pid. ESRCH means pid is gone (or a zombie).
func watchPid(kq, pid int, fflags uint32) error {
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_CLEAR)
	ev.Fflags = fflags
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		return fmt.Errorf("watch process %d: %w", pid, err)
	}
	return nil
}

// listProcs reads the process table with sysctl kern.proc.all.
func listProcs() ([]procInfo, error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("sysctl kern.proc.all: %w", err)
	}
	procs := make([]procInfo, 0, len(kps))
	for _, kp := range kps {
		procs = append(procs, procInfo{
			pid:    int(kp.Proc.P_pid),
			ppid:   int(kp.Eproc.Ppid),
			pgid:   int(kp.Eproc.Pgid),
			start:  kp.Proc.P_starttime.Sec*1_000_000 + int64(kp.Proc.P_starttime.Usec),
			zombie: kp.Proc.P_stat == szomb,
		})
	}
	return procs, nil
}

// carries reports whether process pid was executed with the environment
// entry kv (sysctl kern.procargs2, which answers only for processes of
// this process's user).
func carries(pid int, kv string) bool {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	return err == nil && procArgsHas(b, kv)
}
