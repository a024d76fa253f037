// Package watcher supervises agents. Run supervises one agent process from
// start to end: it starts it through the exec seam in a process group of its
// own, feeds its stdout to the agent's parser, keeps redacted transcripts,
// enforces the idle and total timeouts with timers (a silent hang is
// caught), stops it gracefully when a budget is hit, and stops the whole
// process tree when the run must end. Supervise runs one agent session, as
// many processes as it takes: it resumes the session to grant escalatable
// permissions and to answer the agent's questions, and enforces turn and
// cost budgets across them.
package watcher

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// Agent is what the watcher needs of an agent CLI: *runners.Claude and
// *runners.Gemini satisfy it.
type Agent interface {
	Command(t runners.Turn) (runners.Command, error)
	Parse(r io.Reader, emit func(runners.Event)) error
}

// Options configure one supervised run.
type Options struct {
	// Env is the environment the agent inherits; the command's own
	// variables are added over it.
	Env []string
	// Transcript and Errlog receive the agent's raw stdout and stderr, line
	// by line, with secrets redacted. Either may be nil.
	Transcript io.Writer
	Errlog     io.Writer
	Redactor   *observability.Redactor
	// IdleTimeout stops the agent when it prints nothing for this long;
	// TotalTimeout when it runs this long. Zero means no limit.
	IdleTimeout  time.Duration
	TotalTimeout time.Duration
	// Grace is how long a stopping agent gets between SIGTERM and SIGKILL.
	Grace time.Duration
	// OnEvent is called for every parsed event, in order, from one
	// goroutine. A non-empty return stops the agent gracefully (SIGINT, so
	// claude can write its result; then Grace; then the tree is killed), and
	// becomes Outcome.Stopped: it is how budgets are enforced.
	OnEvent func(runners.Event) (stop string)
	// Hurry, when closed, kills the agent's tree at once, with no grace
	// period (a second Ctrl-C).
	Hurry <-chan struct{}
}

// Stop reasons.
const (
	StopIdleTimeout  = "idle_timeout"
	StopTotalTimeout = "total_timeout"
	StopCancelled    = "cancelled"
	StopMaxTurns     = "max_turns"
	StopMaxCost      = "max_cost_usd"
)

// Outcome is what happened to one agent process.
type Outcome struct {
	Argv []string
	Dir  string
	// Pid is the agent's process id, which is also its process group id.
	Pid       int
	StartedAt time.Time
	Duration  time.Duration
	ExitCode  int
	Init      *runners.Init
	// Result is the final result event, nil when the agent printed none
	// (it crashed, was killed or was interrupted).
	Result *runners.Result
	// Stopped says why the watcher stopped the agent: one of the Stop*
	// constants, or "" when it ended by itself.
	Stopped string
	// ParseErr is an error reading the agent's stdout.
	ParseErr error
	// StderrTail is the last meaningful line the agent wrote to stderr.
	StderrTail string
}

// Run starts the agent for turn and supervises it until it exits. Cancelling
// ctx stops the agent (SIGTERM to the tree, Grace, SIGKILL) and Run returns
// its outcome with Stopped set to StopCancelled. The error is set only when
// the agent could not be started.
func Run(ctx context.Context, agent Agent, turn runners.Turn, opts Options) (Outcome, error) {
	cmd, err := agent.Command(turn)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Argv: append([]string{cmd.Path}, cmd.Args...), Dir: cmd.Dir}

	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return out, fmt.Errorf("stdout pipe: %w", err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		_ = stdoutR.Close()
		_ = stdoutW.Close()
		return out, fmt.Errorf("stderr pipe: %w", err)
	}
	out.StartedAt = time.Now()
	p, err := proc.Start(proc.Cmd{
		Path:   cmd.Path,
		Args:   cmd.Args,
		Dir:    cmd.Dir,
		Env:    mergeEnv(opts.Env, cmd.Env),
		Stdin:  strings.NewReader(cmd.Stdin),
		Stdout: stdoutW,
		Stderr: stderrW,
	})
	// Our copies of the write ends close now: EOF comes when the agent's do.
	_ = stdoutW.Close()
	_ = stderrW.Close()
	if err != nil {
		_ = stdoutR.Close()
		_ = stderrR.Close()
		return out, err
	}

	var lastOutput atomic.Int64
	out.Pid = p.Pid()
	lastOutput.Store(time.Now().UnixNano())
	touch := func() { lastOutput.Store(time.Now().UnixNano()) }

	limit := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		out.StderrTail = copyLines(stderrR, opts.Errlog, opts.Redactor, touch)
	}()
	go func() {
		defer wg.Done()
		tee := &lineTee{w: opts.Transcript, red: opts.Redactor}
		r := io.TeeReader(activityReader{stdoutR, touch}, tee)
		out.ParseErr = agent.Parse(r, func(ev runners.Event) {
			switch ev.Kind {
			case runners.KindInit:
				out.Init = ev.Init
			case runners.KindResult:
				out.Result = ev.Result
			}
			if opts.OnEvent == nil {
				return
			}
			if reason := opts.OnEvent(ev); reason != "" {
				select {
				case limit <- reason:
				default:
				}
			}
		})
		// Whatever the parser left unread still belongs in the transcript.
		_, _ = io.Copy(io.Discard, r)
		tee.flush()
	}()

	stopped := supervise(ctx, p, opts, &lastOutput, limit)
	out.Stopped = stopped
	out.ExitCode, _ = p.Wait()
	// Descendants may still hold the pipes: after the agent is gone, they
	// have the grace period to finish, then the read ends are closed.
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(grace(opts)):
		_ = stdoutR.Close()
		_ = stderrR.Close()
		<-drained
	}
	_ = stdoutR.Close()
	_ = stderrR.Close()
	out.Duration = time.Since(out.StartedAt)
	return out, nil
}

func grace(opts Options) time.Duration {
	if opts.Grace > 0 {
		return opts.Grace
	}
	return 3 * time.Second
}

// supervise waits for the process to exit, stopping it when ctx is cancelled
// or a timeout fires. Timeouts are timers: they fire on silence too.
func supervise(ctx context.Context, p *proc.Process, opts Options, lastOutput *atomic.Int64, limit <-chan string) string {
	var total <-chan time.Time
	if opts.TotalTimeout > 0 {
		t := time.NewTimer(opts.TotalTimeout)
		defer t.Stop()
		total = t.C
	}
	var idle <-chan time.Time
	var idleTimer *time.Timer
	if opts.IdleTimeout > 0 {
		idleTimer = time.NewTimer(opts.IdleTimeout)
		defer idleTimer.Stop()
		idle = idleTimer.C
	}
	stop := func(reason string) string {
		done := make(chan struct{})
		go func() {
			p.Terminate(grace(opts))
			close(done)
		}()
		select {
		case <-done:
		case <-opts.Hurry:
			p.Kill()
			<-done
		}
		return reason
	}
	for {
		select {
		case <-opts.Hurry:
			p.Kill()
			<-p.Done()
			return StopCancelled
		case reason := <-limit:
			// SIGINT first: claude then writes its result event.
			p.Signal(syscall.SIGINT)
			select {
			case <-p.Done():
				proc.KillTree(p.Pid())
				return reason
			case <-time.After(grace(opts)):
			}
			return stop(reason)
		case <-p.Done():
			// The agent is gone; its descendants must not outlive it.
			proc.KillTree(p.Pid())
			return ""
		case <-ctx.Done():
			return stop(StopCancelled)
		case <-total:
			return stop(StopTotalTimeout)
		case <-idle:
			silent := time.Since(time.Unix(0, lastOutput.Load()))
			if silent >= opts.IdleTimeout {
				return stop(StopIdleTimeout)
			}
			idleTimer.Reset(opts.IdleTimeout - silent)
		}
	}
}

// copyLines copies r to w line by line (secrets redacted), calling touch on
// every read, until EOF or a read error. It returns the last non-empty
// line that does not look like a stack frame (redacted, at most 300 bytes):
// what a crashed agent said last.
func copyLines(r io.Reader, w io.Writer, red *observability.Redactor, touch func()) string {
	br := bufio.NewReaderSize(r, 64<<10)
	var last string
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			touch()
			redacted := red.Bytes(line)
			if w != nil {
				if _, werr := w.Write(redacted); werr != nil {
					w = nil
				}
			}
			if t := strings.TrimSpace(string(redacted)); t != "" && !strings.HasPrefix(t, "at ") {
				last = t[:min(len(t), 300)]
			}
		}
		if err != nil {
			return last
		}
	}
}

// activityReader calls touch whenever the agent printed something.
type activityReader struct {
	r     io.Reader
	touch func()
}

func (a activityReader) Read(b []byte) (int, error) {
	n, err := a.r.Read(b)
	if n > 0 {
		a.touch()
	}
	if errors.Is(err, os.ErrClosed) {
		err = io.EOF
	}
	return n, err
}

// lineTee writes what passes through it to w, a whole line at a time, with
// secrets redacted: a secret is never split across two writes.
type lineTee struct {
	w   io.Writer
	red *observability.Redactor
	buf []byte
}

func (t *lineTee) Write(b []byte) (int, error) {
	if t.w == nil {
		return len(b), nil
	}
	// Only the new bytes are searched: a line of many megabytes arrives in
	// many writes, and searching the whole buffer each time is quadratic.
	i := bytes.LastIndexByte(b, '\n')
	if i < 0 {
		t.buf = append(t.buf, b...)
		return len(b), nil
	}
	t.buf = append(t.buf, b[:i+1]...)
	_, _ = t.w.Write(t.red.Bytes(t.buf))
	t.buf = append(t.buf[:0], b[i+1:]...)
	return len(b), nil
}

func (t *lineTee) flush() {
	if t.w != nil && len(t.buf) > 0 {
		_, _ = t.w.Write(t.red.Bytes(t.buf))
		t.buf = nil
	}
}

// mergeEnv returns base with extra's variables added or replaced.
func mergeEnv(base, extra []string) []string {
	out := make([]string, 0, len(base)+len(extra))
	override := map[string]bool{}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		override[k] = true
	}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !override[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
