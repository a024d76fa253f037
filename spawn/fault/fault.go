// Package fault is the vocabulary of why a run, or a command on runs,
// failed: the kinds of failure (a record's error.kind), the error that
// carries one with a sentence for the user, and spawn's exit codes. It is
// defined here once, below every package that fails with a kind (spawn
// and its registry, spawn/runs), so that both speak it.
package fault

import (
	"fmt"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// Kind classifies why a run failed; it decides the exit code and is the
// record's error.kind.
type Kind string

// Kinds of failure.
const (
	KindUsage            Kind = "usage"               // bad flags or task
	KindConfig           Kind = "config"              // bad configuration
	KindRepo             Kind = "repo"                // not a repository, unknown base, branch exists
	KindNotImplemented   Kind = "not_implemented"     // a mode that is not built yet
	KindSandboxGone      Kind = "sandbox_gone"        // the worktree was deleted under the run (exit 1)
	KindMissingCLI       Kind = "missing_cli"         // an agent CLI is not installed
	KindAgentCrashed     Kind = "agent_crashed"       // exited without a result event
	KindAgentFailed      Kind = "agent_failed"        // a result that says it failed
	KindModelAPI         Kind = "model_api"           // the model API answered with an error
	KindAuth             Kind = "auth"                // the model API refused the credentials (401/403)
	KindRateLimited      Kind = "rate_limited"        // 429 after the CLI's bounded retries
	KindUsageLimit       Kind = "usage_limit"         // the account's usage limit or quota is spent until a reset
	KindModelUnavailable Kind = "model_unavailable"   // 5xx after the CLI's bounded retries
	KindUnreachable      Kind = "unreachable"         // the model API could not be reached: DNS, refused, TLS, proxy
	KindBudget           Kind = "budget"              // max_turns or max_cost_usd reached
	KindTimeout          Kind = "timeout"             // idle or total timeout
	KindInterrupted      Kind = "interrupted"         // SIGINT or SIGTERM to spawn
	KindGitHub           Kind = "github"              // the GitHub API failed
	KindNoSandbox        Kind = "sandbox_unavailable" // isolation = "bwrap" without a working bubblewrap
	KindSandboxTamper    Kind = "sandbox_tamper"      // an agent changed the user's refs, HEAD, config, hooks or tree
	KindInternal         Kind = "internal"            // anything else
)

// Error is a failure spawn explains to its user: Msg is one sentence that
// says what is wrong and what to do.
type Error struct {
	Kind Kind
	Msg  string
	Err  error // the cause, if any
	// ResetAt is, for a usage limit, when it resets; zero when unknown.
	ResetAt time.Time
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of kind whose message is format with args and
// whose cause is cause (nil for none).
func Errorf(kind Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// Exit codes, documented in README.md.
const (
	ExitOK          = 0
	ExitInternal    = 1
	ExitUsage       = 2
	ExitNotApproved = 3
	ExitAgent       = 4
	ExitTimeout     = 5
	ExitGitHub      = 6
	ExitTamper      = 7
	ExitInterrupted = 130
)

// ExitCode maps the outcome of a run, a failure of kind k ("" for none)
// and the reviewers' verdict, to spawn's exit code. This is the one place
// where that mapping lives.
func (k Kind) ExitCode(verdict observability.Verdict) int {
	switch k {
	case "":
	case KindUsage, KindConfig, KindRepo, KindNotImplemented, KindMissingCLI, KindNoSandbox:
		return ExitUsage
	case KindSandboxTamper:
		return ExitTamper
	case KindAgentCrashed, KindAgentFailed, KindModelAPI, KindAuth, KindRateLimited, KindModelUnavailable, KindUnreachable:
		return ExitAgent
	case KindTimeout, KindBudget, KindUsageLimit:
		return ExitTimeout
	case KindInterrupted:
		return ExitInterrupted
	case KindGitHub:
		return ExitGitHub
	default:
		return ExitInternal
	}
	if verdict.Unapproved() {
		return ExitNotApproved
	}
	return ExitOK
}
