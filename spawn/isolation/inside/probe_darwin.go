package inside

import "golang.org/x/sys/unix"

// processEnviron is the arguments and environment process pid was
// executed with, as sysctl kern.procargs2 shows them to a process of the
// same user that is allowed to ask.
func processEnviron(pid int) ([]byte, error) {
	return unix.SysctlRaw("kern.procargs2", pid)
}
