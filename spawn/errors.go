package spawn

import (
	"context"
	"errors"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
	"github.com/infinite-improbability-drive/spawn/team/forge"
)

// Kind classifies why a run failed (fault.Kind, where the vocabulary is
// defined): it decides the exit code and is the record's error.kind.
type Kind = fault.Kind

// Kinds of failure (fault's).
const (
	KindUsage            = fault.KindUsage
	KindConfig           = fault.KindConfig
	KindRepo             = fault.KindRepo
	KindNotImplemented   = fault.KindNotImplemented
	KindSandboxGone      = fault.KindSandboxGone
	KindMissingCLI       = fault.KindMissingCLI
	KindAgentCrashed     = fault.KindAgentCrashed
	KindAgentFailed      = fault.KindAgentFailed
	KindModelAPI         = fault.KindModelAPI
	KindAuth             = fault.KindAuth
	KindRateLimited      = fault.KindRateLimited
	KindUsageLimit       = fault.KindUsageLimit
	KindModelUnavailable = fault.KindModelUnavailable
	KindUnreachable      = fault.KindUnreachable
	KindBudget           = fault.KindBudget
	KindTimeout          = fault.KindTimeout
	KindInterrupted      = fault.KindInterrupted
	KindGitHub           = fault.KindGitHub
	KindNoSandbox        = fault.KindNoSandbox
	KindSandboxTamper    = fault.KindSandboxTamper
	KindInternal         = fault.KindInternal
)

// Error is a failure spawn explains to its user (fault.Error): Msg is one
// sentence that says what is wrong and what to do.
type Error = fault.Error

func errorf(kind Kind, cause error, format string, args ...any) *Error {
	return fault.Errorf(kind, cause, format, args...)
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

// Exit codes, documented in README.md (fault's).
const (
	ExitOK          = fault.ExitOK
	ExitInternal    = fault.ExitInternal
	ExitUsage       = fault.ExitUsage
	ExitNotApproved = fault.ExitNotApproved
	ExitAgent       = fault.ExitAgent
	ExitTimeout     = fault.ExitTimeout
	ExitGitHub      = fault.ExitGitHub
	ExitTamper      = fault.ExitTamper
	ExitInterrupted = fault.ExitInterrupted
)

// ExitCode maps the outcome of a run to spawn's exit code: err's kind
// (KindOf) and the verdict, as fault.Kind.ExitCode maps them.
func ExitCode(err error, verdict observability.Verdict) int {
	return KindOf(err).ExitCode(verdict)
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
