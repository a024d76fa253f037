package isolation

import (
	"fmt"

	"github.com/infinite-improbability-drive/spawn/spawn/isolation/inside"
)

// Bridged returns s and cmd for a sandbox without a network of its own
// beyond loopback (NoNetwork) whose only way out is the model relay: the
// relay's unix socket sock is shown in the sandbox, and the agent runs
// under a bridge (exe, this binary re-executed) that listens on
// 127.0.0.1:port inside the sandbox, where the agent's API base points,
// and forwards every connection to sock.
func Bridged(s Spec, exe, sock string, port int, argv []string) (Spec, []string) {
	s.NoNetwork = true
	s.Files = append(s.Files, Bind{Src: sock, Dst: sock}, Bind{Src: exe, Dst: exe})
	return s, append([]string{exe, inside.BridgeArg, sock, fmt.Sprint(port), "--"}, argv...)
}
