package isolation

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// cgroups reports that c has none: cgroups are Linux's. On Darwin a cage
// holds its limits with the resource limits its reaper sets (Proc:
// RLIMIT_NPROC for the processes, which counts every process of the user
// and which the kernel does not apply to root; RLIMIT_DATA for each
// process's memory, not the tree's, and which spawn's tests cannot check
// on macOS), and watches the disk (Check) as on Linux. No limit is seen
// being reached (Check reports the disk only): a fork refused by
// RLIMIT_NPROC fails in the agent's tool, which says so.
func (c *Cage) cgroups(string) bool { return false }

// rlimitNproc is RLIMIT_NPROC on Darwin.
const rlimitNproc = unix.RLIMIT_NPROC

// userProcesses counts the processes of this process's user (sysctl
// kern.proc.uid); 0 when the table cannot be read.
func userProcesses() int {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Getuid())
	if err != nil {
		return 0
	}
	return len(kps)
}

// freeSpace is the filesystem of p and the bytes free on it for an
// unprivileged writer.
func freeSpace(p string) (id, free uint64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(p, &st); err != nil {
		return 0, 0, false
	}
	return uint64(uint32(st.Fsid.Val[0]))<<32 | uint64(uint32(st.Fsid.Val[1])), st.Bavail * uint64(st.Bsize), true
}
