package watcher

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// Policy is what Supervise may do on the agent's behalf, and its limits.
type Policy struct {
	// Escalatable are the rules a denied tool call may be granted under.
	Escalatable []runners.Rule
	// MaxEscalations bounds the resumes that grant permissions.
	MaxEscalations int
	// Questions detects a final answer that asks instead of finishing; nil
	// disables auto-answers.
	Questions *QuestionDetector
	// MinConfidence is the detector confidence at which an answer is given.
	MinConfidence float64
	// Answer is what the agent is told when it asks.
	Answer string
	// MaxAutoAnswers bounds the answers given.
	MaxAutoAnswers int
	// MaxTurns bounds the model responses over the whole session (0: none).
	MaxTurns int
	// MaxCostUSD bounds the session's estimated cost (0: none).
	MaxCostUSD float64
	// IdleTimeout applies to each process; TotalTimeout to the whole session.
	IdleTimeout  time.Duration
	TotalTimeout time.Duration
	// ToolTimeout replaces IdleTimeout while a tool call is in flight (see
	// Options.ToolTimeout); 0 leaves tool calls under IdleTimeout.
	ToolTimeout time.Duration
	Grace       time.Duration
	// Watch is each process's Options.Watch: the limits of the agent's
	// process tree (its processes, memory and disk).
	Watch func() (StopReason, string)
}

// DefaultAnswer is what an unattended agent is told when it asks a question.
const DefaultAnswer = "No one can answer: you are running unattended. Make the most reasonable choice, say which one you made, and finish the task."

// Hooks connect a session to its caller.
type Hooks struct {
	// Env is the environment the agent inherits.
	Env []string
	// Redactor redacts the transcripts.
	Redactor *observability.Redactor
	// Hurry, when closed, kills the running process at once.
	Hurry <-chan struct{}
	// Streams returns where process n (1-based) writes its transcripts.
	// The caller owns them: it closes them after Supervise returns, and
	// reads their write errors there. Nil discards the output.
	Streams func(n int) (stdout, stderr io.Writer, err error)
	// OnProcess is called after each process with its outcome.
	OnProcess func(n int, out Outcome)
	// OnProgress sees every progress event.
	OnProgress func(observability.Progress)
	// OnEvent sees every raw agent event.
	OnEvent func(runners.Event)
	// Total is the running total of usage the resumed session's CLI
	// reported last (the Session.Total its earlier Supervise ended with);
	// zero for a new session. A CLI that reports its session's running
	// total (runners.Result.UsageCumulative) counts its next process's
	// usage from it.
	Total runners.Usage
}

// Session is the outcome of a supervised session.
type Session struct {
	Processes []Outcome
	SessionID string
	// Result is the last process's result; nil if it printed none.
	Result *runners.Result
	// Stopped is why the watcher stopped the last process ("" if it ended
	// by itself): a timeout, a budget, or cancellation.
	Stopped     StopReason
	Turns       int
	CostUSD     float64
	Files       []string
	Escalations int
	Answers     int
	// Granted holds the rules granted, in order.
	Granted []string
	// Tests is the last test command the agent ran through its shell tool
	// (go test, npm test, pytest, make test...) and the end of its output,
	// "" when it ran none.
	Tests string
	// Total is the running total of usage the session's CLI reported last,
	// for a CLI that reports one (runners.Result.UsageCumulative), and
	// Hooks.Total until it does: what a later resume of the session counts
	// from. Zero for a CLI that reports each process's own use.
	Total runners.Usage
	// totalOf is the session id Total is the total of.
	totalOf string
}

// own is what res's process used itself (runners.Result.Own): counted from
// Total when res continues the session Total is of, and from nothing when
// res is of another session (the CLI started a new one instead).
func (s *Session) own(res *runners.Result) runners.Usage {
	if res.SessionID != s.totalOf {
		return res.Own(runners.Usage{})
	}
	return res.Own(s.Total)
}

// Last is the last process's outcome.
func (s *Session) Last() Outcome {
	if len(s.Processes) == 0 {
		return Outcome{}
	}
	return s.Processes[len(s.Processes)-1]
}

// Supervise runs an agent session: the turn, then as many resumed processes
// as escalations and answers call for. It returns when the agent finishes
// without a grantable denial or a question to answer, fails, hits a limit,
// or ctx is cancelled (then the agent is stopped and Stopped is
// StopCancelled). The error is set only when a process could not start.
func Supervise(ctx context.Context, agent Agent, turn runners.Turn, p Policy, hooks Hooks) (*Session, error) {
	sv := &supervisor{s: &Session{}, p: p, hooks: hooks, start: time.Now(), files: map[string]bool{}, allow: append([]string(nil), turn.Allow...)}
	if turn.Resume != "" {
		sv.s.Total, sv.s.totalOf = hooks.Total, turn.Resume
	}
	if p.TotalTimeout > 0 {
		sv.deadline = sv.start.Add(p.TotalTimeout)
	}
	for n := 1; ; n++ {
		out, tr, err := sv.process(ctx, agent, n, turn)
		if err != nil {
			return sv.s, err
		}
		if sv.ended(out) {
			return sv.s, nil
		}
		next, ok := sv.escalate(tr, out, turn.Dir)
		if !ok {
			next, ok = sv.answer(out, turn.Dir)
		}
		if !ok {
			return sv.s, nil
		}
		turn = next
	}
}

// supervisor is one Supervise: the session so far, its policy and hooks,
// when it started and must end, the files the agent touched and the
// tools it is allowed, grants included.
type supervisor struct {
	s        *Session
	p        Policy
	hooks    Hooks
	start    time.Time
	deadline time.Time // zero without a total timeout
	files    map[string]bool
	allow    []string
}

// emit reports the session's progress, with its running totals.
func (sv *supervisor) emit(pr observability.Progress) {
	pr.Elapsed, pr.Turns, pr.CostUSD, pr.Files, pr.Process = time.Since(sv.start), sv.s.Turns, sv.s.CostUSD, len(sv.files), len(sv.s.Processes)+1
	if sv.hooks.OnProgress != nil {
		sv.hooks.OnProgress(pr)
	}
}

// process runs the session's process n for turn and adds its outcome to
// the session. The error says it could not start, or its transcripts
// could not be made.
func (sv *supervisor) process(ctx context.Context, agent Agent, n int, turn runners.Turn) (Outcome, *tracker, error) {
	s, p, hooks := sv.s, sv.p, sv.hooks
	if p.MaxTurns > 0 {
		turn.MaxTurns = max(p.MaxTurns-s.Turns, 1)
	}
	turn.Allow = sv.allow
	opts := Options{Env: hooks.Env, Redactor: hooks.Redactor, IdleTimeout: p.IdleTimeout, ToolTimeout: p.ToolTimeout, Grace: p.Grace, Hurry: hooks.Hurry, Watch: p.Watch}
	if !sv.deadline.IsZero() {
		opts.TotalTimeout = max(time.Until(sv.deadline), time.Millisecond)
	}
	if hooks.Streams != nil {
		stdout, stderr, err := hooks.Streams(n)
		if err != nil {
			return Outcome{}, nil, err
		}
		opts.Transcript, opts.Errlog = stdout, stderr
	}
	tr := newTracker(s, p, sv.files, sv.emit)
	opts.OnEvent = func(ev runners.Event) StopReason {
		if hooks.OnEvent != nil {
			hooks.OnEvent(ev)
		}
		return tr.observe(ev)
	}
	sv.emit(observability.Progress{Kind: observability.ProgressStarted, Detail: turn.Resume})
	out, err := Run(ctx, agent, turn, opts)
	if err != nil {
		return out, nil, err
	}
	tr.finish(out.Result)
	if res := out.Result; res != nil {
		out.Usage = s.own(res)
		if res.UsageCumulative {
			s.Total, s.totalOf = res.Usage, res.SessionID
		}
	}
	s.Processes = append(s.Processes, out)
	s.Result, s.Stopped = out.Result, out.Stopped
	if out.Init != nil && out.Init.SessionID != "" {
		s.SessionID = out.Init.SessionID
	}
	if out.Result != nil && out.Result.SessionID != "" {
		s.SessionID = out.Result.SessionID
	}
	if hooks.OnProcess != nil {
		hooks.OnProcess(n, out)
	}
	finished := string(out.Stopped)
	if finished == "" {
		finished = "exited"
	}
	sv.emit(observability.Progress{Kind: observability.ProgressFinished, Detail: finished})
	if out.Stopped == StopMaxTurns || out.Stopped == StopMaxCost {
		sv.emit(observability.Progress{Kind: observability.ProgressBudget, Detail: string(out.Stopped)})
	}
	return out, tr, nil
}

// ended says the session ends with out: the process was stopped, failed,
// or left no result or session to resume.
func (sv *supervisor) ended(out Outcome) bool {
	if out.Stopped == "" && out.Result != nil && !out.Result.IsError && sv.s.SessionID != "" {
		return false
	}
	if out.Result != nil && out.Result.Subtype == "error_max_turns" {
		sv.s.Stopped = StopMaxTurns
		sv.emit(observability.Progress{Kind: observability.ProgressBudget, Detail: string(StopMaxTurns)})
	}
	return true
}

// escalate grants what the policy allows of the process's denials, and
// returns the turn that resumes the session with them; ok is false when
// nothing was granted (or max_escalations was reached).
func (sv *supervisor) escalate(tr *tracker, out Outcome, dir string) (next runners.Turn, ok bool) {
	s, p := sv.s, sv.p
	var granted []runners.Rule
	for _, d := range tr.denials(out.Result) {
		rules, ok := runners.Grant(p.Escalatable, d.Tool, d.Input)
		pr := observability.Progress{Kind: observability.ProgressDenial, Tool: d.Tool, Input: d.Input}
		if ok {
			pr.Rule = joinRules(rules)
		}
		sv.emit(pr)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !contains(sv.allow, r.Raw) && !containsRule(granted, r) {
				granted = append(granted, r)
			}
		}
	}
	if len(granted) == 0 {
		return runners.Turn{}, false
	}
	if s.Escalations >= p.MaxEscalations {
		sv.emit(observability.Progress{Kind: observability.ProgressLimit, Detail: fmt.Sprintf("max_escalations (%d) reached; %s not granted", p.MaxEscalations, joinRules(granted))})
		return runners.Turn{}, false
	}
	s.Escalations++
	for _, r := range granted {
		sv.allow = append(sv.allow, r.Raw)
		s.Granted = append(s.Granted, r.Raw)
		sv.emit(observability.Progress{Kind: observability.ProgressEscalation, Tool: r.Tool, Rule: r.Raw})
	}
	return runners.Turn{Prompt: escalationPrompt(granted), Dir: dir, Resume: s.SessionID}, true
}

// answer answers a question the agent asked instead of finishing the
// task, and returns the turn that resumes the session with the answer; ok
// is false when there is no question to answer (or max_auto_answers was
// reached).
func (sv *supervisor) answer(out Outcome, dir string) (next runners.Turn, ok bool) {
	s, p := sv.s, sv.p
	if p.Questions == nil {
		return runners.Turn{}, false
	}
	q, conf := p.Questions.Detect(out.Result.Text)
	if q == "" || conf < p.MinConfidence {
		return runners.Turn{}, false
	}
	sv.emit(observability.Progress{Kind: observability.ProgressQuestion, Detail: q, Confidence: conf})
	if s.Answers >= p.MaxAutoAnswers {
		sv.emit(observability.Progress{Kind: observability.ProgressLimit, Detail: fmt.Sprintf("max_auto_answers (%d) reached; the question is left unanswered", p.MaxAutoAnswers)})
		return runners.Turn{}, false
	}
	answer := p.Answer
	if answer == "" {
		answer = DefaultAnswer
	}
	s.Answers++
	sv.emit(observability.Progress{Kind: observability.ProgressAnswer, Detail: answer})
	return runners.Turn{Prompt: answer, Dir: dir, Resume: s.SessionID}, true
}

func escalationPrompt(granted []runners.Rule) string {
	return fmt.Sprintf("spawn granted the permission you were denied (%s). Retry what was denied, then continue the task.", joinRules(granted))
}

func joinRules(rules []runners.Rule) string {
	s := make([]string, len(rules))
	for i, r := range rules {
		s[i] = r.Raw
	}
	return strings.Join(s, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsRule(list []runners.Rule, r runners.Rule) bool {
	for _, x := range list {
		if x.Raw == r.Raw {
			return true
		}
	}
	return false
}

// tracker follows one process's events: turns, estimated cost, files
// changed, tool calls (to name the denials a CLI marks on results only),
// and budgets.
type tracker struct {
	s        *Session
	p        Policy
	files    map[string]bool
	emit     func(observability.Progress)
	model    string
	lastMsg  string
	inTurn   bool
	costBase float64                     // the session's cost before this process
	tools    map[string]*runners.ToolUse // calls in flight: no result yet
	refused  []runners.Denial
	// tests is the last test run's command and output, made into the
	// session's Tests once, when the process finishes.
	tests *testRun
}

type testRun struct {
	cmd string
	out runners.Output
}

func newTracker(s *Session, p Policy, files map[string]bool, emit func(observability.Progress)) *tracker {
	return &tracker{s: s, p: p, files: files, emit: emit, costBase: s.CostUSD, tools: map[string]*runners.ToolUse{}}
}

// observe folds one event into the session; it returns a stop reason when a
// budget is exceeded.
func (t *tracker) observe(ev runners.Event) StopReason {
	switch ev.Kind {
	case runners.KindInit:
		t.model = ev.Init.Model
	case runners.KindText, runners.KindToolUse:
		newTurn := !t.inTurn
		if ev.Message != "" {
			newTurn = ev.Message != t.lastMsg
		}
		if newTurn {
			t.s.Turns++
			if ev.Usage != nil {
				t.s.CostUSD += runners.EstimateCost(t.model, *ev.Usage)
			}
		}
		t.lastMsg, t.inTurn = ev.Message, true
		if ev.Kind == runners.KindText {
			t.emit(observability.Progress{Kind: observability.ProgressText, Detail: ev.Text})
		} else {
			t.tools[ev.ToolUse.ID] = ev.ToolUse
			t.emit(observability.Progress{Kind: observability.ProgressTool, Tool: ev.ToolUse.Name, Input: ev.ToolUse.Input})
		}
	case runners.KindToolResult:
		t.inTurn = false
		// A call has one result: forgotten once it arrives, so the map
		// holds only the calls in flight, however long the session.
		tu := t.tools[ev.ToolResult.ToolUseID]
		delete(t.tools, ev.ToolResult.ToolUseID)
		// A failing test run is a result too; a call the CLI refused is not.
		if tu != nil && ev.ToolResult.ErrorType == "" && tu.Kind == runners.ToolShell {
			if cmd := tu.Command(); isTestCommand(cmd) {
				t.tests = &testRun{cmd, ev.ToolResult.Content}
			}
		}
		switch {
		case tu == nil:
		case ev.ToolResult.IsError && (ev.ToolResult.ErrorType == "policy_violation" || ev.ToolResult.ErrorType == "tool_not_registered"):
			t.refused = append(t.refused, runners.Denial{Tool: tu.Name, ToolUseID: tu.ID, Input: tu.Input})
		case !ev.ToolResult.IsError:
			for _, path := range tu.Files() {
				if path = filepath.Clean(path); !t.files[path] {
					t.files[path] = true
					t.s.Files = append(t.s.Files, path)
					t.emit(observability.Progress{Kind: observability.ProgressFileChanged, Detail: path})
				}
			}
		}
	case runners.KindRetry:
		what := fmt.Sprintf("model API error %d", ev.Retry.ErrorStatus)
		if ev.Retry.ErrorStatus == 0 { // no HTTP answer at all
			what = "model API not reached"
		}
		t.emit(observability.Progress{Kind: observability.ProgressRetry, Detail: fmt.Sprintf("%s, attempt %d of %d", what, ev.Retry.Attempt, ev.Retry.MaxRetries)})
	case runners.KindResult:
		t.finish(ev.Result)
	}
	switch {
	case t.p.MaxTurns > 0 && t.s.Turns > t.p.MaxTurns:
		return StopMaxTurns
	case t.p.MaxCostUSD > 0 && t.s.CostUSD >= t.p.MaxCostUSD:
		return StopMaxCost
	}
	return ""
}

// finish replaces this process's cost estimate with the cost the CLI
// reported, when it reported one, and estimates it from the result's token
// totals when the CLI reported tokens only. Either is the process's own
// (Session.own): a resumed codex thread's total counts again the turns
// its earlier processes were charged for.
func (t *tracker) finish(res *runners.Result) {
	if t.tests != nil {
		t.s.Tests = "$ " + oneLineCmd(t.tests.cmd) + "\n" + tail(t.tests.out.String(), maxTestLines, maxTestBytes)
		t.tests = nil
	}
	if res == nil {
		return
	}
	switch own := t.s.own(res); {
	case own.CostUSD > 0:
		t.s.CostUSD = t.costBase + own.CostUSD
	case own.InputTokens+own.OutputTokens > 0:
		// The CLI reports its tokens but no price (gemini, codex), and no
		// usage on the way: the estimate comes from its totals.
		t.s.CostUSD = max(t.s.CostUSD, t.costBase+runners.EstimateCost(t.model, own))
	}
}

// denials are the refused tool calls of a process: the result lists them
// (claude's does), else the tool results marked refused (gemini's).
func (t *tracker) denials(res *runners.Result) []runners.Denial {
	if res != nil && len(res.Denials) > 0 {
		return res.Denials
	}
	return t.refused
}

// isTestCommand reports whether cmd, a shell command, runs a project's
// tests (testCommand). Every shell call of a session is asked: the
// expression, which backtracks, only runs on a command that holds a word
// every one of its alternatives holds.
func isTestCommand(cmd string) bool {
	for _, w := range testCommandWords {
		if strings.Contains(cmd, w) {
			return testCommand.MatchString(cmd)
		}
	}
	return false
}

// testCommandWords are words of testCommand's alternatives: each holds one.
var testCommandWords = [...]string{"test", "check", "jest", "rspec", "tox"}

// testCommand matches a shell command that runs a project's tests.
var testCommand = lazy.MustCompile(`(?:^|[\s;&|(])(?:go test|(?:npm|yarn|pnpm|bun)(?: run)? test|(?:python3? -m )?pytest|cargo test|make (?:test|check)|(?:\./)?gradlew? test|mvn test|npx (?:jest|vitest)|jest|vitest|(?:bundle exec )?rspec|ctest|tox|dotnet test|mix test)\b`)

// The end of a test run's output the reviewers are shown.
const (
	maxTestLines = 40
	maxTestBytes = 4 << 10
)

// tail is the last lines of s, at most n (n >= 1) lines and max bytes,
// with "[...]" in place of what is cut. It looks only at the end of s: a
// test run's output may be megabytes.
func tail(s string, n, maxBytes int) string {
	s = strings.TrimRight(s, "\n")
	cut := len(s) // after the loop, where the last n lines start, less one
	for range n {
		if cut = strings.LastIndexByte(s[:cut], '\n'); cut < 0 {
			break
		}
	}
	if cut >= 0 {
		s = "[...]\n" + s[cut+1:]
	}
	if len(s) > maxBytes {
		s = "[...]" + strings.ToValidUTF8(s[len(s)-maxBytes:], "")
	}
	return s + "\n"
}

func oneLineCmd(s string) string { return strings.Join(strings.Fields(s), " ") }
