package peer

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Closed reports whether the other end of c has closed it or shut
// its side down, as the kernel sees it now: a FIN is seen whatever bytes
// came before it, unread or not (an HTTP server's background read stops
// at the first byte past a request and never sees the FIN behind it). It
// reads nothing. A connection that cannot be asked, closed already,
// counts as closed; one that is no socket, as open.
func Closed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			closed = fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
		}
	})
	return closed || err != nil
}
