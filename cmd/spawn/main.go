// Command spawn hands a coding task to an LLM coder in a git-worktree
// sandbox, has a second LLM review the work, and records everything.
package main

import (
	"os"

	"github.com/infinite-improbability-drive/spawn/internal/cli"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

func main() {
	proc.Main() // spawn starts agents, each under a reaper that is this binary
	os.Exit(cli.Main(os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}
