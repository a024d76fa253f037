package observability

import (
	"fmt"
	"strings"
)

// Mode is how a run is reviewed. Each mode is defined here once; the
// configuration, the CLI and the orchestrator all use these values.
type Mode string

// The modes.
const (
	ModeSolo       Mode = "solo"       // one coder turn, no reviewer
	ModeSequential Mode = "sequential" // coder, review, one fix turn, final review
	ModePingpong   Mode = "pingpong"   // coder, review, fix, review... until approved or a limit
	ModeGitHub     Mode = "github"     // the pingpong loop on a pull request
	// ModePR is the mode of a spawn pr run's record (people's review on an
	// existing pull request: fixed, checked by a reviewer, answered). It
	// is not a mode a configuration or --mode chooses: ParseMode refuses it.
	ModePR Mode = "pr"
)

// Modes lists every mode, in the order the documentation gives them.
func Modes() []Mode { return []Mode{ModeSolo, ModeSequential, ModePingpong, ModeGitHub} }

// ParseMode returns the mode named s, or an error that lists the modes.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%q is not a mode; use one of %s", s, joinValues(Modes()))
}

// Reviewed reports whether the mode has a reviewer (spawn pr's has one
// unless [github] verify_fixes is off).
func (m Mode) Reviewed() bool { return m != ModeSolo }

// OnPullRequest reports whether a run of the mode works on a pull request.
func (m Mode) OnPullRequest() bool { return m == ModeGitHub || m == ModePR }

// Status is whether the run itself completed, whatever the verdict.
type Status string

// The statuses.
const (
	StatusRunning     Status = "running"
	StatusSucceeded   Status = "succeeded"
	StatusFailed      Status = "failed"
	StatusTimedOut    Status = "timed_out"
	StatusInterrupted Status = "interrupted"
)

// Verdict is what the review concluded about the work.
type Verdict string

// The verdicts of a run.
const (
	VerdictNone             Verdict = "none" // not reviewed (solo, or the run ended before a review)
	VerdictApproved         Verdict = "approved"
	VerdictChangesRequested Verdict = "changes_requested" // max_iterations reached with findings open
	VerdictNotConverged     Verdict = "not_converged"     // the loop stopped making progress
	VerdictReviewFailed     Verdict = "review_failed"     // a reviewer's answer could not be used
)

// Approved reports whether the work was approved.
func (v Verdict) Approved() bool { return v == VerdictApproved }

// Unapproved reports whether a review ended without approving the work:
// the outcome spawn exits 3 for.
func (v Verdict) Unapproved() bool {
	return v == VerdictChangesRequested || v == VerdictNotConverged || v == VerdictReviewFailed
}

// Severity is how serious a finding is.
type Severity string

// The severities, from the most to the least serious.
const (
	SeverityCritical Severity = "critical"
	SeverityHigh     Severity = "high"
	SeverityMedium   Severity = "medium"
	SeverityLow      Severity = "low"
	SeverityInfo     Severity = "info"
)

// Severities returns the severities from the most to the least serious.
// The slice is new on every call.
func Severities() []Severity {
	return []Severity{SeverityCritical, SeverityHigh, SeverityMedium, SeverityLow, SeverityInfo}
}

// Rank orders severities: critical is 5, info is 1, anything else 0. A
// higher rank is more serious; this is the one ordering spawn uses.
func (s Severity) Rank() int {
	switch s {
	case SeverityCritical:
		return 5
	case SeverityHigh:
		return 4
	case SeverityMedium:
		return 3
	case SeverityLow:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Blocking reports whether an open finding of this severity prevents an
// approval (critical and high do).
func (s Severity) Blocking() bool { return s.Rank() >= SeverityHigh.Rank() }

// FindingStatus is a finding's state across a run.
type FindingStatus string

// The finding statuses.
const (
	FindingOpen     FindingStatus = "open"
	FindingResolved FindingStatus = "resolved"
)

func joinValues[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// ReviewVerdict is one reviewer's answer in one round: the reviewer
// contract's two verdicts, and review_failed for an answer that could not be
// used even after a repair turn (never an approval).
type ReviewVerdict string

// The review verdicts.
const (
	ReviewApprove        ReviewVerdict = "approve"
	ReviewRequestChanges ReviewVerdict = "request_changes"
	ReviewFailed         ReviewVerdict = "review_failed"
)

// Role is what an agent does in a run.
type Role string

// The roles.
const (
	RoleCoder    Role = "coder"
	RoleReviewer Role = "reviewer"
)

// LLM names who did something: an agent CLI, or spawn itself.
type LLM string

// The LLMs.
const (
	LLMClaude LLM = "claude-code"
	LLMGemini LLM = "gemini-cli"
	LLMSpawn  LLM = "spawn"
)

// ThreadState is what a review thread of the pull request is, as spawn
// last left it.
type ThreadState string

// The thread states.
const (
	// ThreadOpen: spawn acts on the thread and nothing settled it yet
	// (a check or review round may have found it still open: its last
	// reply says so).
	ThreadOpen ThreadState = "open"
	// ThreadDeclined: the coder declined it, with its reason in a reply;
	// it stays open for a person.
	ThreadDeclined ThreadState = "declined"
	// ThreadUnverified: the coder changed the code for it and a reply
	// names the commits, but no reviewer checked the fix ([github]
	// verify_fixes = false, or the reviewer's answer could not be used).
	ThreadUnverified ThreadState = "unverified"
	// ThreadFixed: a review round confirmed the fix and a reply names its
	// commits and that round; the thread is left unresolved (a person's
	// thread, or a token that cannot resolve).
	ThreadFixed ThreadState = "fixed"
	// ThreadResolved: settled (fixed, or its decline accepted), replied
	// to, then resolved by spawn.
	ThreadResolved ThreadState = "resolved"
	// ThreadSkipped: spawn did not act on it; Skipped says why.
	ThreadSkipped ThreadState = "skipped"
)

// ThreadStates lists every thread state.
func ThreadStates() []ThreadState {
	return []ThreadState{ThreadOpen, ThreadDeclined, ThreadUnverified, ThreadFixed, ThreadResolved, ThreadSkipped}
}

// SkipReason says why spawn pr did not act on a review thread.
type SkipReason string

// The reasons a thread is left alone.
const (
	// SkipUntrusted: its author may not direct changes (not write,
	// maintain or admin, nor in [github] trusted_authors); its text
	// reaches no prompt and no record.
	SkipUntrusted SkipReason = "untrusted_author"
	// SkipOutdated: the code it was left on has changed since.
	SkipOutdated SkipReason = "outdated"
	// SkipResolved: it was resolved already.
	SkipResolved SkipReason = "resolved"
	// SkipSpawn: spawn opened it (a review of a github-mode run).
	SkipSpawn SkipReason = "spawn"
)

// SkipReasons lists every reason a thread is left alone.
func SkipReasons() []SkipReason {
	return []SkipReason{SkipUntrusted, SkipOutdated, SkipResolved, SkipSpawn}
}

// ReplyKind is what one of spawn's replies in a thread says.
type ReplyKind string

// The kinds of reply.
const (
	// ReplyFixed: "Fixed in <commits>", confirmed by a review round it names.
	ReplyFixed ReplyKind = "fixed"
	// ReplyDeclined: "Declined: <the coder's reason>".
	ReplyDeclined ReplyKind = "declined"
	// ReplyStillOpen: a review round found it still open, and what is.
	ReplyStillOpen ReplyKind = "still_open"
	// ReplyUnverified: "Changed in <commits>", with why no reviewer
	// checked it.
	ReplyUnverified ReplyKind = "unverified"
	// ReplyAccepted: a review round accepted the coder's reason for
	// declining it.
	ReplyAccepted ReplyKind = "accepted"
	// ReplyCannotResolve: spawn's token may not resolve threads; a person
	// is asked to.
	ReplyCannotResolve ReplyKind = "cannot_resolve"
)

// ReplyKinds lists every kind of reply.
func ReplyKinds() []ReplyKind {
	return []ReplyKind{ReplyFixed, ReplyDeclined, ReplyStillOpen, ReplyUnverified, ReplyAccepted, ReplyCannotResolve}
}
