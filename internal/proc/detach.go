package proc

import (
	"fmt"
	"os/exec"
	"syscall"
)

// StartDetached starts c as a process of its own that outlives spawn: it
// leads a new session (setsid), so no terminal's hangup and no signal sent
// to spawn's process group reaches it, and it has no reaper and no
// parent-death signal, so spawn's death, even by SIGKILL, leaves it
// running; when spawn exits first, init (or the nearest subreaper) adopts
// it. arg0 is the child's argv[0] ("" means c.Path), for a binary that
// tells what to be by its name.
//
// It is for `spawn run --detach`, a run that goes on after the command
// (or the MCP server) that started it. Give it files, not pipes, as
// Stdout and Stderr (a pipe dies with its reader), and no Stdin (nil is
// /dev/null). The caller may Wait for the process, or Signal it, while it
// lives; a caller that exits without waiting leaves it to its adopter.
func StartDetached(c Cmd, arg0 string) (*Process, error) {
	cmd := exec.Command(c.Path, c.Args...)
	if arg0 != "" {
		cmd.Args[0] = arg0
	}
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	return watch(cmd, c.Path, cmd.Process.Pid, false), nil
}
