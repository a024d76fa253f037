package isolation

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// BridgeArg, as the first argument, makes spawn's binary (and the test
// binaries that stand in for it) the model bridge of a model-only sandbox
// instead of itself: see Bridged. Bridge is its main.
const BridgeArg = "__spawn-model-bridge__"

// Bridge is the model bridge's main: args are the arguments after
// BridgeArg. It returns the agent's exit code.
func Bridge(args []string) int { return bridge(args) }

// Bridged returns s and cmd for a sandbox without a network of its own
// beyond loopback (NoNetwork) whose only way out is the model relay: the
// relay's unix socket sock is shown in the sandbox, and the agent runs
// under a bridge (exe, this binary re-executed) that listens on
// 127.0.0.1:port inside the sandbox, where the agent's API base points,
// and forwards every connection to sock.
func Bridged(s Spec, exe, sock string, port int, argv []string) (Spec, []string) {
	s.NoNetwork = true
	s.Files = append(s.Files, Bind{Src: sock, Dst: sock}, Bind{Src: exe, Dst: exe})
	return s, append([]string{exe, BridgeArg, sock, fmt.Sprint(port), "--"}, argv...)
}

// bridge is the bridge's main: args are the relay socket, the port and,
// after "--", the agent's argv. It returns the agent's exit code, or 127
// when the bridge cannot start.
func bridge(args []string) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "spawn model bridge: usage: SOCKET PORT -- COMMAND...")
		return 127
	}
	sock, port, argv := args[0], args[1], args[3:]
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spawn model bridge: %v\n", err)
		return 127
	}
	go forward(ln, sock)
	code, err := proc.RunInherited(argv, os.Environ())
	if err != nil {
		fmt.Fprintf(os.Stderr, "spawn model bridge: %v\n", err)
	}
	return code
}

// forward copies every connection ln accepts to a new connection to the
// unix socket sock, both ways, until ln is closed.
func forward(ln net.Listener, sock string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", sock)
			if err != nil {
				return
			}
			defer up.Close()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				copyHalf(up, c)
			}()
			copyHalf(c, up)
			wg.Wait()
		}()
	}
}

// copyHalf copies src to dst, then half-closes dst. A failed copy closes
// dst: the agent's client sees its connection end, which is how it learns.
func copyHalf(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
