package isolation

import "context"

// platformMode is this system's sandbox: bubblewrap.
const platformMode = ModeBwrap

// InstallHint says how to get this system's sandbox: bubblewrap.
const InstallHint = BwrapHint

// Probe reports the sandbox a run would get on this machine: bubblewrap
// when it is installed and works (ProbeBwrap), none otherwise, with the
// reason. Cancelling ctx stops the probe and reports none. bwrap is found
// in env's PATH; tmp, the user's TMPDIR, is for a probe that makes files,
// which bubblewrap's does not.
func Probe(ctx context.Context, env []string, tmp string) Report { return ProbeBwrap(ctx, env) }
