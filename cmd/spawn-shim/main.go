// Command spawn-shim runs spawn's own processes and nothing else: an
// agent's reaper, claude's hooks, the model bridge and the git helper
// (internal/entry). make build puts it beside spawn, stamped into spawn
// with its build ID (proc.Own): a fifth of spawn's size, it starts in
// less than half the time, and spawn starts it several times around each
// agent. It links only what those processes need (main_test.go
// holds it to that). spawn without its shim runs its own binary for them
// instead.
package main

import (
	"fmt"
	"os"

	"github.com/infinite-improbability-drive/spawn/internal/entry"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

func main() {
	if code, ok := entry.Dispatch(os.Args); ok {
		proc.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "spawn-shim runs spawn's own processes for spawn; run spawn instead")
	proc.Exit(2)
}
