package spawn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/relay"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/team"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// Code runs one coder turn in the sandbox (a new session, or a resumed
// one) under the watcher: denied escalatable tools are granted and the
// session resumed, questions are answered, budgets and timeouts are
// enforced. Then whatever the coder left is committed. The error is an
// *fault.Error saying why the turn failed: timeout, budget, interrupt, crash,
// model API, or a record that cannot be written.
//
// A turn that ends at a usage limit that resets within wait_for_quota
// waits for it and goes on in its session.
func (r *run) Code(ctx context.Context, t team.CoderTurn) (team.Reply, error) {
	return r.waitForQuota(ctx, r.pre.seats.coder.name(), func() (team.Reply, error) { return r.code(ctx, t) }, func(reply team.Reply) {
		if reply.Session != "" {
			t.Resume, t.Prompt = reply.Session, quotaResumed
		}
	})
}

// quotaResumed is the prompt of a coder session resumed after its usage
// limit reset.
const quotaResumed = "Your turn was cut off by your account's usage limit, which has now reset. Go on with the task where you left off, and finish it."

func (r *run) code(ctx context.Context, t team.CoderTurn) (team.Reply, error) {
	phase := observability.PhaseCoder
	if t.Round > 1 {
		phase = observability.PhaseFixing
	}
	r.emit(observability.Event{Kind: observability.EventPhase, Phase: phase, Round: t.Round})
	cfg := r.opts.Config
	policy, err := r.coderPolicy()
	if err != nil {
		return team.Reply{}, err
	}
	r.mu.Lock()
	r.saved = false
	r.mu.Unlock()
	cli := r.pre.seats.coder
	binds := r.coderHooks(cli, t.Round)
	defer r.recordMessages(cli)
	sess, err := r.turn(ctx, seatTurn{
		cli: cli,
		who: agent{llm: cli.llm(), role: observability.RoleCoder, round: t.Round, cli: cli.name(), key: "coder"},
		seat: runners.Seat{Role: runners.RoleCoder, SystemPrompt: r.coderSystemPrompt(), Hooks: binds.settings,
			Permissions: runners.Permissions{Mode: cfg.Permissions.Mode, Allowed: cfg.Permissions.AllowedTools, Denied: cfg.Permissions.DeniedTools}},
		binds:  binds,
		turn:   runners.Turn{Prompt: r.withMessages(t.Prompt, t.Round), Dir: r.sb.Path, Resume: t.Resume},
		policy: policy,
	})
	// The work is saved even when ctx was cancelled (Ctrl-C, SIGHUP).
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return replyOf(sess), errors.Join(err, r.commitLeftovers(saveCtx, t.Round), r.recordError())
}

// Review runs one reviewer seat once in the sandbox (resuming its session
// when t.Resume is set), read-only: a denied tool is recorded, never
// granted. Seats may run concurrently. The error is a *fault.Error classifying a
// failure (auth, rate limit, unavailable model, crash, timeout, interrupt).
//
// A turn that ends at a usage limit that resets within wait_for_quota
// waits for it and runs again.
func (r *run) Review(ctx context.Context, t team.ReviewerTurn) (team.Reply, error) {
	return r.waitForQuota(ctx, t.Reviewer, func() (team.Reply, error) { return r.review(ctx, t) }, func(team.Reply) {})
}

func (r *run) review(ctx context.Context, t team.ReviewerTurn) (team.Reply, error) {
	r.emit(observability.Event{Kind: observability.EventPhase, Phase: observability.PhaseReviewer, Round: t.Round, Seat: t.Seat})
	cli, ok := r.pre.seats.reviewer(t.Reviewer)
	if !ok {
		return team.Reply{}, fault.Errorf(fault.KindInternal, nil, "no reviewer %q sits on the board", t.Reviewer)
	}
	cfg := r.opts.Config
	sess, err := r.turn(ctx, seatTurn{
		cli:    cli,
		who:    agent{llm: cli.llm(), role: observability.RoleReviewer, round: t.Round, seat: t.Seat, cli: cli.name(), key: seatDir(t.Seat)},
		seat:   runners.Seat{Role: runners.RoleReviewer},
		turn:   runners.Turn{Prompt: t.Prompt, Dir: r.sb.Path, Resume: t.Resume},
		policy: watcher.Policy{IdleTimeout: cfg.Spawn.IdleTimeout, ToolTimeout: cfg.Spawn.ToolTimeout, TotalTimeout: cfg.Spawn.TotalTimeout, Grace: r.opts.Grace},
	})
	return replyOf(sess), errors.Join(err, r.recordError())
}

// seatTurn is one agent turn of a seat: its CLI, who it is in the
// record, what its adapter is asked for (runners.Seat), the coder's hook
// paths (none for a reviewer), the turn and the watcher's policy.
type seatTurn struct {
	cli    seatCLI
	who    agent
	seat   runners.Seat
	binds  coderBinds
	turn   runners.Turn
	policy watcher.Policy
}

// turn runs one agent turn, the one path every coder and reviewer turn
// takes: the seat's agent is made and confined (conf.seat: its private
// directory, its relay key, its credential-free environment, its cage
// and, under bubblewrap, its sandbox), then run under the watcher
// (supervise) between the guard's snapshots (guarded, without
// bubblewrap), and its outcome classified into spawn's error. The cage is
// removed when the turn ends. The session is nil when the agent never
// started.
func (r *run) turn(ctx context.Context, t seatTurn) (*watcher.Session, error) {
	a, env, err := r.conf.seat(t.cli, t.seat, t.who.key, t.binds)
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot confine the %s: %v", t.who.role, err)
	}
	defer r.closeCage(a)
	r.noteSeat(t.who.key, a)
	if o, ok := a.Agent.(runners.Offered); ok {
		t.who.tools = o.Offered()
	}
	t.who.env, t.policy.Watch = env, a.watch
	sess, err := r.guarded(ctx, t.who, func() (*watcher.Session, error) {
		return r.supervise(ctx, a, t.who, t.turn, t.policy)
	})
	if err == nil {
		err = r.classify(sess, t.who, a)
	}
	return sess, err
}

// agent names who runs in a supervised session.
type agent struct {
	llm   observability.LLM
	role  observability.Role
	round int
	seat  string
	cli   string   // the CLI's name, for messages
	key   string   // its seat's name at the relay: "coder", or its directory
	env   []string // the whole environment its processes get (no credential)
	// tools are the tools spawn lets the agent be offered, recorded when
	// its CLI does not report them; nil when spawn does not restrict them.
	tools []string
}

// supervise runs one agent session under the watcher, keeping each
// process's transcripts in the run directory, and puts its processes,
// denials, grants, questions and usage on the event stream (a
// sessionLog). The error is a *fault.Error: the agent could not start
// (agent_crashed), or a transcript could not be created or written, or the
// watcher failed (internal).
func (r *run) supervise(ctx context.Context, a watcher.Agent, who agent, turn runners.Turn, policy watcher.Policy) (*watcher.Session, error) {
	// max_cost_usd bounds the whole run: the session gets what is left.
	key, spent := r.spend.start()
	budget, ok := sessionBudget(r.opts.Config.Spawn.MaxCostUSD, spent)
	if !ok {
		r.spend.end(key, 0)
		return nil, fault.Errorf(fault.KindBudget, nil, "%s", budgetUsedUp(who.cli, r.opts.Config.Spawn.MaxCostUSD, spent))
	}
	policy.MaxCostUSD = budget
	r.spend.forget(who.key)
	log := &sessionLog{r: r, who: who, spend: key, names: map[int][2]string{}}
	sess, err := watcher.Supervise(ctx, a, turn, policy, watcher.Hooks{
		OnEvent:    (&blocked{r: r, who: who}).event,
		Env:        who.env,
		Redactor:   r.red,
		Hurry:      r.opts.Hurry,
		Streams:    log.streams,
		OnProcess:  log.process,
		OnProgress: log.progress,
		Total:      r.record.sessionTotal(turn.Resume),
	})
	errs := append(log.ended(sess), log.close()...)
	var se *fault.Error
	switch {
	case err == nil:
	case errors.As(err, &se):
		errs = append([]error{err}, errs...)
	default:
		errs = append([]error{fault.Errorf(fault.KindAgentCrashed, err, "cannot start %s: %v", who.cli, err)}, errs...)
	}
	return sess, errors.Join(errs...)
}

// sessionLog is what one supervised session leaves in the run: each
// process's transcripts in the run directory, and its processes, progress
// and usage on the event stream, in the agent's name. The watcher calls
// its hooks from the session's goroutines.
type sessionLog struct {
	r     *run
	who   agent
	spend int // the session's entry in the run's spend

	mu        sync.Mutex
	names     map[int][2]string // process -> its transcripts' names in the run directory
	files     []*os.File
	watchErrs []error
}

// emit puts e on the run's event stream as the session's agent's.
func (l *sessionLog) emit(e observability.Event) {
	e.LLM, e.Role, e.Round, e.Seat = l.who.llm, l.who.role, l.who.round, l.who.seat
	l.r.emit(e)
}

// streams creates process n's transcripts (watcher.Hooks.Streams).
func (l *sessionLog) streams(n int) (io.Writer, io.Writer, error) {
	r := l.r
	r.mu.Lock()
	r.procs++
	stdout, stderr := r.dir.Transcript(r.procs, l.who.role)
	r.mu.Unlock()
	out, err := os.Create(stdout)
	if err != nil {
		return nil, nil, fault.Errorf(fault.KindInternal, err, "cannot create a transcript: %v", err)
	}
	errf, err := os.Create(stderr)
	if err != nil {
		return nil, nil, fault.Errorf(fault.KindInternal, err, "cannot create a transcript: %v", errors.Join(err, out.Close()))
	}
	l.mu.Lock()
	l.names[n] = [2]string{filepath.Base(stdout), filepath.Base(stderr)}
	l.files = append(l.files, out, errf)
	l.mu.Unlock()
	return out, errf, nil
}

// process puts process n's command line, session and tokens on the event
// stream when it exits (watcher.Hooks.OnProcess).
func (l *sessionLog) process(n int, out watcher.Outcome) {
	who := l.who
	l.mu.Lock()
	base := l.names[n]
	if out.WatchErr != nil {
		l.watchErrs = append(l.watchErrs, fault.Errorf(fault.KindInternal, out.WatchErr, "watching %s failed: %v", who.cli, out.WatchErr))
	}
	l.mu.Unlock()
	e := observability.Event{Kind: observability.EventProcess, Process: &observability.CommandLine{
		LLM:        who.llm,
		Role:       who.role,
		Iteration:  who.round,
		Argv:       out.Argv,
		WorkDir:    out.Dir,
		StartedAt:  out.StartedAt.UTC(),
		DurationMS: out.Duration.Milliseconds(),
		ExitCode:   out.ExitCode,
		Pid:        out.Pid,
		AgentPid:   out.AgentPid,
		Stdout:     base[0],
		Stderr:     base[1],
		Tools:      who.tools,
	}}
	if out.Init != nil {
		e.Process.Session, e.Process.Model = out.Init.SessionID, out.Init.Model
		if len(out.Init.Tools) > 0 {
			e.Process.Tools = out.Init.Tools
		}
	}
	if out.Result != nil && out.Result.SessionID != "" {
		e.Process.Session = out.Result.SessionID
	}
	if res := out.Result; res != nil {
		e.Usage = &observability.Usage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens}
		if res.UsageCumulative {
			e.Process.SessionTokens = &observability.Tokens{Input: res.Usage.InputTokens, Cached: res.Usage.CachedTokens, Output: res.Usage.OutputTokens}
		}
	}
	l.emit(e)
}

// progress puts the agent's progress and the run's cost so far on the
// event stream (watcher.Hooks.OnProgress).
func (l *sessionLog) progress(p observability.Progress) {
	if l.who.role == observability.RoleCoder {
		// A message a hook handed the coder is told as it is, before what
		// the coder does with it.
		l.r.recordNewMessages(l.r.pre.seats.coder)
	}
	l.emit(observability.Event{Kind: observability.EventAgent, Agent: &p, RunCostUSD: l.r.spend.update(l.spend, p.CostUSD)})
}

// ended puts the session's usage (and the coder's final message) on the
// event stream, and settles its spend; sess is nil when the agent never
// started. It returns what watching the session failed at.
func (l *sessionLog) ended(sess *watcher.Session) []error {
	if sess == nil {
		l.r.spend.end(l.spend, 0)
	} else {
		u := agentUsage(l.who, sess)
		e := observability.Event{Kind: observability.EventSession, Usage: &observability.Usage{Turns: sess.Turns, CostUSD: sess.CostUSD}, AgentUsage: &u,
			RunCostUSD: l.r.spend.end(l.spend, sess.CostUSD)}
		if l.who.role == observability.RoleCoder && sess.Result != nil {
			e.Text = sess.Result.Text // the coder's final message
		}
		l.emit(e)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.watchErrs)
}

// close closes the session's transcripts.
func (l *sessionLog) close() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, f := range l.files {
		if err := f.Close(); err != nil {
			errs = append(errs, fault.Errorf(fault.KindInternal, err, "cannot write the transcript: %v", err))
		}
	}
	return errs
}

// replyOf is a session's session id, final message, and the tokens its
// processes used (watcher.Outcome.Usage: their own, not their thread's
// running total).
func replyOf(sess *watcher.Session) team.Reply {
	if sess == nil {
		return team.Reply{}
	}
	reply := team.Reply{Session: sess.SessionID, Tests: sess.Tests}
	if sess.Result != nil {
		reply.Text = sess.Result.Text
	}
	for _, p := range sess.Processes {
		reply.Tokens.Input += p.Usage.InputTokens
		reply.Tokens.Cached += p.Usage.CachedTokens
		reply.Tokens.Output += p.Usage.OutputTokens
	}
	return reply
}

// classify turns a session's outcome into spawn's error, nil on success.
// The exit code alone is never trusted: a missing result event is a failure
// even with exit code 0 (claude exits 0 on SIGINT). Why a turn failed is
// its CLI's adapter's to say (a runners.Failure); a usage limit's reset
// time is the relay's, when the provider's answer said it and the CLI did
// not.
func (r *run) classify(sess *watcher.Session, who agent, a *confined) error {
	cli := who.cli
	hint := fmt.Sprintf("see the transcripts in %s", r.dir.Dir)
	out := sess.Last()
	switch sess.Stopped {
	case watcher.StopIdleTimeout, watcher.StopTotalTimeout, watcher.StopMaxTurns, watcher.StopToolTimeout, watcher.StopMaxCost:
		return fault.Errorf(limitKind(sess.Stopped), nil, "%s", limitStop(cli, sess.Stopped, r.opts.Config, sess.Turns, oneLine(out.Tool), r.spend.total()))
	case watcher.StopCancelled:
		return fault.Errorf(fault.KindInterrupted, context.Canceled, "%s was stopped by an interrupt (Ctrl-C, a signal, or spawn stop)", cli)
	case watcher.StopMaxProcesses, watcher.StopMaxMemory, watcher.StopMaxDisk:
		return fault.Errorf(fault.KindBudget, nil, "%s", sandboxLimitStop(cli, sess.Stopped, out.Limit))
	}
	res := out.Result
	if res != nil && !res.IsError {
		return nil
	}
	stderr := r.stderrOf(out.Pid)
	if stderr == "" {
		stderr = out.StderrTail
	}
	f := a.Agent.Classify(res, stderr, r.events.now())
	if q, seen := r.spend.limit(who.key); f.Kind == runners.FailureUsageLimit || seen {
		if err := r.usageLimit(who, f, q, seen); err != nil {
			return err
		}
	}
	baseVar := a.provider.BaseVar
	if res == nil {
		cause := out.ParseErr
		if cause == nil {
			cause = errors.New("no result event")
		}
		line := causeLine(stderr)
		if kind, msg := failure(cli, baseVar, line); kind != "" {
			return fault.Errorf(kind, cause, "%s", msg)
		}
		if f.Kind == runners.FailureUnreachable || f.Kind == runners.FailureAuth {
			if kind, msg := failureOf(cli, baseVar, f); kind != "" {
				return fault.Errorf(kind, cause, "%s", msg)
			}
		}
		said := ""
		if line != "" {
			said = fmt.Sprintf(" (it said on stderr: %q)", line)
		}
		return fault.Errorf(fault.KindAgentCrashed, cause, "%s exited with code %d without a result%s; %s", cli, out.ExitCode, said, hint)
	}
	text := strings.TrimSpace(res.Text)
	if text == "" {
		text = strings.TrimSpace(res.ErrorMessage)
	}
	status := res.APIErrorStatus
	switch {
	case strings.Contains(text, relay.BudgetSpent):
		return fault.Errorf(fault.KindBudget, nil, "%s was stopped by the run's cost budget (max_cost_usd = $%g for every agent together, counted at spawn's relay); raise max_cost_usd in [spawn] to go further; its work is committed on the sandbox branch",
			cli, r.opts.Config.Spawn.MaxCostUSD)
	case status == 401 || status == 403:
		return fault.Errorf(fault.KindAuth, nil, "the model API refused %s's credentials (HTTP %d: %s); set its API key or log in to it, then run again", cli, status, oneLine(text))
	case status == 0 || unreachableRE.MatchString(text) || f.Kind == runners.FailureUnreachable:
		// A model API that cannot be reached reaches claude as no status,
		// or as a 502 from spawn's credential relay.
		if kind, msg := failure(cli, baseVar, text); kind != "" {
			return fault.Errorf(kind, nil, "%s", msg)
		}
		if kind, msg := failureOf(cli, baseVar, f); kind != "" {
			return fault.Errorf(kind, nil, "%s", msg)
		}
	case status == 429:
		return fault.Errorf(fault.KindRateLimited, nil, "the model API kept rate-limiting %s (HTTP 429: %s) after its retries; wait, or raise your quota, then run again", cli, oneLine(text))
	case status >= 500:
		return fault.Errorf(fault.KindModelUnavailable, nil, "the model API is unavailable: HTTP %d (%s) after %s's retries; try again later", status, oneLine(text), cli)
	case status == 404 && f.Kind == runners.FailureUnavailable:
		return fault.Errorf(fault.KindModelUnavailable, nil, "the model API does not serve %s's model (HTTP 404: %s); set another model in [runners.%s] of spawn-team.toml", cli, oneLine(text), cli)
	case status != 0:
		return fault.Errorf(fault.KindModelAPI, nil, "the model API failed with HTTP %d (%s); %s", status, oneLine(text), hint)
	}
	if res.Subtype != "" && res.Subtype != "success" {
		return fault.Errorf(fault.KindAgentFailed, nil, "%s reported a failure (%s): %s; %s", cli, res.Subtype, oneLine(text), hint)
	}
	return fault.Errorf(fault.KindAgentFailed, nil, "%s reported a failure: %s; %s", cli, oneLine(text), hint)
}

// coderSystemPrompt tells the coder how it is being run.
func (r *run) coderSystemPrompt() string {
	return fmt.Sprintf("You are running unattended under spawn, inside a git worktree at %s on the branch %s, made for this task alone. "+
		"No one can answer questions: when something is unclear, make the most reasonable choice, say which, and finish the task. "+
		"Work only inside this directory. Whatever you leave uncommitted is committed for you when you finish.",
		r.sb.Path, r.sb.Branch)
}

// coderPolicy is the watcher's policy for the coder, from the configuration
// (whose rules and patterns were validated when it was loaded).
func (r *run) coderPolicy() (watcher.Policy, error) {
	cfg := r.opts.Config
	var rules []runners.Rule
	for _, s := range cfg.Permissions.Escalatable {
		rule, err := runners.ParseRule(s)
		if err != nil {
			return watcher.Policy{}, fault.Errorf(fault.KindConfig, err, "permissions.escalatable: %v", err)
		}
		rules = append(rules, rule)
	}
	questions, err := watcher.NewQuestionDetector(cfg.Spawn.QuestionPatterns)
	if err != nil {
		return watcher.Policy{}, fault.Errorf(fault.KindConfig, err, "spawn.question_patterns: %v", err)
	}
	return watcher.Policy{
		Escalatable:    rules,
		MaxEscalations: cfg.Team.MaxEscalations,
		Questions:      questions,
		MinConfidence:  cfg.Spawn.QuestionConfidence,
		Answer:         cfg.Spawn.AutoAnswer,
		MaxAutoAnswers: cfg.Spawn.MaxAutoAnswers,
		MaxTurns:       cfg.Spawn.MaxTurns,
		MaxCostUSD:     cfg.Spawn.MaxCostUSD,
		IdleTimeout:    cfg.Spawn.IdleTimeout,
		ToolTimeout:    cfg.Spawn.ToolTimeout,
		TotalTimeout:   cfg.Spawn.TotalTimeout,
		Grace:          r.opts.Grace,
	}, nil
}

// noteSeat puts what a seat's agent says of how it runs (runners.Noter)
// in the run's notes, once per seat.
func (r *run) noteSeat(seat string, a *confined) {
	n, ok := a.Agent.(runners.Noter)
	if !ok || n.Note() == "" {
		return
	}
	r.mu.Lock()
	seen := r.noted[seat]
	if r.noted == nil {
		r.noted = map[string]bool{}
	}
	r.noted[seat] = true
	r.mu.Unlock()
	if !seen {
		r.emit(observability.Event{Kind: observability.EventNote, Text: seat + ": " + n.Note()})
	}
}

// closeCage removes an agent's cage once its session ended; a cage that
// cannot be removed is a warning (its cgroup is left behind, empty).
func (r *run) closeCage(a *confined) {
	if err := a.cage.Close(); err != nil {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: fmt.Sprintf("cannot remove an agent's cgroup: %v", err)})
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if short, cut := cutAtWord(s, 197); cut {
		s = short + "..."
	}
	return s
}
