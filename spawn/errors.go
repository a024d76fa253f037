package spawn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
	"github.com/infinite-improbability-drive/spawn/team/forge"
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

func errorf(kind Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// KindOf returns the kind of err: the first *Error's kind in err's tree,
// github for a *forge.Error (a GitHub failure the forge met; forgeError
// makes one an *Error where the forge returns it, so this is for the
// errors it joins), usage for a *forge.RefusedError, config for a
// *config.Error, repo for a *sandbox.InputError, interrupted for a
// cancelled context, internal otherwise.
func KindOf(err error) Kind {
	var se *Error
	var fe *forge.Error
	var re *forge.RefusedError
	var ce *config.Error
	var ie *sandbox.InputError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		return se.Kind
	case errors.As(err, &fe):
		return KindGitHub
	case errors.As(err, &re):
		return KindUsage
	case errors.As(err, &ce):
		return KindConfig
	case errors.As(err, &ie):
		return KindRepo
	case errors.Is(err, context.Canceled):
		return KindInterrupted
	default:
		return KindInternal
	}
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

// ExitCode maps the outcome of a run to spawn's exit code. This is the one
// place where that mapping lives.
func ExitCode(err error, verdict observability.Verdict) int {
	switch KindOf(err) {
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

// errorRecord is err as the record keeps it: its kind, its message with
// secrets redacted, and a usage limit's reset time.
func errorRecord(err error, red *observability.Redactor) *observability.Error {
	e := &observability.Error{Kind: string(KindOf(err)), Message: red.String(err.Error())}
	var se *Error
	if errors.As(err, &se) && !se.ResetAt.IsZero() {
		at := se.ResetAt.UTC()
		e.ResetAt = &at
	}
	return e
}
