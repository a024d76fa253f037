package isolation

import "context"

// platformMode is this system's sandbox: Seatbelt.
const platformMode = ModeSeatbelt

// InstallHint says what to do when this system's sandbox does not hold:
// Seatbelt is part of macOS, so there is nothing to install; there is a
// failure to report.
const InstallHint = ReportHint

// Probe reports the sandbox a run would get on this machine: Seatbelt when
// its probe shows it holds (ProbeSeatbelt), none otherwise, with what
// failed. Cancelling ctx stops the probe and reports none. Its processes
// run with env; its files are made under tmp, the user's TMPDIR ("" for
// the system's).
func Probe(ctx context.Context, env []string, tmp string) Report {
	return ProbeSeatbelt(ctx, env, tmp)
}
