// Package mcpserver is `spawn mcp`: spawn as a Model Context Protocol
// server, for a host LLM (Claude Code, the Gemini CLI, any MCP client) that
// hands tasks to spawn as tool calls.
//
// A run outlives the call that started it and the server itself: spawn_start
// starts a detached run (spawn run --detach) and returns its id at once;
// spawn_status, spawn_wait and spawn_result read it from the run registry,
// as spawn ps and spawn show do, so a host that restarts finds its runs
// again with spawn_list. No call blocks for long unless asked to:
// spawn_wait waits at most a given number of seconds (50 by default, under
// every host's tool timeout), and spawn_run, which blocks until the run
// ends, is for hosts that cannot poll. Both send progress notifications
// while they wait, when the client gave a progress token.
//
// Bad input (an unknown id, an empty task) is a tool error (isError) whose
// text says what is wrong; answers are sized for a model's context: never a
// transcript, a result trimmed under maxResultBytes.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// Options is what the server needs from the spawn binary around it.
type Options struct {
	// Dir is the repository a tool works on when its call names none: the
	// server's working directory.
	Dir string
	// Version is spawn's version, told to the client.
	Version string
	// OpenRepo opens the repository holding dir and repairs its abandoned
	// runs (the CLI's openRepo).
	OpenRepo func(ctx context.Context, dir string) (*runs.Repo, error)
	// Start starts a detached run and returns its id once the run exists
	// (spawn run --detach); an input error is a usage *fault.Error.
	Start func(ctx context.Context, req StartRequest) (string, error)
	// LastAction says a live run's last tool call as spawn ps does
	// ("Edit main.go"); nil says the tool's name alone.
	LastAction func(runs.Live) string
	// RenderEvents renders events as spawn logs does, one line each; nil
	// renders the kind and text of each.
	RenderEvents func([]observability.Event) []string
	// Poll is how often a waiting tool looks at the run; 0 means
	// DefaultPoll.
	Poll time.Duration
	// ProgressEvery is how often a waiting tool sends a progress
	// notification; 0 means DefaultProgressEvery.
	ProgressEvery time.Duration
	// CancelWait is how long spawn_cancel waits for the run to end after
	// the signal; 0 means DefaultCancelWait.
	CancelWait time.Duration
}

// Defaults of Options.
const (
	DefaultPoll          = 250 * time.Millisecond
	DefaultProgressEvery = 10 * time.Second // under the 15 s a host may wait for a sign of life
	DefaultCancelWait    = 30 * time.Second
	// DefaultWaitSeconds is spawn_wait's wait when the call gives none:
	// under a minute, so that no call lasts longer.
	DefaultWaitSeconds = 50
	// MaxWaitSeconds bounds spawn_wait's wait.
	MaxWaitSeconds = 600
)

// StartRequest is a run to start: spawn run's options.
type StartRequest struct {
	Repo         string // a directory in the repository
	Task         string
	Mode         string
	Base         string
	Branch       string
	Config       string
	Model        string
	Coder        string
	Reviewers    []string
	IdleTimeout  time.Duration
	TotalTimeout time.Duration
}

// server holds the tools' shared state.
type server struct {
	opts Options
}

// New returns the MCP server with spawn's tools.
func New(opts Options) *mcp.Server {
	if opts.Poll == 0 {
		opts.Poll = DefaultPoll
	}
	if opts.ProgressEvery == 0 {
		opts.ProgressEvery = DefaultProgressEvery
	}
	if opts.CancelWait == 0 {
		opts.CancelWait = DefaultCancelWait
	}
	s := &server{opts: opts}
	srv := mcp.NewServer(&mcp.Implementation{Name: "spawn", Title: "spawn", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "spawn hands a coding task to a coder LLM in a git-worktree sandbox branch, has another LLM review it, and records everything. " +
			"Start a run with spawn_start (it returns an id at once), then call spawn_wait (up to 50 s per call) until it says done, and read spawn_result. " +
			"Runs go on when this server stops: spawn_list finds them again. The work is on the run's branch; nothing touches your working tree.",
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_start", Title: "Start a spawn run",
		Description: "Start a spawn run in the background and return its id at once. The coder works on its own branch; follow the run with spawn_wait or spawn_status and read spawn_result when it is done."}, s.start)
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_status", Title: "A run's status",
		Description: "What a run is doing now: its state, phase, review round, coder turn, cost, elapsed time, last action and last few events. Returns at once."}, s.status)
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_wait", Title: "Wait for a run",
		Description: fmt.Sprintf("Wait up to `seconds` (default %d) for a run to end. Returns its result when it ended (done: true), else its status; call again to keep waiting.", DefaultWaitSeconds)}, s.wait)
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_result", Title: "A run's result",
		Description: "The outcome of a run that ended: verdict, exit code, branch, commits, open and resolved review findings, PR URL, cost and the path of its full record."}, s.result)
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_cancel", Title: "Stop a run",
		Description: "Stop a running run gracefully: the agents are stopped, their work is committed on the run's branch, and the run ends interrupted (spawn resume continues it). Returns the result."}, s.cancel)
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_list", Title: "List runs",
		Description: "The repository's runs, newest first: id, state, verdict, branch and task. Runs started before this server started are listed too."}, s.list)
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_send", Title: "Message a running coder",
		Description: "Send a message to a running run's coder (a correction, a hint); it reads it between its steps."}, s.send)
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_run", Title: "Run and wait",
		Description: "Start a run and wait until it ends, then return its result. For hosts that cannot poll: a run takes minutes; prefer spawn_start and spawn_wait."}, s.run)
	return srv
}

// Serve runs the server on t until the client goes away or ctx is
// cancelled. Runs it started go on.
func Serve(ctx context.Context, opts Options, t mcp.Transport) error {
	err := New(opts).Run(ctx, t)
	if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcp server: %w", err)
	}
	return nil
}

// repo opens the repository a call names, or the server's.
func (s *server) repo(ctx context.Context, dir string) (*runs.Repo, error) {
	if dir == "" {
		dir = s.opts.Dir
	}
	return s.opts.OpenRepo(ctx, dir)
}

// find resolves a call's run reference.
func (s *server) find(ctx context.Context, dir, ref string) (*runs.Repo, runs.Entry, error) {
	if ref == "" {
		return nil, runs.Entry{}, errors.New(`no run given: pass "id", a run id from spawn_start or spawn_list, or "last"`)
	}
	repo, err := s.repo(ctx, dir)
	if err != nil {
		return nil, runs.Entry{}, err
	}
	e, err := repo.Find(ref)
	if err != nil {
		return nil, runs.Entry{}, err
	}
	return repo, e, nil
}
