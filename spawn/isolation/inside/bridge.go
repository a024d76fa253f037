// Package inside is what spawn's binaries run inside a sandbox, for
// spawn (internal/entry dispatches them): the model bridge of a
// model-only sandbox (Bridge) and the Seatbelt probe's subject
// (ProbeSubject). It links little (no HTTP, no TOML, nothing of runners):
// spawn-shim, which runs it, starts beside every agent.
package inside

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/peer"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// BridgeArg, as the first argument, makes spawn's binary (and the test
// binaries that stand in for it) the model bridge of a model-only sandbox
// instead of itself: see isolation.Bridged. Bridge is its main.
const BridgeArg = "__spawn-model-bridge__"

// Bridge is the model bridge's main: args are the arguments after
// BridgeArg. It returns the agent's exit code.
func Bridge(args []string) int { return bridge(args) }

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
//
// An agent's hang-up reaches the relay before its next connection does:
// before it passes on a new connection, forward waits (at most
// hangUpWait) until what every earlier connection whose agent hung up
// sent has gone to the relay and the relay's side was shut down. The
// relay checks a request against the run's budget only once the answers
// of clients it knows went away are counted; without this, a program
// reading an answer's status line, hanging up and calling again at once
// could have its next call reach the relay while the bridge had not yet
// passed its hang-up on.
func forward(ln net.Listener, sock string) {
	var mu sync.Mutex
	links := map[*link]struct{}{}
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		earlier := make([]*link, 0, len(links))
		for l := range links {
			earlier = append(earlier, l)
		}
		mu.Unlock()
		for _, l := range earlier {
			l.awaitHangUp()
		}
		l := &link{agent: c, sent: make(chan struct{})}
		mu.Lock()
		links[l] = struct{}{}
		mu.Unlock()
		go func() {
			defer func() {
				mu.Lock()
				delete(links, l)
				mu.Unlock()
			}()
			defer c.Close()
			up, err := net.Dial("unix", sock)
			if err != nil {
				close(l.sent)
				return
			}
			defer up.Close()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(l.sent)
				copyHalf(up, c)
			}()
			copyHalf(c, up)
			wg.Wait()
		}()
	}
}

// hangUpWait bounds how long forward holds a new connection back for an
// earlier one's hang-up to reach the relay.
const hangUpWait = time.Second

// link is one agent connection the bridge forwards.
type link struct {
	agent net.Conn
	// sent is closed once everything the agent sent has gone to the
	// relay and the relay's side was shut down (or closed).
	sent chan struct{}
}

// awaitHangUp waits, at most hangUpWait, until l's agent's hang-up has
// reached the relay, if its agent has hung up.
func (l *link) awaitHangUp() {
	if !peer.Closed(l.agent) {
		return
	}
	t := time.NewTimer(hangUpWait)
	defer t.Stop()
	select {
	case <-l.sent:
	case <-t.C:
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
