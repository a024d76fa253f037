// Package proc is spawn's one exec seam: every child process spawn starts,
// git and the agent CLIs alike, starts here.
//
// Short commands (git) run to completion with Run. Agents start with Start
// in a process group of their own, and are stopped as a whole tree: the
// agent, its group, and every descendant, including the ones that moved to
// sessions of their own (claude's Bash tool does that, so a signal to the
// group alone misses them).
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cmd describes a child process.
type Cmd struct {
	Path string   // binary name (looked up in PATH) or path
	Args []string // arguments after Path
	Dir  string   // working directory; "" is the current one
	// Env is the child's whole environment. Nil means an empty environment,
	// never the parent's: callers pass what the child may see.
	Env    []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// ExitError is returned by Run when the command ran and exited non-zero.
type ExitError struct {
	Argv   []string
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("%s: exit status %d", strings.Join(e.Argv, " "), e.Code)
	}
	return fmt.Sprintf("%s: exit status %d: %s", strings.Join(e.Argv, " "), e.Code, msg)
}

// Run runs c to completion and returns its standard output. A non-zero exit
// is an *ExitError carrying stderr. Cancelling ctx kills the process tree.
func Run(ctx context.Context, c Cmd) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if c.Stdin == nil {
		c.Stdin = strings.NewReader("")
	}
	p, err := Start(c)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, p.Kill)
	defer stop()
	code, err := p.Wait()
	if err != nil {
		return stdout.Bytes(), err
	}
	if ctx.Err() != nil {
		return stdout.Bytes(), fmt.Errorf("%s: %w", c.Path, ctx.Err())
	}
	if code != 0 {
		return stdout.Bytes(), &ExitError{Argv: append([]string{c.Path}, c.Args...), Code: code, Stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

// Process is a started child in a process group of its own.
type Process struct {
	cmd      *exec.Cmd
	done     chan struct{}
	killOnce sync.Once
	code     int
	waitErr  error
}

// Start starts c in a new process group. The caller must call Wait.
func Start(c Cmd) (*Process, error) {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Descendants that keep a copied pipe open must not hold Wait forever.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			p.code = exitCode(exit)
		case errors.Is(err, exec.ErrWaitDelay):
			p.code = cmd.ProcessState.ExitCode()
		default:
			p.waitErr = fmt.Errorf("wait %s: %w", c.Path, err)
		}
		close(p.done)
	}()
	return p, nil
}

// exitCode maps a signal death to the shell's 128+N convention.
func exitCode(e *exec.ExitError) int {
	if ws, ok := e.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return e.ExitCode()
}

// Pid is the process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns its exit code (128+N for a
// death by signal N). The error is set only when waiting itself failed.
func (p *Process) Wait() (int, error) {
	<-p.done
	return p.code, p.waitErr
}

// Signal sends sig to the process's group and to every descendant.
func (p *Process) Signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	pids := Tree(p.Pid())
	_ = syscall.Kill(-p.Pid(), sig)
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}

// Kill kills the whole tree at once: it freezes every process of it with
// SIGSTOP (so none can fork or be re-parented while it is walked), then sends
// SIGKILL. Safe to call more than once, and after the process has exited.
func (p *Process) Kill() {
	p.killOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		KillTree(p.Pid())
	})
}

// Terminate asks the tree to stop with SIGTERM, waits up to grace for the
// process to exit, then kills the tree. It returns when the process is gone.
func (p *Process) Terminate(grace time.Duration) {
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	// Even after a clean exit, descendants may linger in sessions of their own.
	KillTree(p.Pid())
	<-p.done
}

// KillTree freezes and kills root, its process group and all its descendants.
func KillTree(root int) {
	seen := map[int]bool{}
	_ = syscall.Kill(-root, syscall.SIGSTOP)
	_ = syscall.Kill(root, syscall.SIGSTOP)
	// Walk until no new descendant appears: a stopped process cannot fork.
	for range 10 {
		fresh := 0
		for _, pid := range Tree(root) {
			if !seen[pid] {
				seen[pid] = true
				fresh++
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
		if fresh == 0 {
			break
		}
	}
	_ = syscall.Kill(-root, syscall.SIGKILL)
	_ = syscall.Kill(root, syscall.SIGKILL)
	for pid := range seen {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// A stopped process does not act on SIGKILL until continued on some kernels' views.
	_ = syscall.Kill(-root, syscall.SIGCONT)
	for pid := range seen {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// Tree lists the descendants of root (not root itself), read from /proc.
func Tree(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		ppid, ok := parentOf(pid)
		if ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/<pid>/stat.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name may hold spaces and parentheses: skip to the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	var state string
	var ppid int
	if _, err := fmt.Sscanf(string(b[i+1:]), " %s %d", &state, &ppid); err != nil {
		return 0, false
	}
	return ppid, true
}

// LookPath finds the binary name in the PATH of env (not spawn's own), the
// way the child will be started. A name holding a slash is checked as is.
func LookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if isExecutable(name) {
			// Absolute, so a child started in another directory finds it too.
			return filepath.Abs(name)
		}
		return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
