// Command spawn hands a coding task to an LLM coder in a git-worktree
// sandbox, has LLMs of other model families review the work, and records
// everything.
package main

import (
	"os"
	"runtime/debug"

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
	tuneCollector()
	os.Exit(cli.Main(os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}

// tuneCollector sets Go's collector for the CLI, unless the user's GOGC
// or GOMEMLIMIT says otherwise. A run parses agent streams of hundreds of
// MB, each tool output a new allocation, while its live heap stays small:
// at Go's default (GOGC=100) the collector ran every few MB, about a
// sixth of the run's CPU. At 400 it runs a quarter as often, and the soft
// limit of 64 MiB keeps the heap from growing to five times a large live
// heap (a tool output of many MB being read).
func tuneCollector() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(64 << 20)
	}
}
