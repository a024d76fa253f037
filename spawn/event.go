package spawn

import (
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/team"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// EventKind names what an Event reports.
type EventKind string

// The kinds of event, in the order a run emits them.
const (
	// EventStarted: the run exists (Record holds its first state).
	EventStarted EventKind = "started"
	// EventResumed: spawn resume continues the run (Resume).
	EventResumed EventKind = "resumed"
	// EventPhase: the run entered Phase (Round is the review round).
	EventPhase EventKind = "phase"
	// EventNote: something the user should know that is not an error (Text).
	EventNote EventKind = "note"
	// EventWarning: something went wrong that did not end the run (Text).
	EventWarning EventKind = "warning"
	// EventSecurity: spawn found an agent changing something of the user's
	// outside its sandbox, and undid what it could (Security).
	EventSecurity EventKind = "security"
	// EventAgent: an agent did something (Agent), as the watcher saw it;
	// RunCostUSD is the run's running total.
	EventAgent EventKind = "agent"
	// EventProcess: an agent process ended (Process, Usage: its tokens).
	EventProcess EventKind = "process"
	// EventSession: an agent session ended (Usage: its turns and cost;
	// AgentUsage: the same with its tokens, for usage.by_agent; Text: the
	// coder's final message; RunCostUSD).
	EventSession EventKind = "session"
	// EventMessage: a message sent with `spawn send` reached the coder
	// (Message, with when, how and in which round).
	EventMessage EventKind = "message"
	// EventCommit: a commit landed on the sandbox branch (Commit).
	EventCommit EventKind = "commit"
	// EventReview: a review round ended (Review).
	EventReview EventKind = "review"
	// EventGitHub: spawn did something on GitHub (GitHub).
	EventGitHub EventKind = "github"
	// EventFinished: the run ended (Outcome).
	EventFinished EventKind = "finished"
)

// Phase is the part of its life a run is in.
type Phase string

// The phases.
const (
	PhaseSandbox  Phase = "sandbox"  // creating the worktree
	PhaseCoder    Phase = "coder"    // the coder's first turn
	PhaseReviewer Phase = "reviewer" // a review round
	PhaseFixing   Phase = "fixing"   // the coder addressing a review
	PhaseFinish   Phase = "finish"   // saving the work and the record
)

// Event is one thing that happened in a run. Every consumer (the record,
// events.ndjson, the terminal, --progress=json, MCP progress) reads the
// same stream. Only the fields its Kind names are set.
type Event struct {
	Time  time.Time          `json:"time"`
	Run   string             `json:"run,omitempty"` // the run's id, once it has one
	Kind  EventKind          `json:"kind"`
	Phase Phase              `json:"phase,omitempty"`
	Role  observability.Role `json:"role,omitempty"`
	LLM   observability.LLM  `json:"llm,omitempty"`
	Seat  string             `json:"seat,omitempty"` // a reviewer seat: its domain, or "all"
	Round int                `json:"round,omitempty"`
	Text  string             `json:"text,omitempty"`
	// RunCostUSD is the run's cost so far, coder and reviewers, running
	// sessions included (agent and session events). It never goes down.
	RunCostUSD float64 `json:"run_cost_usd,omitempty"`

	Agent   *watcher.Progress          `json:"agent,omitempty"`
	Process *observability.CommandLine `json:"process,omitempty"`
	Usage   *observability.Usage       `json:"usage,omitempty"`
	// AgentUsage is one session's usage (session events).
	AgentUsage *observability.AgentUsage `json:"agent_usage,omitempty"`
	Commit     *observability.Commit     `json:"commit,omitempty"`
	Review     *team.Round               `json:"review,omitempty"`
	Record     *observability.Record     `json:"record,omitempty"`
	Outcome    *Outcome                  `json:"outcome,omitempty"`
	// GitHub is what spawn did on GitHub (EventGitHub).
	GitHub *GitHubStep `json:"github,omitempty"`
	// Resume is a continuation of the run (EventResumed).
	Resume *observability.Resume `json:"resume,omitempty"`
	// Message is a message delivered to the coder (EventMessage).
	Message *observability.Message `json:"message,omitempty"`
	// Security is a finding spawn made itself (EventSecurity).
	Security *observability.SecurityFinding `json:"security,omitempty"`
}

// GitHubStep is one thing spawn did on GitHub; one field is set, except
// that a Reply comes with the Thread it is in.
type GitHubStep struct {
	// PRURL: the pull request was opened, or found open for the branch.
	PRURL string `json:"pr_url,omitempty"`
	// PullRequest: the pull request the run works on (with PRURL in github
	// mode; alone for spawn pr, which takes up an open one).
	PullRequest *observability.PullRequest `json:"pull_request,omitempty"`
	// Thread: a review thread as spawn now leaves it (its state, its
	// replies), or one it left alone.
	Thread *observability.GitHubThread `json:"thread,omitempty"`
	// Pushed: the branch was pushed; its tip is this commit.
	Pushed string `json:"pushed,omitempty"`
	// Review: a review was posted.
	Review *observability.GitHubReview `json:"review,omitempty"`
	// Resolved: a thread was resolved (or could not be).
	Resolved *observability.ResolvedComment `json:"resolved,omitempty"`
	// Status: a commit status was set.
	Status *observability.GitHubStatus `json:"status,omitempty"`
	// Reply: a reply was posted in a thread (Text says what).
	Reply string `json:"reply,omitempty"`
}

// Outcome is how a run ended.
type Outcome struct {
	Status   observability.Status  `json:"status"`
	Verdict  observability.Verdict `json:"verdict"`
	ExitCode int                   `json:"exit_code"`
	Error    *observability.Error  `json:"error"`
}

// Sink receives a run's events, one at a time and in order: a run never
// calls Event concurrently. Event must not block for long; it must not
// change the event.
type Sink interface {
	Event(Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

// Event calls f(e).
func (f SinkFunc) Event(e Event) { f(e) }

// Discard is a Sink that drops every event.
var Discard Sink = SinkFunc(func(Event) {})

// stream stamps events and hands them to every sink in turn, one event at a
// time even when agents report concurrently (parallel reviewers).
type stream struct {
	mu    sync.Mutex
	run   string
	now   func() time.Time
	sinks []Sink
}

func (s *stream) emit(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = s.now().UTC()
	}
	if e.Run == "" {
		e.Run = s.run
	}
	for _, sink := range s.sinks {
		sink.Event(e)
	}
}

// add appends a sink: it sees the events emitted from now on.
func (s *stream) add(sink Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinks = append(s.sinks, sink)
}
