package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// RunInherited runs argv[0] with argv[1:] as a child that shares this
// process's stdin, stdout, stderr and process group, with the environment
// env, and returns its exit code (128+N for a death by signal N). While the
// child runs, SIGINT and SIGTERM sent to this process are ignored: sent to
// the group, they reach the child, which decides. It is for a process that
// stands between a reaper and an agent (the sandbox's network bridge) and
// must not change how signals reach the agent.
func RunInherited(argv, env []string) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("proc: RunInherited: no command")
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exitCode(exit), nil
	default:
		return 127, fmt.Errorf("start %s: %w", argv[0], err)
	}
}
