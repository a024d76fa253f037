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

// KindOf returns the kind of err: the first *fault.Error's kind in err's tree,
// github for a *forge.Error (a GitHub failure the forge met; forgeError
// makes one a *fault.Error where the forge returns it, so this is for the
// errors it joins), usage for a *forge.RefusedError, config for a
// *config.Error, repo for a *sandbox.InputError, interrupted for a
// cancelled context, internal otherwise.
func KindOf(err error) fault.Kind {
	var se *fault.Error
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
		return fault.KindGitHub
	case errors.As(err, &re):
		return fault.KindUsage
	case errors.As(err, &ce):
		return fault.KindConfig
	case errors.As(err, &ie):
		return fault.KindRepo
	case errors.Is(err, context.Canceled):
		return fault.KindInterrupted
	default:
		return fault.KindInternal
	}
}

// ExitCode maps the outcome of a run to spawn's exit code: err's kind
// (KindOf) and the verdict, as fault.Kind.ExitCode maps them.
func ExitCode(err error, verdict observability.Verdict) int {
	return KindOf(err).ExitCode(verdict)
}

// errorRecord is err as the record keeps it: its kind, its message with
// secrets redacted, and a usage limit's reset time.
func errorRecord(err error, red *observability.Redactor) *observability.Error {
	e := &observability.Error{Kind: string(KindOf(err)), Message: red.String(err.Error())}
	var se *fault.Error
	if errors.As(err, &se) && !se.ResetAt.IsZero() {
		at := se.ResetAt.UTC()
		e.ResetAt = &at
	}
	return e
}
