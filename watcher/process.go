// Package watcher supervises agents. Run supervises one agent process from
// start to end: it starts it through the exec seam (under proc's reaper, in
// a process group of its own), follows its stdout and stderr, which it
// writes to private files, feeds stdout to the agent's parser, keeps
// redacted transcripts, enforces the idle and total timeouts with timers (a
// silent hang is caught), stops it gracefully when a budget is hit, and
// stops the whole process tree when the run must end; nothing the agent
// started outlives its process. Supervise runs one agent session, as many
// processes as it takes: it resumes the session to grant escalatable
// permissions and to answer the agent's questions, and enforces turn and
// cost budgets across them.
package watcher

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/pipe"
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
	// by line, with secrets redacted. Either may be nil. The caller owns
	// them; after a write error, Run writes no more to that one and reports
	// the error in Outcome.WatchErr.
	Transcript io.Writer
	Errlog     io.Writer
	Redactor   *observability.Redactor
	// IdleTimeout stops the agent when it prints nothing for this long;
	// TotalTimeout when it runs this long. Zero means no limit.
	IdleTimeout  time.Duration
	TotalTimeout time.Duration
	// ToolTimeout replaces IdleTimeout while a tool call is in flight (a
	// tool use without its result yet): a test suite that prints nothing
	// for minutes is not a silent agent. The agent is stopped with
	// StopToolTimeout when it stays silent this long with a tool running,
	// plus the command's ToolGrace (a CLI that stops its own tool calls at
	// ToolTimeout is given the time to say so; see runners.Turn). Zero
	// means IdleTimeout applies to tool calls too.
	ToolTimeout time.Duration
	// Grace is how long a stopping agent gets between SIGTERM and SIGKILL.
	Grace time.Duration
	// OnEvent is called for every parsed event, in order, from one
	// goroutine (not the one that parses the stream: the two run side by
	// side), and for the last time before Run returns. A non-empty return
	// stops the agent gracefully (SIGINT, so the CLI ends its turn itself;
	// then Grace; then the tree is killed), and
	// becomes Outcome.Stopped: it is how budgets are enforced.
	OnEvent func(runners.Event) (stop StopReason)
	// Hurry, when closed, kills the agent's tree at once, with no grace
	// period (a second Ctrl-C).
	Hurry <-chan struct{}
	// Watch, when set, is asked a few times a second while the agent runs
	// whether one of its limits is reached (its processes, memory or
	// disk); a non-empty answer stops it as OnEvent's does, and what it
	// says becomes Outcome.Limit.
	Watch func() (StopReason, string)
}

// StopReason says why the watcher stopped an agent.
type StopReason string

// The stop reasons; "" means the agent ended by itself.
const (
	StopIdleTimeout  StopReason = "idle_timeout"
	StopToolTimeout  StopReason = "tool_timeout"
	StopTotalTimeout StopReason = "total_timeout"
	StopCancelled    StopReason = "cancelled"
	StopMaxTurns     StopReason = "max_turns"
	StopMaxCost      StopReason = "max_cost_usd"
	StopMaxProcesses StopReason = "max_processes"
	StopMaxMemory    StopReason = "max_memory"
	StopMaxDisk      StopReason = "max_disk"
)

// maxPiped bounds the events of an agent that wait to be handled
// (Options.OnEvent) while its stream is parsed.
const maxPiped = 256

// watchEvery is how often Options.Watch is asked.
const watchEvery = 250 * time.Millisecond

// Outcome is what happened to one agent process.
type Outcome struct {
	Argv []string
	Dir  string
	// Pid is the process spawn started and signals: the agent's reaper
	// (see internal/proc), the leader of the agent's process group (so
	// also its group id) and the ancestor of everything the agent starts.
	Pid int
	// AgentPid is the agent CLI's own process id, a child of Pid.
	AgentPid  int
	StartedAt time.Time
	Duration  time.Duration
	ExitCode  int
	Init      *runners.Init
	// Result is the final result event, nil when the agent printed none
	// (it crashed, was killed or was interrupted).
	Result *runners.Result
	// Usage is what the process used itself (runners.Result.Own): set by
	// Supervise, which knows its session's earlier total; zero from Run.
	Usage runners.Usage
	// Stopped says why the watcher stopped the agent: one of the Stop*
	// constants, or "" when it ended by itself.
	Stopped StopReason
	// ParseErr is an error reading the agent's stdout.
	ParseErr error
	// WatchErr is a failure of the watcher's own that did not keep the
	// agent from running: writing Transcript or Errlog (the first write
	// error of each), following or releasing the files the agent wrote to,
	// or waiting for the process. The outcome stands; the transcripts may
	// be incomplete.
	WatchErr error
	// StderrTail is the last meaningful line the agent wrote to stderr.
	StderrTail string
	// Tool is, when Stopped is StopToolTimeout, the tool call that was
	// running: a shell tool's command, else the tool's name.
	Tool string
	// Limit says, when Watch stopped the agent, what reached the limit.
	Limit string
}

// Run starts the agent for turn and supervises it until it exits. Cancelling
// ctx stops the agent (SIGTERM to the tree, Grace, SIGKILL) and Run returns
// its outcome with Stopped set to StopCancelled. The error is set only when
// the agent could not be started.
//
// The agent runs under proc's reaper: when Run returns, the agent and every
// process it started are gone, whether it exited, crashed, timed out or was
// stopped. Its stdout and stderr are private temporary files (see
// newOutputFile) that Run follows as they grow and frees before it returns;
// the caller owns Transcript and Errlog and closes them.
//
// A turn without a ToolTimeout of its own gets opts.ToolTimeout: the agent
// is told how long one tool call may run (see runners.Turn).
func Run(ctx context.Context, agent Agent, turn runners.Turn, opts Options) (Outcome, error) {
	if turn.ToolTimeout == 0 {
		turn.ToolTimeout = opts.ToolTimeout
	}
	cmd, err := agent.Command(turn)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Argv: append([]string{cmd.Path}, cmd.Args...), Dir: cmd.Dir}

	stdout, err := newOutputFile("stdout")
	if err != nil {
		return out, err
	}
	stderr, err := newOutputFile("stderr")
	if err != nil {
		return out, errors.Join(err, stdout.close())
	}
	out.StartedAt = time.Now()
	p, err := proc.Start(proc.Cmd{
		Path:    cmd.Path,
		Args:    cmd.Args,
		Dir:     cmd.Dir,
		Env:     mergeEnv(opts.Env, cmd.Env),
		Stdin:   strings.NewReader(cmd.Stdin),
		Stdout:  stdout.w,
		Stderr:  stderr.w,
		Cage:    cmd.Cage,
		Wrapper: cmd.Wrapper,
	})
	// The agent holds its own descriptors: the watcher's close now.
	closeErr := errors.Join(stdout.closeWriter(), stderr.closeWriter())
	if err != nil {
		return out, errors.Join(err, closeErr, stdout.close(), stderr.close())
	}

	var lastOutput atomic.Int64
	out.Pid, out.AgentPid = p.Pid(), p.AgentPid()
	lastOutput.Store(time.Now().UnixNano())
	touch := func() { lastOutput.Store(time.Now().UnixNano()) }

	limit := make(chan StopReason, 1)
	tools := newInFlight()
	var wg sync.WaitGroup
	var errlogErr, transcriptErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		out.StderrTail, errlogErr = copyLines(stderr.follow(p.Done(), touch), opts.Errlog, opts.Redactor)
	}()
	go func() {
		defer wg.Done()
		tee := &lineTee{w: opts.Transcript, red: opts.Redactor}
		r := io.TeeReader(stdout.follow(p.Done(), touch), tee)
		// The events are handled (opts.OnEvent) on a goroutine of their
		// own while the stream is parsed; the calls in flight are known
		// as soon as they are parsed (the tool timeout).
		var events *pipe.Pipe[runners.Event]
		if opts.OnEvent != nil {
			events = pipe.New(maxPiped, func(ev runners.Event) {
				if reason := opts.OnEvent(ev); reason != "" {
					select {
					case limit <- reason:
					default:
					}
				}
			})
		}
		out.ParseErr = agent.Parse(r, func(ev runners.Event) {
			switch ev.Kind {
			case runners.KindInit:
				out.Init = ev.Init
			case runners.KindResult:
				out.Result = ev.Result
			case runners.KindToolUse:
				tools.start(ev.ToolUse)
			case runners.KindToolResult:
				tools.end(ev.ToolResult.ToolUseID)
			}
			if events != nil {
				events.Put(ev)
			}
		})
		if events != nil {
			events.Close()
		}
		// Whatever the parser left unread still belongs in the transcript.
		_, rerr := io.Copy(io.Discard, r)
		tee.flush()
		transcriptErr = errors.Join(rerr, tee.err)
	}()

	out.Stopped, out.Limit = supervise(ctx, p, opts, cmd.ToolGrace, &lastOutput, limit, tools)
	if out.Stopped == StopToolTimeout {
		out.Tool = tools.running()
	}
	code, werr := p.Wait()
	out.ExitCode = code
	// Nothing writes to the files any more: the readers reach their end.
	wg.Wait()
	if out.Stopped == "" {
		// A budget the last events crossed after the agent had already
		// ended (its result reports the cost) still ends the session.
		select {
		case reason := <-limit:
			out.Stopped = reason
		default:
		}
	}
	out.Duration = time.Since(out.StartedAt)
	out.WatchErr = errors.Join(werr, closeErr, transcriptErr, errlogErr, stdout.close(), stderr.close())
	return out, nil
}

func grace(opts Options) time.Duration {
	if opts.Grace > 0 {
		return opts.Grace
	}
	return proc.DefaultGrace
}

// supervise waits for the process to exit, stopping it when ctx is cancelled
// or a timeout fires. Timeouts are timers: they fire on silence too. The
// silence allowed is opts.ToolTimeout plus toolGrace while tools has a call
// in flight, opts.IdleTimeout otherwise.
func supervise(ctx context.Context, p *proc.Process, opts Options, toolGrace time.Duration, lastOutput *atomic.Int64, limit <-chan StopReason, tools *inFlight) (StopReason, string) {
	var total <-chan time.Time
	if opts.TotalTimeout > 0 {
		t := time.NewTimer(opts.TotalTimeout)
		defer t.Stop()
		total = t.C
	}
	var idle <-chan time.Time
	var idleTimer *time.Timer
	// allowed is the silence allowed now, and why the agent is stopped
	// after it.
	allowed := func() (time.Duration, StopReason) {
		if opts.ToolTimeout > 0 && tools.busy() {
			return opts.ToolTimeout + toolGrace, StopToolTimeout
		}
		return opts.IdleTimeout, StopIdleTimeout
	}
	if opts.IdleTimeout > 0 {
		idleTimer = time.NewTimer(opts.IdleTimeout)
		defer idleTimer.Stop()
		idle = idleTimer.C
	}
	var watch <-chan time.Time
	if opts.Watch != nil {
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		watch = t.C
	}
	stop := func(reason StopReason) StopReason {
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
			return StopCancelled, ""
		case reason := <-limit:
			// SIGINT first: the CLI ends its turn itself (claude exits 0).
			p.Signal(syscall.SIGINT)
			t := time.NewTimer(grace(opts))
			select {
			case <-p.Done():
				t.Stop()
				return reason, ""
			case <-t.C:
			}
			return stop(reason), ""
		case <-p.Done():
			// The agent is gone, and its reaper took its descendants along.
			return "", ""
		case <-ctx.Done():
			return stop(StopCancelled), ""
		case <-total:
			return stop(StopTotalTimeout), ""
		case <-watch:
			if reason, what := opts.Watch(); reason != "" {
				return stop(reason), what
			}
		case <-idle:
			silent := time.Since(time.Unix(0, lastOutput.Load()))
			d, reason := allowed()
			if silent >= d {
				return stop(reason), ""
			}
			idleTimer.Reset(d - silent)
		case <-tools.changed:
			// A tool call started or ended: the silence allowed changed.
			if idleTimer != nil {
				d, _ := allowed()
				idleTimer.Reset(max(d-time.Since(time.Unix(0, lastOutput.Load())), 0))
			}
		}
	}
}

// copyLines copies r to w line by line (secrets redacted) until EOF or a
// read error. It returns the last non-empty line that does not look like a
// stack frame (redacted, at most 300 bytes): what a crashed agent said last;
// and the read error or the first write error (after which w is left alone,
// and reading goes on for the last line).
func copyLines(r io.Reader, w io.Writer, red *observability.Redactor) (string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var last string
	var werr error
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			redacted := red.Bytes(line)
			if w != nil {
				if _, werr = w.Write(redacted); werr != nil {
					w = nil
				}
			}
			if t := strings.TrimSpace(string(redacted)); t != "" && !strings.HasPrefix(t, "at ") {
				last = t[:min(len(t), 300)]
			}
		}
		if errors.Is(err, io.EOF) {
			return last, werr
		}
		if err != nil {
			return last, errors.Join(err, werr)
		}
	}
}

// lineTee writes what passes through it to w, a whole line at a time, with
// secrets redacted: a secret is never split across two writes. The lines
// are redacted and written on a goroutine of their own, in order, while
// the agent's stream is read and parsed (writing the transcript cost a
// tenth of reading a streaming agent); at most teeQueue writes wait for
// it. flush writes what is left and waits for them.
type lineTee struct {
	w   io.Writer
	red *observability.Redactor
	buf []byte // lines not handed to the writer yet, and the start of the next
	// lines takes whole lines to the writer, spare brings buffers back;
	// done is closed when the writer has written every line. All three
	// are made on the first write.
	lines chan []byte
	spare chan []byte
	done  chan struct{}
	// err is the first write error, after which w is left alone; it is
	// set by the writer, and read after flush.
	err error
}

// teeQueue bounds the writes a lineTee's writer has not done yet.
const teeQueue = 4

// maxSpare bounds the buffers a lineTee reuses: a huge line's is dropped.
const maxSpare = 1 << 20

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
	t.send()
	t.buf = append(t.buf, b[i+1:]...)
	return len(b), nil
}

// send hands buf to the writer, which it starts on the first call, and
// takes a spare buffer.
func (t *lineTee) send() {
	if t.lines == nil {
		t.lines, t.spare, t.done = make(chan []byte, teeQueue), make(chan []byte, teeQueue+1), make(chan struct{})
		go t.writer()
	}
	t.lines <- t.buf
	select {
	case b := <-t.spare:
		t.buf = b[:0]
	default:
		t.buf = nil
	}
}

// writer redacts and writes the lines it is handed until flush.
func (t *lineTee) writer() {
	defer close(t.done)
	for b := range t.lines {
		if t.err == nil {
			if _, err := t.w.Write(t.red.Bytes(b)); err != nil {
				t.err = err
			}
		}
		if cap(b) <= maxSpare {
			select {
			case t.spare <- b:
			default:
			}
		}
	}
}

// flush writes what is left of a last line without a newline, and
// returns once every line is written (or failed: see err).
func (t *lineTee) flush() {
	if t.w != nil && len(t.buf) > 0 {
		t.send()
		t.buf = nil
	}
	if t.lines != nil {
		close(t.lines)
		<-t.done
		t.lines = nil
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

// inFlight is the set of an agent's tool calls that have no result yet,
// shared between the reader of its output and the supervising loop.
type inFlight struct {
	mu    sync.Mutex
	calls map[string]*runners.ToolUse // by tool use id
	order []string                    // ids, oldest first
	// changed receives a value (without blocking: it holds one) when a
	// call starts or ends.
	changed chan struct{}
}

func newInFlight() *inFlight {
	return &inFlight{calls: map[string]*runners.ToolUse{}, changed: make(chan struct{}, 1)}
}

func (f *inFlight) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// start records a tool call as running.
func (f *inFlight) start(tu *runners.ToolUse) {
	if tu == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.calls[tu.ID]; !ok {
		f.order = append(f.order, tu.ID)
	}
	f.calls[tu.ID] = tu
	f.notify()
}

// end records that the call id has its result.
func (f *inFlight) end(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.calls, id)
	f.order = slices.DeleteFunc(f.order, func(x string) bool { return x == id })
	f.notify()
}

// busy reports whether a tool call is running.
func (f *inFlight) busy() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.order) > 0
}

// running is what the oldest running tool call runs (see toolCommand), ""
// when none runs. It is worked out here, not for every call as it starts:
// a session makes thousands of calls, and this is asked of few.
func (f *inFlight) running() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.order) == 0 {
		return ""
	}
	return toolCommand(f.calls[f.order[0]])
}

// toolCommand is a shell tool call's command, or the tool's name for any
// other tool.
func toolCommand(tu *runners.ToolUse) string {
	if cmd := strings.TrimSpace(tu.Command()); cmd != "" {
		return cmd
	}
	if tu.Name == "" {
		return "a tool"
	}
	return tu.Name
}
