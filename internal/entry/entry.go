// Package entry is the spawn binary's entry points besides its CLI: spawn
// starts some processes of its own by running its own binary again, each
// told apart by its arguments. cmd/spawn's main dispatches them first of
// all, and so do the test binaries that stand in for spawn.
package entry

import (
	"os"

	"github.com/infinite-improbability-drive/spawn/internal/hook"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation/inside"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// Dispatch runs the entry point that args (the process's arguments,
// argv[0] first) name, and returns its exit code; ok is false when they
// name none: the process is the CLI (or a test binary's tests). The entry
// points:
//
//   - an agent's reaper (argv[0] "spawn-reaper"): proc.Start runs every
//     agent under one, which holds its process tree (proc.Reaper);
//   - claude's hooks (`__spawn-hook <event> <inbox> <round>`), at each of
//     the coder's tool calls and at its stop: they hand it the messages
//     sent with spawn send (hook.Main);
//   - the model bridge of a model-only sandbox (`__spawn-model-bridge__`):
//     the agent's only way out, to the model relay (inside.Bridge);
//   - the Seatbelt probe's subject (`__spawn-seatbelt-probe__`), on macOS
//     (inside.ProbeSubject);
//   - the git helper (`__spawn-git-helper`), the only process that runs
//     git on the coder's store, inside its sandbox (sandbox.Helper).
func Dispatch(args []string) (code int, ok bool) {
	if code, ok := proc.Reaper(args); ok {
		return code, true
	}
	if len(args) < 2 {
		return 0, false
	}
	if code, ok := hook.Main(args[1:], os.Stdin, os.Stdout, os.Stderr); ok {
		return code, true
	}
	switch args[1] {
	case inside.BridgeArg:
		return inside.Bridge(args[2:]), true
	case inside.ProbeArg:
		return inside.ProbeSubject(args[2:], os.Stdout), true
	case sandbox.HelperArg:
		return sandbox.Helper(os.Stdin, os.Stdout, os.Stderr), true
	}
	return 0, false
}
