package observability

import (
	"encoding/json"
	"slices"
	"time"
)

// A run's events are its wire format: events.ndjson, `--progress=json`,
// MCP progress and the Action's log all carry them (events.schema.json),
// and the record is their fold (Apply).

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
	Time  time.Time `json:"time"`
	Run   string    `json:"run,omitempty"` // the run's id, once it has one
	Kind  EventKind `json:"kind"`
	Phase Phase     `json:"phase,omitempty"`
	Role  Role      `json:"role,omitempty"`
	LLM   LLM       `json:"llm,omitempty"`
	Seat  string    `json:"seat,omitempty"` // a reviewer seat: its domain, or "all"
	Round int       `json:"round,omitempty"`
	Text  string    `json:"text,omitempty"`
	// RunCostUSD is the run's cost so far, coder and reviewers, running
	// sessions included (agent and session events). It never goes down.
	RunCostUSD float64 `json:"run_cost_usd,omitempty"`

	Agent   *Progress    `json:"agent,omitempty"`
	Process *CommandLine `json:"process,omitempty"`
	Usage   *Usage       `json:"usage,omitempty"`
	// AgentUsage is one session's usage (session events).
	AgentUsage *AgentUsage `json:"agent_usage,omitempty"`
	Commit     *Commit     `json:"commit,omitempty"`
	Review     *Round      `json:"review,omitempty"`
	Record     *Record     `json:"record,omitempty"`
	Outcome    *Outcome    `json:"outcome,omitempty"`
	// GitHub is what spawn did on GitHub (EventGitHub).
	GitHub *GitHubStep `json:"github,omitempty"`
	// Resume is a continuation of the run (EventResumed).
	Resume *Resume `json:"resume,omitempty"`
	// Message is a message delivered to the coder (EventMessage).
	Message *Message `json:"message,omitempty"`
	// Security is a finding spawn made itself (EventSecurity).
	Security *SecurityFinding `json:"security,omitempty"`
}

// GitHubStep is one thing spawn did on GitHub; one field is set, except
// that a Reply comes with the Thread it is in.
type GitHubStep struct {
	// PRURL: the pull request was opened, or found open for the branch.
	PRURL string `json:"pr_url,omitempty"`
	// PullRequest: the pull request the run works on (with PRURL in github
	// mode; alone for spawn pr, which takes up an open one).
	PullRequest *PullRequest `json:"pull_request,omitempty"`
	// Thread: a review thread as spawn now leaves it (its state, its
	// replies), or one it left alone.
	Thread *GitHubThread `json:"thread,omitempty"`
	// Pushed: the branch was pushed; its tip is this commit.
	Pushed string `json:"pushed,omitempty"`
	// Review: a review was posted.
	Review *GitHubReview `json:"review,omitempty"`
	// Resolved: a thread was resolved (or could not be).
	Resolved *ResolvedComment `json:"resolved,omitempty"`
	// Status: a commit status was set.
	Status *GitHubStatus `json:"status,omitempty"`
	// Reply: a reply was posted in a thread (Text says what).
	Reply string `json:"reply,omitempty"`
}

// Outcome is how a run ended.
type Outcome struct {
	Status   Status  `json:"status"`
	Verdict  Verdict `json:"verdict"`
	ExitCode int     `json:"exit_code"`
	Error    *Error  `json:"error"`
}

// ProgressKind names a Progress event.
type ProgressKind string

// The progress events an agent's session reports (watcher.Supervise), as
// they happen.
const (
	ProgressStarted     ProgressKind = "started"      // a process started (Detail: argv[0], Resume in Session)
	ProgressText        ProgressKind = "text"         // the model said something (Detail)
	ProgressTool        ProgressKind = "tool"         // the model called a tool (Tool, Input)
	ProgressFileChanged ProgressKind = "file_changed" // a file tool succeeded (Detail: the path)
	ProgressDenial      ProgressKind = "denial"       // a tool call was refused (Tool, Input; Rule if escalatable)
	ProgressEscalation  ProgressKind = "escalation"   // a permission was granted (Tool, Rule)
	ProgressQuestion    ProgressKind = "question"     // the agent asked (Detail, Confidence)
	ProgressAnswer      ProgressKind = "answer"       // spawn answered (Detail)
	ProgressRetry       ProgressKind = "retry"        // the CLI retries the model API (Detail)
	ProgressBudget      ProgressKind = "budget"       // a budget was hit (Detail: max_turns or max_cost_usd)
	ProgressLimit       ProgressKind = "limit"        // spawn's own limit stopped escalating or answering (Detail)
	ProgressFinished    ProgressKind = "finished"     // a process ended (Detail: its stop reason or "exited")
)

// Progress is one thing that happened during a session, with the running
// totals at that moment.
type Progress struct {
	Kind       ProgressKind    `json:"kind"`
	Elapsed    time.Duration   `json:"elapsed_ns"`
	Turns      int             `json:"turns"`
	CostUSD    float64         `json:"cost_usd"`
	Files      int             `json:"files"`   // distinct files changed so far
	Process    int             `json:"process"` // 1-based index of the process in the session
	Tool       string          `json:"tool,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Rule       string          `json:"rule,omitempty"`
	Detail     string          `json:"detail,omitempty"`
	Confidence float64         `json:"confidence,omitempty"`
}

// Round is a finished review round as the record keeps it.
//
// Its JSON names are its Go field names, as events.ndjson has always
// written them (events.schema.json, $defs.round).
type Round struct {
	Number int `json:"Number"`
	// Feedback holds one entry per reviewer seat.
	Feedback []ReviewFeedback `json:"Feedback"`
	// Findings is every finding seen so far, with its current status.
	Findings []Finding `json:"Findings"`
	// Security is every finding about security seen so far.
	Security []SecurityFinding `json:"Security"`
	// CoderReplies are the coder's replies, in the fix turn before this
	// round, to the findings it was asked to fix (Iteration is that coder
	// turn: Number). Empty in round 1 and when the coder followed no
	// contract.
	CoderReplies []CoderReply `json:"CoderReplies"`
	// Note explains the round's outcome when it ended the loop without an
	// approval ("the fix turn changed nothing"); "" otherwise.
	Note string `json:"Note"`
}

// Apply folds one event into rec, as the record keeps what the run did,
// and reports whether rec changed.
func Apply(rec *Record, e Event) bool {
	switch e.Kind {
	case EventNote, EventWarning:
		rec.Notes = append(rec.Notes, e.Text)
	case EventSecurity:
		rec.SecurityFindings = append(rec.SecurityFindings, *e.Security)
	case EventProcess:
		rec.CommandLines = append(rec.CommandLines, *e.Process)
		if e.Usage != nil {
			rec.Usage.InputTokens += e.Usage.InputTokens
			rec.Usage.OutputTokens += e.Usage.OutputTokens
		}
	case EventSession:
		rec.Usage.Turns += e.Usage.Turns
		rec.Usage.CostUSD += e.Usage.CostUSD
		if e.AgentUsage != nil {
			rec.Usage.ByAgent = append(rec.Usage.ByAgent, *e.AgentUsage)
		}
		if e.Role == RoleCoder && e.Text != "" {
			rec.CoderMessages = append(rec.CoderMessages, CoderMessage{Iteration: e.Round, Text: e.Text})
		}
	case EventCommit:
		rec.Commits = append(rec.Commits, *e.Commit)
	case EventGitHub:
		applyGitHub(rec, e.GitHub)
	case EventMessage:
		rec.Messages = append(rec.Messages, *e.Message)
	case EventResumed:
		rec.Resumes = append(rec.Resumes, *e.Resume)
		rec.Status, rec.Verdict, rec.ExitCode, rec.Error, rec.FinishedAt = StatusRunning, VerdictNone, 0, nil, nil
	case EventReview:
		applyReview(rec, e)
	case EventAgent:
		return applyAgent(rec, e)
	case EventFinished:
		o := e.Outcome
		rec.Verdict, rec.Error = o.Verdict, o.Error
		rec.Finish(o.Status, o.ExitCode, e.Time)
	default:
		return false
	}
	return true
}

func applyReview(rec *Record, e Event) {
	r := e.Review
	rec.ReviewFeedback = append(rec.ReviewFeedback, r.Feedback...)
	rec.CoderReplies = append(rec.CoderReplies, r.CoderReplies...)
	state := map[string]Finding{}
	for _, f := range r.Findings {
		state[f.ID] = f
	}
	for i := range rec.ReviewFeedback {
		for j, f := range rec.ReviewFeedback[i].Findings {
			if now, ok := state[f.ID]; ok {
				rec.ReviewFeedback[i].Findings[j] = now
			}
		}
	}
	// The reviewers' findings are replaced by the round's; spawn's own stay.
	var kept []SecurityFinding
	for _, f := range rec.SecurityFindings {
		if f.Kind != FindingReview {
			kept = append(kept, f)
		}
	}
	for _, f := range r.Security {
		f.Kind = FindingReview
		kept = append(kept, f)
	}
	rec.SecurityFindings = kept
	if r.Note != "" {
		rec.Notes = append(rec.Notes, r.Note)
	}
}

func applyAgent(rec *Record, e Event) bool {
	p := e.Agent
	switch p.Kind {
	case ProgressDenial:
		rec.PermissionsRequested = append(rec.PermissionsRequested, PermissionRequest{
			LLM: e.LLM, Iteration: e.Round, Tool: p.Tool, Input: p.Input, Rule: p.Rule,
		})
	case ProgressEscalation:
		rec.PermissionsGranted = append(rec.PermissionsGranted, PermissionGrant{
			LLM: e.LLM, Iteration: e.Round, Tool: p.Tool, Rule: p.Rule,
		})
	case ProgressQuestion:
		rec.Questions = append(rec.Questions, Question{
			LLM: e.LLM, Iteration: e.Round, Question: p.Detail, Confidence: p.Confidence,
		})
	case ProgressAnswer:
		// The answer is to the last question this agent asked in this round.
		for i := len(rec.Questions) - 1; i >= 0; i-- {
			if q := &rec.Questions[i]; q.LLM == e.LLM && q.Iteration == e.Round {
				q.Answer = p.Detail
				break
			}
		}
	case ProgressLimit:
		rec.Notes = append(rec.Notes, p.Detail)
	default:
		return false
	}
	return true
}

// applyGitHub folds one step on GitHub into the record.
func applyGitHub(rec *Record, g *GitHubStep) {
	if g.PullRequest != nil {
		pr := *g.PullRequest
		rec.PullRequest = &pr
		if rec.PRURL == nil && pr.URL != "" {
			rec.PRURL = &pr.URL
		}
	}
	if g.Thread != nil {
		putThread(rec, *g.Thread)
	}
	switch {
	case g.PRURL != "":
		url := g.PRURL
		rec.PRURL = &url
	case g.Pushed != "":
		// Every commit recorded so far is on the pushed branch.
		for i := range rec.Commits {
			rec.Commits[i].Pushed = true
		}
	case g.Review != nil:
		rec.GitHubReviews = append(rec.GitHubReviews, *g.Review)
	case g.Resolved != nil:
		rec.ResolvedComments = append(rec.ResolvedComments, *g.Resolved)
		if !g.Resolved.Resolved {
			return
		}
		for i := range rec.GitHubReviews {
			for j, c := range rec.GitHubReviews[i].Comments {
				if c.ID == g.Resolved.CommentID {
					rec.GitHubReviews[i].Comments[j].Resolved = true
					rec.GitHubReviews[i].Comments[j].ResolvedByCommit = g.Resolved.Commit
				}
			}
		}
	case g.Status != nil:
		rec.GitHubStatuses = append(rec.GitHubStatuses, *g.Status)
	}
}

// putThread replaces the record's entry of thread t (by its first
// comment), or appends it.
func putThread(rec *Record, t GitHubThread) {
	t.Replies = slices.Clone(t.Replies)
	for i := range rec.GitHubThreads {
		if rec.GitHubThreads[i].CommentID == t.CommentID {
			rec.GitHubThreads[i] = t
			return
		}
	}
	rec.GitHubThreads = append(rec.GitHubThreads, t)
}
