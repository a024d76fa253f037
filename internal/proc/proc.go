// Package proc is spawn's one exec seam: every child process spawn starts,
// git and the agent CLIs alike, starts here.
//
// Short commands (git) run to completion with Run. Agents start with Start,
// under a reaper: this binary re-executed in a hidden mode (a binary that
// starts agents declares it with Main, at the top of main and TestMain).
// The reaper leads a process group of its own, which the agent joins; it
// keeps track of every process the agent starts, even one that detached
// into a session of its own (claude's Bash tool does that); and it dies
// with spawn. Nothing the agent started outlives it:
//   - the agent exits or crashes: the reaper kills every descendant left,
//     and exits with the agent's status;
//   - spawn stops it (Signal, Terminate, Kill): the agent's group and every
//     descendant are signalled (but the sandbox the agent runs in, which
//     would die of the signal: Cmd.Wrapper); the reaper takes no notice of
//     SIGINT and SIGTERM and, once the agent is gone, kills what is left;
//   - spawn dies, even by SIGKILL: the reaper sees it and kills the whole
//     tree and exits.
//
// How the reaper does it depends on the system. On Linux it is a child
// subreaper, so every process the agent starts stays its descendant
// however it detaches, and it learns of spawn's death by a parent-death
// signal (reaper_linux.go). Darwin has neither: the reaper follows the
// tree's forks with kqueue, remembers every process it saw, marks the
// agent's environment, and watches spawn's pid with kqueue; what that
// leaves open, and how spawn makes up for it, is said in reaper_darwin.go.
//
// One case is out of reach on both: a reaper killed on its own by someone
// else (kill -9 of that pid alone). spawn then kills the reaper's process
// group (the agent and whatever stayed in it), but the descendants the
// agent detached into sessions of their own go to init.
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
	// Cage, for an agent (Start), is what its reaper does before it starts
	// the agent, so that the agent and everything it starts inherit it:
	// join cgroups, set resource limits. Nil does neither.
	Cage *Cage
	// Wrapper, for an agent (Start), says that Path is the sandbox the
	// agent runs in (bubblewrap), not the agent: it runs the agent as its
	// descendant and dies of SIGINT and SIGTERM, taking the sandbox with
	// it at once. Signal then spares it and reaches what runs inside.
	Wrapper bool
}

// Cage is where an agent's process tree is held: the cgroup directories
// its reaper joins (their cgroup.procs), and the resource limits it sets.
type Cage struct {
	Cgroups []string `json:"cgroups,omitempty"`
	Rlimits []Rlimit `json:"rlimits,omitempty"`
}

// Rlimit is one resource limit (setrlimit), soft and hard alike.
type Rlimit struct {
	Resource int    `json:"resource"`
	Limit    uint64 `json:"limit"`
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

// Run runs c to completion and returns its standard output, or nil when
// c.Stdout is set (the output went there). A non-zero exit is an
// *ExitError carrying stderr. Cancelling ctx kills the process tree. Run
// is for short commands such as git, which it starts directly, without a
// reaper: if spawn dies while one runs, it runs to its end.
func Run(ctx context.Context, c Cmd) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	if c.Stdout == nil {
		c.Stdout = &stdout
	}
	c.Stderr = &stderr
	if c.Stdin == nil {
		c.Stdin = strings.NewReader("")
	}
	defer Waited(ctx, c.Path, time.Now())
	p, err := startDirect(c)
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

// waitDelay bounds how long Wait waits, after the process exited, for
// descendants that keep a copied pipe open (a Stdin, Stdout or Stderr that
// is not an *os.File).
const waitDelay = DefaultGrace

// Process is a started child in a process group of its own.
type Process struct {
	cmd    *exec.Cmd
	agent  int
	reaper bool // cmd is an agent's reaper
	// wrapper is the process Signal spares: the sandbox the agent runs in
	// (Cmd.Wrapper); 0 for none.
	wrapper int
	done    chan struct{}
	// mu orders signals against the reaping of the child: once exited is
	// set, the child is (about to be) reaped and its pid may be reused, so
	// no signal is sent any more.
	mu       sync.Mutex
	exited   bool
	killOnce sync.Once
	code     int
	waitErr  error
}

// Start starts the agent c describes under a reaper (see the package
// documentation) and returns once the agent runs. The reaper leads a new
// process group, which the agent joins. The caller must call Wait.
//
// Start needs Main to have been called in this process; without it, Start
// fails. An agent that cannot be executed is an error of Start, as it would
// be for exec.Cmd.Start.
func Start(c Cmd) (*Process, error) {
	return startReaper(c)
}

// StartDirect starts c itself, without a reaper, in a process group of
// its own, and returns once it runs: for spawn's own long-lived helpers,
// which end when their standard input closes (so also when spawn dies).
// The caller must call Wait.
func StartDirect(c Cmd) (*Process, error) {
	return startDirect(c)
}

// Piped is a process StartPiped started, with the ends of its standard
// input and output that its starter keeps.
type Piped struct {
	*Process
	In  *os.File // writes the process's stdin; closing it ends its input
	Out *os.File // reads its stdout
}

// StartPiped is StartDirect with c's stdin and stdout on new pipes (c's
// own Stdin and Stdout are not used): the process holds its ends, and the
// starter writes and reads the others. A process that started but whose
// ends could not be closed is killed, and its start fails.
func StartPiped(c Cmd) (*Piped, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start %s: %w", c.Path, err), inR.Close(), inW.Close())
	}
	c.Stdin, c.Stdout = inR, outW
	p, err := startDirect(c)
	// The process holds its ends now.
	closed := errors.Join(inR.Close(), outW.Close())
	if err == nil && closed != nil {
		p.Kill()
		<-p.Done()
		err = fmt.Errorf("start %s: %w", c.Path, closed)
	}
	if err != nil {
		return nil, errors.Join(err, inW.Close(), outR.Close())
	}
	return &Piped{Process: p, In: inW, Out: outR}, nil
}

// startDirect starts c itself (no reaper) in a new process group.
func startDirect(c Cmd) (*Process, error) {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	return watch(cmd, c.Path, cmd.Process.Pid, false), nil
}

// watch waits for the started cmd in the background.
func watch(cmd *exec.Cmd, name string, agent int, reaper bool) *Process {
	p := &Process{cmd: cmd, agent: agent, reaper: reaper, done: make(chan struct{})}
	go func() {
		// Learn of the exit without reaping, so that no signal can reach
		// a process that reuses the pid.
		werr := waitExited(cmd.Process.Pid)
		if reaper {
			// A reaper killed on its own (kill -9 of its pid) leaves its
			// group behind: the agent on Darwin, where it has no
			// parent-death signal, and its processes that did not leave
			// the group, on both systems. The group's id cannot be
			// reused while the reaper is not reaped.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH only: the reaper emptied it
		}
		p.mu.Lock()
		p.exited = true
		p.mu.Unlock()
		err := cmd.Wait()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			p.code = exitCode(exit)
		case errors.Is(err, exec.ErrWaitDelay):
			p.code = cmd.ProcessState.ExitCode()
		default:
			p.waitErr = fmt.Errorf("wait %s: %w", name, err)
		}
		if werr != nil {
			p.waitErr = errors.Join(p.waitErr, fmt.Errorf("wait %s: %w", name, werr))
		}
		close(p.done)
	}()
	return p
}

// isExit reports whether err only says that the process exited non-zero.
func isExit(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit)
}

// exitCode maps a signal death to the shell's 128+N convention.
func exitCode(e *exec.ExitError) int {
	if ws, ok := e.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return e.ExitCode()
}

// Pid is the process Start started: for an agent, its reaper. It is the id
// of the process group the agent runs in, and the ancestor of every process
// the agent starts; Signal, Terminate and Kill act on the tree below it. It
// stays valid (not reused) until Done is closed.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// AgentPid is the agent's own process id (for Run's commands, the same as
// Pid).
func (p *Process) AgentPid() int { return p.agent }

// Done is closed when the process has exited and been reaped. For an
// agent, every process it started is gone by then too (unless its reaper
// was killed on its own from outside).
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns its exit code (128+N for a
// death by signal N; for an agent, the agent's own). The error is set only
// when waiting itself failed.
func (p *Process) Wait() (int, error) {
	<-p.done
	return p.code, p.waitErr
}

// Signal sends sig to the process's group and to every descendant. It does
// nothing once the process has exited. An agent's reaper takes no notice of
// SIGINT, SIGTERM, SIGHUP and SIGQUIT: they are for the agent and its tree.
// An agent's sandbox (Cmd.Wrapper) is spared, and so is its group, which
// holds nothing else: the agent runs in a session of the sandbox's own.
func (p *Process) Signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return
	}
	pids := Tree(p.Pid())
	if p.wrapper == 0 {
		_ = syscall.Kill(-p.Pid(), sig) // ESRCH only: the group may be gone
	}
	for _, pid := range pids {
		if pid != p.wrapper {
			_ = syscall.Kill(pid, sig) // ESRCH only: it may have exited since the walk
		}
	}
}

// Kill kills the whole tree at once: it freezes every process of it with
// SIGSTOP (so none can fork or be re-parented while it is walked), then sends
// SIGKILL. An agent's reaper is spared: it reaps the tree and exits with the
// agent's status (128+9), so that once Done is closed every process of the
// tree is gone, not left for init to reap. Safe to call more than once, and
// after the process has exited (then it does nothing).
func (p *Process) Kill() {
	p.killOnce.Do(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.exited {
			return
		}
		killTree(p.Pid(), !p.reaper)
		if p.reaper {
			// A stopped reaper (a debugger, a stray SIGSTOP) could not reap.
			_ = syscall.Kill(p.Pid(), syscall.SIGCONT) // ESRCH only
		}
	})
}

// Terminate asks the tree to stop with SIGTERM, waits up to grace for the
// process to exit, then kills the tree. It returns when the process is gone.
func (p *Process) Terminate(grace time.Duration) {
	p.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
	p.Kill()
	<-p.done
}

// killTree freezes and kills every descendant of root and, with self,
// root and its process group too. root must not have been reaped (its pid
// could belong to another process by then).
func killTree(root int, self bool) {
	seen := map[int]bool{}
	if self {
		_ = syscall.Kill(-root, syscall.SIGSTOP)
		_ = syscall.Kill(root, syscall.SIGSTOP)
	}
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
	if self {
		_ = syscall.Kill(-root, syscall.SIGKILL)
		_ = syscall.Kill(root, syscall.SIGKILL)
	}
	for pid := range seen {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// SIGKILL wakes a stopped process; SIGCONT is for any that got away
	// from the walk and must not stay frozen.
	if self {
		_ = syscall.Kill(-root, syscall.SIGCONT)
	}
	for pid := range seen {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// Tree lists the descendants of root (not root itself), read from the
// system's process table: the processes whose parent, or parent's parent
// and so on, is root now. A process whose parent exited is not root's
// descendant any more (Linux hands it to the nearest subreaper, which an
// agent's reaper is; Darwin hands it to launchd).
func Tree(root int) []int {
	procs, err := listProcs()
	if err != nil {
		return nil
	}
	return descendants(procs, root)
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
	for _, dir := range filepath.SplitList(Getenv(env, "PATH")) {
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
