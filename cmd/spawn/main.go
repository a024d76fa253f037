// Command spawn hands a coding task to an LLM coder in a git-worktree
// sandbox, has LLMs of other model families review the work, and records
// everything.
package main

import (
	"os"

	"github.com/infinite-improbability-drive/spawn/internal/cli"
	"github.com/infinite-improbability-drive/spawn/internal/entry"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

func main() {
	// spawn's own processes come first: this binary is also an agent's
	// reaper, claude's hooks, a model-only sandbox's bridge, the git
	// helper and the Seatbelt probe (entry.Dispatch), each of which
	// answers and ends here, before the CLI is set up.
	if code, ok := entry.Dispatch(os.Args); ok {
		proc.Exit(code)
	}
	proc.Main() // the CLI starts agents, each under a reaper that is this binary
	os.Exit(cli.Main(os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}
