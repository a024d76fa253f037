// Package observability holds spawn's record of a run: what was asked, what
// ran with which command lines, what was requested, granted, reviewed and
// committed, what it cost, and how it ended. The record is written as JSON
// after every step, with every secret value redacted.
package observability

import (
	"encoding/json"
	"time"
)

// Schema identifies the record format.
const Schema = "spawn.record/v1"

// Status values of a run.
const (
	StatusRunning     = "running"
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusTimedOut    = "timed_out"
	StatusInterrupted = "interrupted"
)

// Verdict values of a run.
const (
	VerdictNone             = "none"
	VerdictApproved         = "approved"
	VerdictChangesRequested = "changes_requested"
	VerdictNotConverged     = "not_converged"
	VerdictReviewFailed     = "review_failed"
)

// Record is everything spawn knows about one run. Every key is always
// present in its JSON form; lists are [] when empty, never null.
type Record struct {
	Schema               string              `json:"schema"`
	ID                   string              `json:"id"`
	Task                 string              `json:"task"`
	Mode                 string              `json:"mode"`
	Status               string              `json:"status"`
	Verdict              string              `json:"verdict"`
	ExitCode             int                 `json:"exit_code"`
	Repo                 string              `json:"repo"`
	Base                 string              `json:"base"`
	Branch               string              `json:"branch"`
	SandboxPath          string              `json:"sandbox_path"`
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
	GitHubReviews        []json.RawMessage   `json:"github_reviews"`
	ResolvedComments     []json.RawMessage   `json:"resolved_comments"`
	Questions            []Question          `json:"questions"`
	Usage                Usage               `json:"usage"`
	Error                *Error              `json:"error"`
	// Notes are things the user should know that are not errors: a limit
	// that stopped escalating or answering.
	Notes []string `json:"notes"`
}

// CommandLine is one agent process spawn started.
type CommandLine struct {
	LLM        string    `json:"llm"`  // "claude-code" | "gemini-cli"
	Role       string    `json:"role"` // "coder" | "reviewer"
	Iteration  int       `json:"iteration"`
	Argv       []string  `json:"argv"`
	WorkDir    string    `json:"work_dir"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	ExitCode   int       `json:"exit_code"`
	Pid        int       `json:"pid"`    // also the process group id
	Stdout     string    `json:"stdout"` // transcript file, relative to the run directory
	Stderr     string    `json:"stderr"`
}

// PermissionRequest is a tool call the agent made and its CLI refused.
type PermissionRequest struct {
	LLM       string          `json:"llm"`
	Iteration int             `json:"iteration"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	// Rule is the escalatable rule that matches the call, "" when none does.
	Rule string `json:"rule"`
}

// ReviewFeedback is one reviewer's answer in one round.
type ReviewFeedback struct {
	Iteration int    `json:"iteration"`
	Reviewer  string `json:"reviewer"` // "gemini-cli"
	// Domain is the domain a parallel domain reviewer covered, or "all".
	Domain string `json:"domain"`
	// Verdict is "approve", "request_changes", or "review_failed" when the
	// answer could not be parsed even after the repair turn.
	Verdict  string    `json:"verdict"`
	Summary  string    `json:"summary"`
	Findings []Finding `json:"findings"`
	// Resolved lists the ids of earlier findings this review resolved.
	Resolved    []string `json:"resolved"`
	RawResponse string   `json:"raw_response"`
	DiffBytes   int      `json:"diff_bytes"`
	// Delta is true when the reviewer saw only what changed since its last
	// review, plus the open findings.
	Delta bool `json:"delta"`
	// ParseError says why the answer could not be used ("" when it could).
	ParseError string `json:"parse_error"`
}

// Finding is one issue a reviewer reported. Status is its current state
// across the run: "open" or "resolved".
type Finding struct {
	ID         string `json:"id"`
	Severity   string `json:"severity"`
	Domain     string `json:"domain"`
	File       string `json:"file"`
	Line       int    `json:"line"`
	Title      string `json:"title"`
	Detail     string `json:"detail"`
	Suggestion string `json:"suggestion"`
	Status     string `json:"status"`
}

// SecurityFinding is a finding about security: every finding of the
// security domain, and every critical or high finding that speaks of it.
type SecurityFinding struct {
	ID             string `json:"id"`
	Iteration      int    `json:"iteration"`
	Severity       string `json:"severity"`
	File           string `json:"file"`
	Line           int    `json:"line"`
	Description    string `json:"description"`
	Recommendation string `json:"recommendation"`
	Status         string `json:"status"`
}

// Question is a question the agent stopped with, and spawn's answer ("" when
// a limit left it unanswered).
type Question struct {
	LLM        string  `json:"llm"`
	Iteration  int     `json:"iteration"`
	Question   string  `json:"question"`
	Confidence float64 `json:"confidence"`
	Answer     string  `json:"answer"`
}

// PermissionGrant is a tool rule spawn granted the agent.
type PermissionGrant struct {
	LLM       string `json:"llm"`
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
	LLM    string `json:"llm"`
	Pushed bool   `json:"pushed"`
}

// Usage sums what the agents reported.
type Usage struct {
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Turns        int     `json:"turns"`
}

// Error says why a run did not succeed.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// New returns a running record with every list empty.
func New(id, task, mode string, started time.Time) *Record {
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
func (r *Record) Finish(status string, exitCode int, at time.Time) {
	at = at.UTC()
	r.Status = status
	r.ExitCode = exitCode
	r.FinishedAt = &at
	r.DurationMS = at.Sub(r.StartedAt).Milliseconds()
}

// MarshalJSON encodes the record with every nil list as [].
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	p := plain(r)
	p.CommandLines = nonNil(p.CommandLines)
	for i := range p.CommandLines {
		p.CommandLines[i].Argv = nonNil(p.CommandLines[i].Argv)
	}
	p.PermissionsRequested = nonNil(p.PermissionsRequested)
	p.PermissionsGranted = nonNil(p.PermissionsGranted)
	p.ReviewFeedback = nonNil(p.ReviewFeedback)
	for i := range p.ReviewFeedback {
		p.ReviewFeedback[i].Findings = nonNil(p.ReviewFeedback[i].Findings)
		p.ReviewFeedback[i].Resolved = nonNil(p.ReviewFeedback[i].Resolved)
	}
	p.SecurityFindings = nonNil(p.SecurityFindings)
	p.Commits = nonNil(p.Commits)
	p.GitHubReviews = nonNil(p.GitHubReviews)
	p.ResolvedComments = nonNil(p.ResolvedComments)
	p.Questions = nonNil(p.Questions)
	p.Notes = nonNil(p.Notes)
	return json.Marshal(p)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
