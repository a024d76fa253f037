package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// StartInput is spawn_start's and spawn_run's input: spawn run's options.
type StartInput struct {
	Task         string   `json:"task" jsonschema:"the coding task, as you would tell a colleague: what to change and how to know it works"`
	Mode         string   `json:"mode,omitempty" jsonschema:"solo (coder only), sequential or pingpong (coder and reviewer rounds), github; default: the repository's configuration, pingpong out of the box"`
	Repo         string   `json:"repo,omitempty" jsonschema:"a directory in the git repository to work on; default: the server's working directory"`
	Base         string   `json:"base,omitempty" jsonschema:"the commit or ref the run's branch starts from; default: HEAD"`
	Branch       string   `json:"branch,omitempty" jsonschema:"the run's branch; default: spawn/<id>/<slug>"`
	Config       string   `json:"config,omitempty" jsonschema:"a spawn-team.toml configuration file; default: the repository's"`
	Coder        string   `json:"coder,omitempty" jsonschema:"the coder's agent CLI: claude, codex or gemini; default: the repository's configuration, claude out of the box"`
	Reviewers    []string `json:"reviewers,omitempty" jsonschema:"the review board's agent CLIs, one seat each, each of another model family than the coder's (claude, codex, gemini); default: the repository's configuration, gemini out of the box"`
	Model        string   `json:"model,omitempty" jsonschema:"the coder's model (its CLI's --model); default: the configuration's"`
	IdleTimeout  string   `json:"idle_timeout,omitempty" jsonschema:"stop an agent that prints nothing for this long, a Go duration such as 5m"`
	TotalTimeout string   `json:"total_timeout,omitempty" jsonschema:"stop an agent that runs this long, a Go duration such as 30m"`
}

// RunInput names a run.
type RunInput struct {
	ID   string `json:"id" jsonschema:"the run: its id, a unique prefix of it, or last"`
	Repo string `json:"repo,omitempty" jsonschema:"a directory in the run's git repository; default: the server's working directory"`
}

// WaitInput is spawn_wait's input.
type WaitInput struct {
	ID      string `json:"id" jsonschema:"the run: its id, a unique prefix of it, or last"`
	Repo    string `json:"repo,omitempty" jsonschema:"a directory in the run's git repository; default: the server's working directory"`
	Seconds int    `json:"seconds,omitempty" jsonschema:"how long to wait at most, in seconds; default 50, at most 600"`
}

// ListInput is spawn_list's input.
type ListInput struct {
	Repo  string `json:"repo,omitempty" jsonschema:"a directory in the git repository; default: the server's working directory"`
	Limit int    `json:"limit,omitempty" jsonschema:"list at most this many runs, newest first; default 20"`
}

// SendInput is spawn_send's input.
type SendInput struct {
	ID   string `json:"id" jsonschema:"the running run: its id, a unique prefix of it, or last"`
	Text string `json:"text" jsonschema:"the message for the coder"`
	Repo string `json:"repo,omitempty" jsonschema:"a directory in the run's git repository; default: the server's working directory"`
}

// Started is spawn_start's answer.
type Started struct {
	ID   string `json:"id" jsonschema:"the run's id"`
	Next string `json:"next" jsonschema:"what to call next"`
}

// Waited is spawn_wait's answer: the result when the run ended, else its
// status.
type Waited struct {
	Done   bool    `json:"done" jsonschema:"the run has ended; result holds its outcome"`
	Status *Status `json:"status,omitempty" jsonschema:"what the run is doing, while it runs"`
	Result *Result `json:"result,omitempty" jsonschema:"the run's outcome, once it ended"`
}

// Listed is spawn_list's answer.
type Listed struct {
	Runs    []ListedRun `json:"runs"`
	Omitted int         `json:"omitted,omitempty" jsonschema:"older runs left out by the limit"`
}

// ListedRun is one run of spawn_list.
type ListedRun struct {
	ID        string    `json:"id"`
	State     string    `json:"state" jsonschema:"running, finished, abandoned (its spawn died) or broken"`
	Status    string    `json:"status,omitempty"`
	Verdict   string    `json:"verdict,omitempty"`
	ExitCode  int       `json:"exit_code"`
	Mode      string    `json:"mode,omitempty"`
	Branch    string    `json:"branch,omitempty"`
	Task      string    `json:"task,omitempty" jsonschema:"the task's first line"`
	StartedAt time.Time `json:"started_at,omitzero"`
}

// SentMessage is spawn_send's answer.
type SentMessage struct {
	ID        string `json:"id"`
	Delivered bool   `json:"delivered" jsonschema:"the coder got the message; false: it is queued and reaches the coder at its next step"`
}

func (s *server) start(ctx context.Context, _ *mcp.CallToolRequest, in StartInput) (*mcp.CallToolResult, Started, error) {
	id, err := s.startRun(ctx, in)
	if err != nil {
		return nil, Started{}, err
	}
	return nil, Started{ID: id, Next: fmt.Sprintf("call spawn_wait with id %q until done is true, then read the result; spawn_status says what it does now", id)}, nil
}

// startRun checks in and starts its run detached.
func (s *server) startRun(ctx context.Context, in StartInput) (string, error) {
	if strings.TrimSpace(in.Task) == "" {
		return "", errors.New(`"task" is empty: say what the coder should do, e.g. "add a /healthz endpoint that returns 200"`)
	}
	req := StartRequest{Repo: in.Repo, Task: in.Task, Mode: in.Mode, Base: in.Base, Branch: in.Branch, Config: in.Config, Model: in.Model, Coder: in.Coder, Reviewers: in.Reviewers}
	if req.Repo == "" {
		req.Repo = s.opts.Dir
	}
	for _, d := range []struct {
		name string
		val  string
		dst  *time.Duration
	}{{"idle_timeout", in.IdleTimeout, &req.IdleTimeout}, {"total_timeout", in.TotalTimeout, &req.TotalTimeout}} {
		if d.val == "" {
			continue
		}
		v, err := time.ParseDuration(d.val)
		if err != nil || v <= 0 {
			return "", fmt.Errorf("%q is %q, not a duration: give one such as 5m or 30m", d.name, d.val)
		}
		*d.dst = v
	}
	return s.opts.Start(ctx, req)
}

func (s *server) status(ctx context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, Status, error) {
	_, e, err := s.find(ctx, in.Repo, in.ID)
	if err != nil {
		return nil, Status{}, err
	}
	st, err := s.readStatus(e, time.Now())
	return nil, st, err
}

func (s *server) wait(ctx context.Context, req *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, Waited, error) {
	secs := in.Seconds
	switch {
	case secs < 0 || secs > MaxWaitSeconds:
		return nil, Waited{}, fmt.Errorf(`"seconds" is %d: give 1 to %d (or nothing for %d)`, secs, MaxWaitSeconds, DefaultWaitSeconds)
	case secs == 0:
		secs = DefaultWaitSeconds
	}
	repo, e, err := s.find(ctx, in.Repo, in.ID)
	if err != nil {
		return nil, Waited{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second)
	defer cancel()
	e, err = s.await(wctx, req, repo, e)
	if ctx.Err() != nil {
		return nil, Waited{}, fmt.Errorf("the wait was cancelled; run %s goes on: %w", e.ID, ctx.Err())
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, Waited{}, err
	}
	return s.waited(e)
}

// waited is the answer about run e after a wait.
func (s *server) waited(e runs.Entry) (*mcp.CallToolResult, Waited, error) {
	if e.State != runs.StateRunning {
		res, err := readResult(e, time.Now())
		if err != nil {
			return nil, Waited{}, err
		}
		return nil, Waited{Done: true, Result: &res}, nil
	}
	st, err := s.readStatus(e, time.Now())
	if err != nil {
		return nil, Waited{}, err
	}
	return nil, Waited{Status: &st}, nil
}

// await waits until run e is no longer running or ctx ends, sending
// progress notifications when req has a progress token. It returns the
// run as last seen.
func (s *server) await(ctx context.Context, req *mcp.CallToolRequest, repo *runs.Repo, e runs.Entry) (runs.Entry, error) {
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	began := time.Now()
	// The first notification goes out at once: a host sees the wait began.
	nextProgress := began
	return repo.Await(ctx, e, s.opts.Poll, func(e runs.Entry) error {
		if token == nil || time.Now().Before(nextProgress) {
			return nil
		}
		nextProgress = time.Now().Add(s.opts.ProgressEvery)
		return s.notify(ctx, req, token, e, began)
	})
}

// notify sends a progress notification saying what run e is doing.
func (s *server) notify(ctx context.Context, req *mcp.CallToolRequest, token any, e runs.Entry, began time.Time) error {
	msg := "run " + e.ID + " is starting"
	if st, err := s.readStatus(e, time.Now()); err == nil {
		msg = st.line()
	}
	err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: token,
		Progress:      time.Since(began).Seconds(),
		Message:       msg,
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("send a progress notification: %w", err)
	}
	return nil
}

func (s *server) result(ctx context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, Result, error) {
	_, e, err := s.find(ctx, in.Repo, in.ID)
	if err != nil {
		return nil, Result{}, err
	}
	if e.State == runs.StateRunning {
		return nil, Result{}, fmt.Errorf("run %s is still running; call spawn_wait with its id until done is true (spawn_status says what it does now)", e.ID)
	}
	res, err := readResult(e, time.Now())
	return nil, res, err
}

func (s *server) cancel(ctx context.Context, req *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, Waited, error) {
	repo, e, err := s.find(ctx, in.Repo, in.ID)
	if err != nil {
		return nil, Waited{}, err
	}
	if e.State != runs.StateRunning {
		return nil, Waited{}, fmt.Errorf("run %s is not running (it is %s); spawn_result has its outcome", e.ID, e.State)
	}
	// The graceful stop spawn stop makes: the agents stopped, their work
	// committed, the record finished as interrupted.
	if err := repo.Stop(e, false); err != nil {
		return nil, Waited{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, s.opts.CancelWait)
	defer cancel()
	e, err = s.await(wctx, req, repo, e)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, Waited{}, err
	}
	return s.waited(e)
}

func (s *server) list(ctx context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, Listed, error) {
	limit := in.Limit
	switch {
	case limit < 0:
		return nil, Listed{}, fmt.Errorf(`"limit" is %d: give a positive number (or nothing for 20)`, limit)
	case limit == 0:
		limit = 20
	}
	repo, err := s.repo(ctx, in.Repo)
	if err != nil {
		return nil, Listed{}, err
	}
	entries, err := repo.List()
	if err != nil {
		return nil, Listed{}, err
	}
	out := Listed{Runs: []ListedRun{}}
	for i, e := range entries {
		if i == limit {
			out.Omitted = len(entries) - limit
			break
		}
		r := ListedRun{ID: e.ID, State: string(e.State)}
		if sum := e.Summary; sum != nil {
			r.Status, r.Verdict, r.ExitCode, r.Mode = string(sum.Status), string(sum.Verdict), sum.ExitCode, string(sum.Mode)
			r.Branch, r.Task, r.StartedAt = sum.Branch, clip(firstLine(sum.Task), 200), sum.StartedAt
		}
		out.Runs = append(out.Runs, r)
	}
	return nil, out, nil
}

func (s *server) send(ctx context.Context, _ *mcp.CallToolRequest, in SendInput) (*mcp.CallToolResult, SentMessage, error) {
	if in.ID == "" {
		return nil, SentMessage{}, errors.New(`no run given: pass "id", a running run's id, or "last"`)
	}
	repo, err := s.repo(ctx, in.Repo)
	if err != nil {
		return nil, SentMessage{}, err
	}
	sent, err := repo.Send(ctx, in.ID, in.Text, runs.SendWait)
	if err != nil {
		return nil, SentMessage{}, err
	}
	return nil, SentMessage{ID: sent.Run, Delivered: sent.Delivered}, nil
}

func (s *server) run(ctx context.Context, req *mcp.CallToolRequest, in StartInput) (*mcp.CallToolResult, Result, error) {
	id, err := s.startRun(ctx, in)
	if err != nil {
		return nil, Result{}, err
	}
	repo, e, err := s.find(ctx, in.Repo, id)
	if err != nil {
		return nil, Result{}, err
	}
	e, err = s.await(ctx, req, repo, e)
	if err != nil {
		return nil, Result{}, fmt.Errorf("stopped waiting for run %s, which goes on (spawn_wait or spawn_result with its id finds it): %w", id, err)
	}
	res, err := readResult(e, time.Now())
	return nil, res, err
}
