package spawn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/relay"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/team"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// agentBinary finds an agent CLI in the PATH of env, or says how to get it.
// Its folder is given without links (a sandbox shows the real one, not a
// link to it: agents/node_modules may be one).
func agentBinary(cli, command, npmPackage string, env []string) (string, error) {
	bin, err := proc.LookPath(command, env)
	if err != nil {
		return "", errorf(KindMissingCLI, err, "%s", missingCLI(cli, command, npmPackage))
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(bin)); err == nil {
		bin = filepath.Join(dir, filepath.Base(bin))
	}
	return bin, nil
}

// coderSystemPrompt tells the coder how it is being run.
func (r *run) coderSystemPrompt() string {
	return fmt.Sprintf("You are running unattended under spawn, inside a git worktree at %s on the branch %s, made for this task alone. "+
		"No one can answer questions: when something is unclear, make the most reasonable choice, say which, and finish the task. "+
		"Work only inside this directory. Whatever you leave uncommitted is committed for you when you finish.",
		r.sb.Path, r.sb.Branch)
}

// Code runs one coder turn in the sandbox (a new session, or a resumed
// one) under the watcher: denied escalatable tools are granted and the
// session resumed, questions are answered, budgets and timeouts are
// enforced. Then whatever the coder left is committed. The error is an
// *Error saying why the turn failed: timeout, budget, interrupt, crash,
// model API, or a record that cannot be written.
func (r *run) Code(ctx context.Context, t team.CoderTurn) (team.Reply, error) {
	phase := PhaseCoder
	if t.Round > 1 {
		phase = PhaseFixing
	}
	r.emit(Event{Kind: EventPhase, Phase: phase, Round: t.Round})
	cfg := r.opts.Config
	claude := &runners.Claude{
		Bin:                r.pre.claude,
		Model:              cfg.Runners.Claude.Model,
		PermissionMode:     cfg.Permissions.Mode,
		AllowedTools:       cfg.Permissions.AllowedTools,
		DisallowedTools:    cfg.Permissions.DeniedTools,
		AppendSystemPrompt: r.coderSystemPrompt(),
		MaxRetries:         cfg.Runners.Claude.MaxRetries,
	}
	policy, err := r.coderPolicy()
	if err != nil {
		return team.Reply{}, err
	}
	who := agent{llm: observability.LLMClaude, role: observability.RoleCoder, round: t.Round, cli: "claude"}
	binds := r.coderHooks(claude, t.Round)
	defer r.recordMessages()
	coder, env, err := r.conf.coder(claude, binds)
	if err != nil {
		return team.Reply{}, errorf(KindInternal, err, "cannot confine the coder: %v", err)
	}
	defer r.closeCage(coder)
	who.env, policy.Watch = env, coder.watch
	prompt := r.withMessages(t.Prompt, t.Round)
	sess, err := r.guarded(ctx, who, func() (*watcher.Session, error) {
		return r.supervise(ctx, coder, who, runners.Turn{Prompt: prompt, Dir: r.sb.Path, Resume: t.Resume}, policy)
	})
	reply := replyOf(sess)
	if err == nil {
		err = r.classify(sess, who.cli)
	}
	// The work is saved even when ctx was cancelled (Ctrl-C, SIGHUP).
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return reply, errors.Join(err, r.commitLeftovers(saveCtx, t.Round), r.recordError())
}

// closeCage removes an agent's cage once its session ended; a cage that
// cannot be removed is a warning (its cgroup is left behind, empty).
func (r *run) closeCage(a *confined) {
	if err := a.cage.Close(); err != nil {
		r.emit(Event{Kind: EventWarning, Text: fmt.Sprintf("cannot remove an agent's cgroup: %v", err)})
	}
}

// coderPolicy is the watcher's policy for the coder, from the configuration
// (whose rules and patterns were validated when it was loaded).
func (r *run) coderPolicy() (watcher.Policy, error) {
	cfg := r.opts.Config
	var rules []watcher.Rule
	for _, s := range cfg.Permissions.Escalatable {
		rule, err := watcher.ParseRule(s)
		if err != nil {
			return watcher.Policy{}, errorf(KindConfig, err, "permissions.escalatable: %v", err)
		}
		rules = append(rules, rule)
	}
	questions, err := watcher.NewQuestionDetector(cfg.Spawn.QuestionPatterns)
	if err != nil {
		return watcher.Policy{}, errorf(KindConfig, err, "spawn.question_patterns: %v", err)
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

// Review runs one reviewer seat once in the sandbox (resuming its session
// when t.Resume is set), read-only: a denied tool is recorded, never
// granted. Seats may run concurrently. The error is an *Error classifying a
// failure (auth, rate limit, unavailable model, crash, timeout, interrupt).
func (r *run) Review(ctx context.Context, t team.ReviewerTurn) (team.Reply, error) {
	r.emit(Event{Kind: EventPhase, Phase: PhaseReviewer, Round: t.Round, Seat: t.Seat})
	home, err := r.geminiHome(t.Seat)
	if err != nil {
		return team.Reply{}, err
	}
	cfg := r.opts.Config
	gemini := &runners.Gemini{Bin: r.pre.gemini, Model: cfg.Runners.Gemini.Model, ApprovalMode: cfg.Runners.Gemini.ApprovalMode, Home: home}
	policy := watcher.Policy{IdleTimeout: cfg.Spawn.IdleTimeout, ToolTimeout: cfg.Spawn.ToolTimeout, TotalTimeout: cfg.Spawn.TotalTimeout, Grace: r.opts.Grace}
	who := agent{llm: observability.LLMGemini, role: observability.RoleReviewer, round: t.Round, seat: t.Seat, cli: "gemini",
		tools: offered(cfg.Runners.Gemini.AllowedTools, cfg.Runners.Gemini.ExcludedTools)}
	reviewer, env, err := r.conf.reviewer(gemini, seatDir(t.Seat))
	if err != nil {
		return team.Reply{}, errorf(KindInternal, err, "cannot confine the reviewer: %v", err)
	}
	defer r.closeCage(reviewer)
	who.env, policy.Watch = env, reviewer.watch
	sess, err := r.guarded(ctx, who, func() (*watcher.Session, error) {
		return r.supervise(ctx, reviewer, who, runners.Turn{Prompt: t.Prompt, Dir: r.sb.Path, Resume: t.Resume}, policy)
	})
	reply := replyOf(sess)
	if err == nil {
		err = r.classify(sess, who.cli)
	}
	return reply, errors.Join(err, r.recordError())
}

// seatDir names a reviewer seat's private directory.
func seatDir(seat string) string {
	if seat == "" {
		return "reviewer"
	}
	return "reviewer-" + seat
}

// Head is the commit at the tip of the sandbox branch.
func (r *run) Head(ctx context.Context) (string, error) {
	sha, err := r.sb.Head(ctx)
	if err != nil {
		return "", r.sandboxError(err, "cannot read the sandbox's HEAD")
	}
	return sha, nil
}

// Diff is the change from..to on the sandbox branch.
func (r *run) Diff(ctx context.Context, from, to string) (string, error) {
	d, err := r.sb.Diff(ctx, from, to)
	if err != nil {
		return "", r.sandboxError(err, "cannot diff the sandbox branch")
	}
	return d, nil
}

// Reviewed puts a finished review round on the event stream.
func (r *run) Reviewed(round team.Round) {
	r.emit(Event{Kind: EventReview, Round: round.Number, Review: &round})
}

// recordError is the record's first write error as an internal *Error
// (the work is committed before it is reported), nil when the record is
// being written.
func (r *run) recordError() error {
	if err := r.record.Err(); err != nil {
		return errorf(KindInternal, err, "%v; the work is committed on %s", err, r.sb.Branch)
	}
	return nil
}

// geminiHome returns the GEMINI_CLI_HOME of one reviewer seat: the home
// of its private directory, prepared once with spawn's gemini settings.
func (r *run) geminiHome(seat string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if home, ok := r.homes[seat]; ok {
		return home, nil
	}
	dir, err := r.conf.private(seatDir(seat))
	if err != nil {
		return "", errorf(KindInternal, err, "cannot prepare the reviewer's home: %v", err)
	}
	home := filepath.Join(dir, "home")
	g := r.opts.Config.Runners.Gemini
	if err := runners.NewGeminiHome(home, runners.GeminiSettings{MaxRetries: g.MaxRetries, Tools: g.AllowedTools, ExcludedTools: g.ExcludedTools}); err != nil {
		return "", errorf(KindInternal, err, "cannot prepare gemini's home: %v", err)
	}
	if r.homes == nil {
		r.homes = map[string]string{}
	}
	r.homes[seat] = home
	return home, nil
}

// agent names who runs in a supervised session.
type agent struct {
	llm   observability.LLM
	role  observability.Role
	round int
	seat  string
	cli   string   // the CLI's name, for messages
	env   []string // the whole environment its processes get (no credential)
	// tools are the tools spawn lets the agent be offered, recorded when
	// its CLI does not report them; nil when spawn does not restrict them.
	tools []string
}

// supervise runs one agent session under the watcher, keeping each
// process's transcripts in the run directory, and puts its processes,
// denials, grants, questions and usage on the event stream. The error is
// an *Error: the agent could not start (agent_crashed), or a transcript
// could not be created or written, or the watcher failed (internal).
func (r *run) supervise(ctx context.Context, a watcher.Agent, who agent, turn runners.Turn, policy watcher.Policy) (*watcher.Session, error) {
	// max_cost_usd bounds the whole run: the session gets what is left.
	key, spent := r.spend.start()
	budget, ok := sessionBudget(r.opts.Config.Spawn.MaxCostUSD, spent)
	if !ok {
		r.spend.end(key, 0)
		return nil, errorf(KindBudget, nil, "%s", budgetUsedUp(who.cli, r.opts.Config.Spawn.MaxCostUSD, spent))
	}
	policy.MaxCostUSD = budget
	var mu sync.Mutex            // guards names, files and watchErrs, shared by the hooks of this session
	names := map[int][2]string{} // process -> its transcripts' names in the run directory
	var files []*os.File
	var watchErrs []error
	emit := func(e Event) {
		e.LLM, e.Role, e.Round, e.Seat = who.llm, who.role, who.round, who.seat
		r.emit(e)
	}
	refusals := &blocked{r: r, who: who}
	hooks := watcher.Hooks{
		OnEvent:  refusals.event,
		Env:      who.env,
		Redactor: r.red,
		Hurry:    r.opts.Hurry,
		Streams: func(n int) (io.Writer, io.Writer, error) {
			r.mu.Lock()
			r.procs++
			stdout, stderr := r.dir.Transcript(r.procs, who.role)
			r.mu.Unlock()
			out, err := os.Create(stdout)
			if err != nil {
				return nil, nil, errorf(KindInternal, err, "cannot create a transcript: %v", err)
			}
			errf, err := os.Create(stderr)
			if err != nil {
				return nil, nil, errorf(KindInternal, err, "cannot create a transcript: %v", errors.Join(err, out.Close()))
			}
			mu.Lock()
			names[n] = [2]string{filepath.Base(stdout), filepath.Base(stderr)}
			files = append(files, out, errf)
			mu.Unlock()
			return out, errf, nil
		},
		OnProcess: func(n int, out watcher.Outcome) {
			mu.Lock()
			base := names[n]
			if out.WatchErr != nil {
				watchErrs = append(watchErrs, errorf(KindInternal, out.WatchErr, "watching %s failed: %v", who.cli, out.WatchErr))
			}
			mu.Unlock()
			e := Event{Kind: EventProcess, Process: &observability.CommandLine{
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
				e.Process.Session = out.Init.SessionID
				if len(out.Init.Tools) > 0 {
					e.Process.Tools = out.Init.Tools
				}
			}
			if out.Result != nil && out.Result.SessionID != "" {
				e.Process.Session = out.Result.SessionID
			}
			if res := out.Result; res != nil {
				e.Usage = &observability.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens}
			}
			emit(e)
		},
		OnProgress: func(p watcher.Progress) {
			if who.role == observability.RoleCoder {
				// A message a hook handed the coder is told as it is,
				// before what the coder does with it.
				r.recordMessages()
			}
			emit(Event{Kind: EventAgent, Agent: &p, RunCostUSD: r.spend.update(key, p.CostUSD)})
		},
	}
	sess, err := watcher.Supervise(ctx, a, turn, policy, hooks)
	if sess != nil {
		u := agentUsage(who, sess)
		e := Event{Kind: EventSession, Usage: &observability.Usage{Turns: sess.Turns, CostUSD: sess.CostUSD}, AgentUsage: &u,
			RunCostUSD: r.spend.end(key, sess.CostUSD)}
		if who.role == observability.RoleCoder && sess.Result != nil {
			e.Text = sess.Result.Text // the coder's final message
		}
		emit(e)
	} else {
		r.spend.end(key, 0)
	}
	mu.Lock()
	errs := watchErrs
	for _, f := range files {
		if cerr := f.Close(); cerr != nil {
			errs = append(errs, errorf(KindInternal, cerr, "cannot write the transcript: %v", cerr))
		}
	}
	mu.Unlock()
	var se *Error
	switch {
	case err == nil:
	case errors.As(err, &se):
		errs = append([]error{err}, errs...)
	default:
		errs = append([]error{errorf(KindAgentCrashed, err, "cannot start %s: %v", who.cli, err)}, errs...)
	}
	return sess, errors.Join(errs...)
}

// replyOf is a session's session id, final message, and the tokens its
// processes reported.
func replyOf(sess *watcher.Session) team.Reply {
	if sess == nil {
		return team.Reply{}
	}
	reply := team.Reply{Session: sess.SessionID, Tests: sess.Tests}
	if sess.Result != nil {
		reply.Text = sess.Result.Text
	}
	for _, p := range sess.Processes {
		if p.Result != nil {
			reply.Tokens.Input += p.Result.Usage.InputTokens
			reply.Tokens.Cached += p.Result.Usage.CachedTokens
			reply.Tokens.Output += p.Result.Usage.OutputTokens
		}
	}
	return reply
}

// classify turns a session's outcome into spawn's error, nil on success.
// The exit code alone is never trusted: a missing result event is a failure
// even with exit code 0 (claude exits 0 on SIGINT).
func (r *run) classify(sess *watcher.Session, cli string) error {
	hint := fmt.Sprintf("see the transcripts in %s", r.dir.Dir)
	out := sess.Last()
	switch sess.Stopped {
	case watcher.StopIdleTimeout, watcher.StopTotalTimeout, watcher.StopMaxTurns, watcher.StopToolTimeout, watcher.StopMaxCost:
		return errorf(limitKind(sess.Stopped), nil, "%s", limitStop(cli, sess.Stopped, r.opts.Config, sess.Turns, oneLine(out.Tool), r.spend.total()))
	case watcher.StopCancelled:
		return errorf(KindInterrupted, context.Canceled, "%s was stopped by an interrupt (Ctrl-C, a signal, or spawn stop)", cli)
	case watcher.StopMaxProcesses, watcher.StopMaxMemory, watcher.StopMaxDisk:
		return errorf(KindBudget, nil, "%s", sandboxLimitStop(cli, sess.Stopped, out.Limit))
	}
	res := out.Result
	if res == nil {
		cause := out.ParseErr
		if cause == nil {
			cause = errors.New("no result event")
		}
		line := causeLine(r.stderrOf(out.Pid))
		if line == "" {
			line = out.StderrTail
		}
		if kind, msg := failure(cli, line); kind != "" {
			return errorf(kind, cause, "%s", msg)
		}
		said := ""
		if line != "" {
			said = fmt.Sprintf(" (it said on stderr: %q)", line)
		}
		return errorf(KindAgentCrashed, cause, "%s exited with code %d without a result%s; %s", cli, out.ExitCode, said, hint)
	}
	if !res.IsError {
		return nil
	}
	text := strings.TrimSpace(res.Text)
	if text == "" {
		text = strings.TrimSpace(res.ErrorMessage)
	}
	status := res.APIErrorStatus
	switch {
	case strings.Contains(text, relay.BudgetSpent):
		return errorf(KindBudget, nil, "%s was stopped by the run's cost budget (max_cost_usd = $%g for every agent together, counted at spawn's relay); raise max_cost_usd in [spawn] to go further; its work is committed on the sandbox branch",
			cli, r.opts.Config.Spawn.MaxCostUSD)
	case status == 401 || status == 403:
		return errorf(KindAuth, nil, "the model API refused %s's credentials (HTTP %d: %s); set its API key or log in to it, then run again", cli, status, oneLine(text))
	case status == 0 || unreachableRE.MatchString(text):
		// A model API that cannot be reached reaches claude as no status,
		// or as a 502 from spawn's credential relay.
		if kind, msg := failure(cli, text); kind != "" {
			return errorf(kind, nil, "%s", msg)
		}
	case status == 429:
		return errorf(KindRateLimited, nil, "the model API kept rate-limiting %s (HTTP 429: %s) after its retries; wait, or raise your quota, then run again", cli, oneLine(text))
	case status >= 500:
		return errorf(KindModelUnavailable, nil, "the model API is unavailable: HTTP %d (%s) after %s's retries; try again later", status, oneLine(text), cli)
	case status != 0:
		return errorf(KindModelAPI, nil, "the model API failed with HTTP %d (%s); %s", status, oneLine(text), hint)
	}
	if res.Subtype != "" && res.Subtype != "success" {
		return errorf(KindAgentFailed, nil, "%s reported a failure (%s): %s; %s", cli, res.Subtype, oneLine(text), hint)
	}
	return errorf(KindAgentFailed, nil, "%s reported a failure: %s; %s", cli, oneLine(text), hint)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if short, cut := cutAtWord(s, 197); cut {
		s = short + "..."
	}
	return s
}
