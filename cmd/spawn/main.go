// Command spawn hands a coding task to an LLM coder in a git-worktree
// sandbox, has a second LLM review the work, and records everything.
package main

import "os"

func main() {
	os.Exit(Main(os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}
