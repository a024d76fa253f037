// Package observability holds spawn's record of a run: what was asked, what
// ran with which command lines, what was requested, granted, reviewed and
// committed, what it cost, and how it ended. The record is written as JSON
// after every step, with every secret value redacted.
package observability

import (
	"encoding/json"
	"slices"
	"time"
)

// Schema identifies the record format.
const Schema = "spawn.record/v1"

// Record is everything spawn knows about one run. Every key is always
// present in its JSON form; lists are [] when empty, never null.
type Record struct {
	Schema      string     `json:"schema"`
	ID          string     `json:"id"`
	Task        string     `json:"task"`
	Mode        Mode       `json:"mode"`
	Status      Status     `json:"status"`
	Verdict     Verdict    `json:"verdict"`
	ExitCode    int        `json:"exit_code"`
	Repo        string     `json:"repo"`
	Base        string     `json:"base"`
	Branch      string     `json:"branch"`
	SandboxPath string     `json:"sandbox_path"`
	Isolation   *Isolation `json:"isolation"` // how the agents were confined; nil for a run rejected before
	// Seats are the run's agents: the coder and each reviewer of the
	// board, with its CLI, model and model family. Empty in a record of a
	// run rejected before it began, and in records older than seats.
	Seats                []Seat              `json:"seats"`
	StartedAt            time.Time           `json:"started_at"`
	FinishedAt           *time.Time          `json:"finished_at"`
	DurationMS           int64               `json:"duration_ms"`
	CommandLines         []CommandLine       `json:"command_lines"`
	PermissionsRequested []PermissionRequest `json:"permissions_requested"`
	PermissionsGranted   []PermissionGrant   `json:"permissions_granted"`
	ReviewFeedback       []ReviewFeedback    `json:"review_feedback"`
	SecurityFindings     []SecurityFinding   `json:"security_findings"`
	Commits              []Commit            `json:"commits"`
	PRURL                *string             `json:"pr_url"`
	// PullRequest is the pull request the run works on (github mode and
	// spawn pr); nil otherwise.
	PullRequest *PullRequest `json:"pull_request"`
	// GitHubThreads are the pull request's review threads spawn opened,
	// acted on or left alone, each with its state and spawn's replies.
	GitHubThreads    []GitHubThread    `json:"github_threads"`
	GitHubReviews    []GitHubReview    `json:"github_reviews"`
	ResolvedComments []ResolvedComment `json:"resolved_comments"`
	// GitHubStatuses are the commit statuses spawn set (github mode).
	GitHubStatuses []GitHubStatus `json:"github_statuses"`
	Questions      []Question     `json:"questions"`
	// CoderReplies are the coder's answers to the findings of each fix
	// round: fixed or declined, with a reason.
	CoderReplies []CoderReply `json:"coder_replies"`
	// CoderMessages are the coder's final messages, one per turn.
	CoderMessages []CoderMessage `json:"coder_messages"`
	// Resumes are the continuations of the run by spawn resume, each with
	// the outcome the run had before it.
	Resumes []Resume `json:"resumes"`
	// Messages are the messages a person sent the coder with `spawn send`
	// that reached it, in the order they were delivered.
	Messages []Message `json:"messages"`
	Usage    Usage     `json:"usage"`
	Error    *Error    `json:"error"`
	// Notes are things the user should know that are not errors: a limit
	// that stopped escalating or answering.
	Notes []string `json:"notes"`
	// Cassette is where the run's model traffic is kept, and how much of
	// it; nil when the run kept none ([observability] cassette = false).
	Cassette *Cassette `json:"cassette"`
	// Replay says which run this run replays and how the two compare; nil
	// for a run that is not a replay.
	Replay *Replay `json:"replay"`
}

// Seat is one agent of a run: the coder, or a reviewer of the board.
type Seat struct {
	Role Role `json:"role"`
	// Seat is a reviewer's name on the board ("codex"); "" for the coder.
	Seat string `json:"seat"`
	LLM  LLM    `json:"llm"`
	// Model is the model configured for the seat; "" is the CLI's default
	// (the command lines' model says which it ran).
	Model string `json:"model"`
	// Family is the model family ("anthropic", "openai", "google").
	Family string `json:"family"`
}

// CommandLine is one agent process spawn started.
type CommandLine struct {
	LLM        LLM       `json:"llm"`
	Role       Role      `json:"role"`
	Iteration  int       `json:"iteration"`
	Argv       []string  `json:"argv"`
	WorkDir    string    `json:"work_dir"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	ExitCode   int       `json:"exit_code"`
	Pid        int       `json:"pid"`       // the agent's reaper: the process group id
	AgentPid   int       `json:"agent_pid"` // the agent CLI's own process
	// Session is the agent's session id, from its init or result event;
	// "" when it reported none. spawn resume resumes the coder's.
	Session string `json:"session"`
	// Model is the model the agent said it runs (its init event); "" when
	// it did not say.
	Model  string `json:"model"`
	Stdout string `json:"stdout"` // transcript file, relative to the run directory
	Stderr string `json:"stderr"`
	// Tools are the tools the agent was offered: the list its CLI reported
	// (claude's init event), else the reviewer's allowlist less its
	// exclusions (gemini reports none). Empty when unknown.
	Tools []string `json:"tools"`
	// SessionTokens is the running total of its session's tokens the CLI
	// reported at the end of the process, for a CLI that reports one
	// (codex: a resumed thread's usage counts its earlier turns); nil
	// for a CLI that reports each process's own use, or no result. The
	// session's next process is charged what it adds to this total.
	SessionTokens *Tokens `json:"session_tokens"`
}

// PermissionRequest is a tool call the agent made and its CLI refused.
type PermissionRequest struct {
	LLM       LLM             `json:"llm"`
	Iteration int             `json:"iteration"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	// Rule is the escalatable rule that matches the call, "" when none does.
	Rule string `json:"rule"`
}

// ReviewFeedback is one reviewer's answer in one round.
type ReviewFeedback struct {
	Iteration int `json:"iteration"`
	Reviewer  LLM `json:"reviewer"`
	// Domain is the domain a parallel domain reviewer covered, or "all".
	Domain   string        `json:"domain"`
	Verdict  ReviewVerdict `json:"verdict"`
	Summary  string        `json:"summary"`
	Findings []Finding     `json:"findings"`
	// Resolved lists the ids of earlier findings this review resolved.
	Resolved []string `json:"resolved"`
	// ResolvedByApproval lists the ids of open findings the reviewer was
	// shown and neither repeated nor listed as resolved, in an answer that
	// approves: the approval resolves them.
	ResolvedByApproval []string `json:"resolved_by_approval"`
	RawResponse        string   `json:"raw_response"`
	// Commit is the commit the round reviewed: the tip of the sandbox
	// branch when the round began.
	Commit    string `json:"commit"`
	DiffBytes int    `json:"diff_bytes"`
	// Delta is true when the reviewer saw only what changed since its last
	// review, plus the open findings.
	Delta bool `json:"delta"`
	// ParseError says why the answer could not be used ("" when it could).
	ParseError string `json:"parse_error"`
	// PromptBytes is the size of the review prompt the seat was sent this
	// round (a repair turn's prompt is not counted).
	PromptBytes int `json:"prompt_bytes"`
	// FullPromptBytes is the size of a full re-review's prompt this round:
	// the instructions, the task, the whole change and the contract, as a
	// fresh session is sent in round 1. PromptBytes/FullPromptBytes is what
	// a round saved.
	FullPromptBytes int `json:"full_prompt_bytes"`
	// Fresh is true when the seat started a new reviewer session this round:
	// in round 1, and later when resuming would have replayed more than a
	// full re-review sends (the session's earlier prompts and answers plus
	// the new prompt exceed FullPromptBytes).
	Fresh bool `json:"fresh"`
	// Tokens are the tokens the reviewer CLI reported for the round's turns.
	Tokens Tokens `json:"tokens"`
}

// Tokens are the tokens an agent CLI reported: Input counts every input
// token sent, Cached the part of Input the model served from its cache.
type Tokens struct {
	Input  int64 `json:"input"`
	Cached int64 `json:"cached"`
	Output int64 `json:"output"`
}

// Finding is one issue a reviewer reported. Status is its current state
// across the run: "open" or "resolved".
type Finding struct {
	ID         string        `json:"id"`
	Severity   Severity      `json:"severity"`
	Domain     string        `json:"domain"`
	File       string        `json:"file"`
	Line       int           `json:"line"`
	Title      string        `json:"title"`
	Detail     string        `json:"detail"`
	Suggestion string        `json:"suggestion"`
	Status     FindingStatus `json:"status"`
	// RaisedBy are the reviewer seats that reported the finding (their
	// review_feedback domains: "all", "security", "codex",
	// "codex/security"), in the order they did.
	RaisedBy []string `json:"raised_by"`
}

// MarshalJSON encodes the finding with raised_by [] when it is empty.
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding
	p := plain(f)
	p.RaisedBy = nonNil(p.RaisedBy)
	return json.Marshal(p)
}

// SecurityFinding is a finding about security: every finding of the
// security domain, and every critical or high finding that speaks of it.
type SecurityFinding struct {
	ID             string        `json:"id"`
	Kind           FindingKind   `json:"kind"`
	Iteration      int           `json:"iteration"`
	Severity       Severity      `json:"severity"`
	File           string        `json:"file"`
	Line           int           `json:"line"`
	Description    string        `json:"description"`
	Recommendation string        `json:"recommendation"`
	Status         FindingStatus `json:"status"`
}

// FindingKind says where a security finding comes from.
type FindingKind string

// Kinds of security finding.
const (
	// FindingReview is a reviewer's finding about the change.
	FindingReview FindingKind = "review"
	// FindingSandboxTamper is a change an agent made to something of the
	// user's outside its sandbox (a ref, HEAD, .git/config, a hook, the
	// user's work tree), found by spawn's snapshot after a turn.
	FindingSandboxTamper FindingKind = "sandbox_tamper"
	// FindingSandboxBlocked is an attempt an agent made that its sandbox
	// refused (a write to a read-only path, an operation not permitted),
	// or that spawn refused (a link where spawn reads, a git store that is
	// not the one spawn made): nothing happened, but an agent that tries
	// was probably prompt-injected.
	FindingSandboxBlocked FindingKind = "sandbox_blocked"
)

// Isolation is how a run's agents were confined.
type Isolation struct {
	// Mode is "bwrap" (bubblewrap, Linux), "seatbelt" (macOS) or "none".
	Mode string `json:"mode"`
	// Network is "open" or "model-only".
	Network string `json:"network"`
	// Reason says why Mode is "none"; "" otherwise.
	Reason string `json:"reason"`
	// Limits are what each agent's process tree was held to, and how.
	Limits Limits `json:"limits"`
}

// Limits are the limits of each agent's process tree: its processes,
// memory and disk (0: no limit), and what enforced them ("cgroup v2",
// "cgroup v1" or "rlimit").
type Limits struct {
	Processes   int    `json:"processes"`
	MemoryBytes int64  `json:"memory_bytes"`
	DiskBytes   int64  `json:"disk_bytes"`
	EnforcedBy  string `json:"enforced_by"`
}

// Question is a question the agent stopped with, and spawn's answer ("" when
// a limit left it unanswered).
type Question struct {
	LLM        LLM     `json:"llm"`
	Iteration  int     `json:"iteration"`
	Question   string  `json:"question"`
	Confidence float64 `json:"confidence"`
	Answer     string  `json:"answer"`
}

// PermissionGrant is a tool rule spawn granted the agent.
type PermissionGrant struct {
	LLM       LLM    `json:"llm"`
	Iteration int    `json:"iteration"`
	Tool      string `json:"tool"`
	Rule      string `json:"rule"`
}

// Commit is a commit on the sandbox branch.
type Commit struct {
	SHA       string `json:"sha"`
	Message   string `json:"message"`
	Iteration int    `json:"iteration"`
	// LLM is who made it: the agent ("claude-code") when it committed
	// itself, or "spawn" when spawn committed what the agent left.
	LLM    LLM  `json:"llm"`
	Pushed bool `json:"pushed"`
	// Tree is the commit's tree: what a replay of the run compares; ""
	// until the run finished.
	Tree string `json:"tree"`
}

// Usage sums what the agents reported, over the whole run: coder and
// reviewers.
type Usage struct {
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Turns        int     `json:"turns"`
	// RelayedCostUSD is the cost of every model answer that went through
	// spawn's relay, priced from the usage each one reported: the agents'
	// CLIs and any program they ran. max_cost_usd stops the run when
	// either this or CostUSD (the CLIs' own figures) reaches it.
	RelayedCostUSD float64 `json:"relayed_cost_usd"`
	// ByAgent is the same per agent session: who, in which round.
	ByAgent []AgentUsage `json:"by_agent"`
}

// AgentUsage is what one agent session (a coder turn, or a reviewer
// seat's turn) used.
type AgentUsage struct {
	LLM          LLM     `json:"llm"`
	Role         Role    `json:"role"`
	Iteration    int     `json:"iteration"`
	Seat         string  `json:"seat"` // a reviewer's domain, or "all"; "" for the coder
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Turns        int     `json:"turns"`
}

// CoderAction is what the coder did about a finding.
type CoderAction string

// The coder's actions.
const (
	CoderFixed    CoderAction = "fixed"
	CoderDeclined CoderAction = "declined"
)

// CoderReply is the coder's answer to one finding in a fix round.
type CoderReply struct {
	Iteration int         `json:"iteration"` // the coder turn (fix of review round Iteration-1)
	FindingID string      `json:"finding_id"`
	Action    CoderAction `json:"action"`
	Reason    string      `json:"reason"`
}

// CoderMessage is the coder's final message of one turn.
type CoderMessage struct {
	Iteration int    `json:"iteration"`
	Text      string `json:"text"`
}

// GitHubReview is one review spawn posted on the run's pull request: one
// per reviewer seat and round.
type GitHubReview struct {
	ID        int64  `json:"id"`
	Iteration int    `json:"iteration"`
	Seat      string `json:"seat"`
	// State is GitHub's: COMMENTED (one identity: the verdict is in the
	// body), APPROVED or CHANGES_REQUESTED (a reviewer identity).
	State    string          `json:"state"`
	Body     string          `json:"body"`
	Commit   string          `json:"commit"`
	URL      string          `json:"url"`
	Comments []GitHubComment `json:"comments"`
}

// GitHubComment is one inline comment of a review: a finding anchored on
// the pull request's diff, and its thread.
type GitHubComment struct {
	ID        int64  `json:"id"`
	FindingID string `json:"finding_id"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	ThreadID  string `json:"thread_id"`
	Resolved  bool   `json:"resolved"`
	// ResolvedByCommit is the commit a later round confirmed the finding
	// fixed at; "" while open.
	ResolvedByCommit string `json:"resolved_by_commit"`
}

// PullRequest is the pull request a run works on.
type PullRequest struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	// Head and Base are its branches.
	Head string `json:"head"`
	Base string `json:"base"`
	// HeadSHA is its head commit when the run took it up (spawn pr), or
	// when spawn opened it (github mode).
	HeadSHA string `json:"head_sha"`
	// Author is who opened it.
	Author string `json:"author"`
}

// GitHubThread is one review thread of the pull request and what spawn
// did about it. A thread spawn left alone carries who opened it, where,
// and why it was left (Skipped), never its text.
type GitHubThread struct {
	// ID is GitHub's thread id (PRRT_...), what resolving takes; "" when
	// spawn has not read it yet.
	ID string `json:"id"`
	// CommentID is the REST id of its first comment, which replies answer.
	CommentID int64  `json:"comment_id"`
	Author    string `json:"author"`
	Path      string `json:"path"`
	Line      int    `json:"line"` // 0 when outdated or on the whole file
	// FindingID is the finding the thread holds (github mode) or was made
	// into for the coder (spawn pr); "" for a thread left alone.
	FindingID string      `json:"finding_id"`
	State     ThreadState `json:"state"`
	// Skipped says why spawn left the thread alone; "" when it acted on it.
	Skipped SkipReason `json:"skipped"`
	// Replies are spawn's replies in the thread, oldest first.
	Replies []ThreadReply `json:"replies"`
}

// ThreadReply is one reply spawn posted in a review thread.
type ThreadReply struct {
	// CommentID is the reply's REST id.
	CommentID int64     `json:"comment_id"`
	Kind      ReplyKind `json:"kind"`
	// Round is the review (or check) round the reply speaks for; for a
	// decline, the coder's turn.
	Round int `json:"round"`
	// Commits are the commits the reply names as the fix: those since the
	// thread was opened that changed its file, else the fix turn's head.
	Commits []string `json:"commits"`
	Body    string   `json:"body"`
}

// ResolvedBy says who closed a review thread.
type ResolvedBy string

// Who resolves threads.
const (
	ResolvedByVerification ResolvedBy = "verification" // spawn, once a review round confirmed the fix
	ResolvedByHuman        ResolvedBy = "human"        // a person, outside spawn
	// ResolvedByFix: spawn pr, once the coder fixed a person's thread and
	// the fix was pushed ([github] resolve_human_threads = true).
	ResolvedByFix ResolvedBy = "fix"
)

// ResolvedComment is a review thread spawn closed (or could not close:
// Resolved false, with why in Explanation).
type ResolvedComment struct {
	CommentID   int64      `json:"comment_id"`
	ThreadID    string     `json:"thread_id"`
	FindingID   string     `json:"finding_id"`
	Commit      string     `json:"commit"`
	Explanation string     `json:"explanation"`
	ResolvedBy  ResolvedBy `json:"resolved_by"`
	Resolved    bool       `json:"resolved"`
}

// GitHubStatus is a commit status spawn set.
type GitHubStatus struct {
	SHA         string `json:"sha"`
	Context     string `json:"context"`
	State       string `json:"state"`
	Description string `json:"description"`
}

// Resume is one continuation of a run by spawn resume.
type Resume struct {
	At           time.Time `json:"at"`
	FromStatus   Status    `json:"from_status"`
	FromVerdict  Verdict   `json:"from_verdict"`
	FromExitCode int       `json:"from_exit_code"`
	FromError    *Error    `json:"from_error"`
	// FromDurationMS is how long the run had run, in all its earlier
	// parts, when it was resumed: Finish adds the time since At to it.
	FromDurationMS int64 `json:"from_duration_ms"`
	// Round is the round the continuation began in.
	Round int `json:"round"`
}

// Delivery is how a message sent with `spawn send` reached the coder.
type Delivery string

// The ways a message reaches the coder.
const (
	// DeliveryToolCall: after one of its tool calls, as the call's
	// additional context (claude's PostToolUse hook).
	DeliveryToolCall Delivery = "tool_call"
	// DeliveryStop: as it was about to finish its turn, which it then
	// continued (claude's Stop hook).
	DeliveryStop Delivery = "stop"
	// DeliveryPrompt: in the prompt of its next turn (the message was sent
	// between its turns, while the reviewer ran for one).
	DeliveryPrompt Delivery = "prompt"
)

// Message is a message a person sent the running coder with `spawn send`.
type Message struct {
	// ID names the message in the run's inbox.
	ID     string    `json:"id"`
	Text   string    `json:"text"`
	SentAt time.Time `json:"sent_at"`
	// DeliveredAt is when the coder got it; nil while it waits.
	DeliveredAt *time.Time `json:"delivered_at"`
	// How is how it reached the coder; "" while it waits.
	How Delivery `json:"how"`
	// Round is the coder turn that got it (1, then each fix round); 0
	// while it waits.
	Round int `json:"round"`
}

// Error says why a run did not succeed.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// ResetAt is, for a usage limit (kind usage_limit), when the agent's
	// provider said the limit resets; nil when it did not say.
	ResetAt *time.Time `json:"reset_at"`
}

// New returns a running record with every list empty.
func New(id, task string, mode Mode, started time.Time) *Record {
	return &Record{
		Schema:    Schema,
		ID:        id,
		Task:      task,
		Mode:      mode,
		Status:    StatusRunning,
		Verdict:   VerdictNone,
		StartedAt: started.UTC(),
	}
}

// Finish stamps the end of the run.
func (r *Record) Finish(status Status, exitCode int, at time.Time) {
	at = at.UTC()
	r.Status = status
	r.ExitCode = exitCode
	r.FinishedAt = &at
	r.DurationMS = at.Sub(r.StartedAt).Milliseconds()
	if n := len(r.Resumes); n > 0 {
		// The time the run sat stopped before it was resumed does not count.
		last := r.Resumes[n-1]
		r.DurationMS = last.FromDurationMS + at.Sub(last.At).Milliseconds()
	}
}

// MarshalJSON encodes the record with every nil list as [].
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	p := plain(r)
	// The lists whose elements change are copied first: encoding never
	// writes to r, which its owner may read meanwhile.
	p.CommandLines = slices.Clone(nonNil(p.CommandLines))
	p.GitHubThreads = slices.Clone(p.GitHubThreads)
	p.GitHubReviews = slices.Clone(p.GitHubReviews)
	p.ReviewFeedback = slices.Clone(p.ReviewFeedback)
	for i := range p.CommandLines {
		p.CommandLines[i].Argv = nonNil(p.CommandLines[i].Argv)
		p.CommandLines[i].Tools = nonNil(p.CommandLines[i].Tools)
	}
	p.PermissionsRequested = nonNil(p.PermissionsRequested)
	p.PermissionsGranted = nonNil(p.PermissionsGranted)
	p.ReviewFeedback = nonNil(p.ReviewFeedback)
	p.Seats = nonNil(p.Seats)
	p.Resumes = nonNil(p.Resumes)
	p.GitHubStatuses = nonNil(p.GitHubStatuses)
	p.GitHubThreads = nonNil(p.GitHubThreads)
	for i := range p.GitHubThreads {
		p.GitHubThreads[i].Replies = slices.Clone(nonNil(p.GitHubThreads[i].Replies))
		for j := range p.GitHubThreads[i].Replies {
			p.GitHubThreads[i].Replies[j].Commits = nonNil(p.GitHubThreads[i].Replies[j].Commits)
		}
	}
	for i := range p.GitHubReviews {
		p.GitHubReviews[i].Comments = nonNil(p.GitHubReviews[i].Comments)
	}
	for i := range p.ReviewFeedback {
		p.ReviewFeedback[i].Findings = nonNil(p.ReviewFeedback[i].Findings)
		p.ReviewFeedback[i].Resolved = nonNil(p.ReviewFeedback[i].Resolved)
		p.ReviewFeedback[i].ResolvedByApproval = nonNil(p.ReviewFeedback[i].ResolvedByApproval)
	}
	p.SecurityFindings = nonNil(p.SecurityFindings)
	p.Commits = nonNil(p.Commits)
	p.GitHubReviews = nonNil(p.GitHubReviews)
	p.ResolvedComments = nonNil(p.ResolvedComments)
	p.Questions = nonNil(p.Questions)
	p.CoderReplies = nonNil(p.CoderReplies)
	p.CoderMessages = nonNil(p.CoderMessages)
	p.Messages = nonNil(p.Messages)
	p.Usage.ByAgent = nonNil(p.Usage.ByAgent)
	p.Notes = nonNil(p.Notes)
	return json.Marshal(p)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
