// Package isolation confines spawn's agents: it decides whether a run gets
// an OS-level sandbox (bubblewrap on Linux, Seatbelt on macOS) or none,
// builds the command line that wraps an agent's command (bwrap's, or
// sandbox-exec's with a generated profile), strips credentials from the
// agents' environment, and snapshots what the user relies on in the
// repository so that a change an agent made to it is detected, undone and
// reported.
//
// Probe is what `spawn doctor` calls to say which isolation a run would
// get on this machine; on macOS it proves the Seatbelt sandbox holds
// (ProbeSeatbelt).
package isolation

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// Mode is how the agents are confined: the [sandbox] isolation setting, and
// the mode a run got.
type Mode string

// Isolation modes.
const (
	// ModeAuto is this system's sandbox. On Linux: bubblewrap when it is
	// installed and works, otherwise none, said loudly once per run. On
	// macOS: Seatbelt once its probe has shown it holds, otherwise the run
	// fails closed (sandbox-exec is part of macOS: a probe that fails is a
	// sandbox that does not hold, not one that is missing).
	ModeAuto Mode = "auto"
	// ModeBwrap is bubblewrap or nothing: a run fails closed without it.
	ModeBwrap Mode = "bwrap"
	// ModeSeatbelt is macOS's Seatbelt (sandbox-exec) or nothing: a run
	// fails closed unless its probe shows the sandbox holds.
	ModeSeatbelt Mode = "seatbelt"
	// ModeNone runs the agents without an OS sandbox; tamper detection and
	// the credential relay still apply.
	ModeNone Mode = "none"
)

// ParseMode returns the mode s names.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAuto, ModeBwrap, ModeSeatbelt, ModeNone:
		return m, nil
	}
	return "", fmt.Errorf("unknown isolation %q (want auto, bwrap, seatbelt or none)", s)
}

// Confines reports whether m is an OS sandbox (bubblewrap or Seatbelt),
// as a Report's Mode: the agents see only what their Spec shows.
func (m Mode) Confines() bool { return m == ModeBwrap || m == ModeSeatbelt }

// Network is what the agents may reach: the [sandbox] network setting.
type Network string

// Network policies.
const (
	// NetworkAuto is model-only under bubblewrap and open without it
	// (where nothing can take the network from the agents).
	NetworkAuto Network = "auto"
	// NetworkOpen leaves the host's network to the agents.
	NetworkOpen Network = "open"
	// NetworkModelOnly leaves the agents one way out, the run's model
	// relay. Under bubblewrap it is a network namespace of their own whose
	// only way out is the relay; under Seatbelt, which has no network
	// namespace, a profile that allows one address, the relay's port on
	// the loopback. It needs one or the other.
	NetworkModelOnly Network = "model-only"
)

// ParseNetwork returns the network policy s names.
func ParseNetwork(s string) (Network, error) {
	switch n := Network(s); n {
	case NetworkAuto, NetworkOpen, NetworkModelOnly:
		return n, nil
	}
	return "", fmt.Errorf("unknown network %q (want auto, open or model-only)", s)
}

// Effective is the network the agents get under mode (the Report's):
// NetworkAuto is model-only under a sandbox, open otherwise.
func (n Network) Effective(mode Mode) Network {
	if n != NetworkAuto && n != "" {
		return n
	}
	if mode.Confines() {
		return NetworkModelOnly
	}
	return NetworkOpen
}

// Report is what a run would get on this machine: the mode that applies
// (bwrap, seatbelt or none), the sandbox's binary when there is one that
// works, and why a run gets none.
type Report struct {
	Mode        Mode   // ModeBwrap, ModeSeatbelt or ModeNone
	Bwrap       string // the bwrap binary's path; "" unless Mode is ModeBwrap
	SandboxExec string // sandbox-exec's path; "" unless Mode is ModeSeatbelt
	Reason      string // why Mode is ModeNone; "" otherwise
	// Checks are what the Seatbelt probe tried under its profile and how
	// each went (ProbeSeatbelt); nil for bubblewrap, whose probe runs a
	// command and checks that it ran.
	Checks []ProbeCheck
}

// ProbeBwrap reports whether bubblewrap is installed in env's PATH and can make
// the sandbox spawn needs (user and pid namespaces, no capabilities, no
// nested user namespaces, the system roots read-only, fresh /proc and
// /dev, private tmpfs), by running it once. It never fails: a machine
// without a working bubblewrap is a Report with Mode none and the reason.
// Cancelling ctx stops the probe and reports none.
func ProbeBwrap(ctx context.Context, env []string) Report {
	bin, err := proc.LookPath("bwrap", env)
	if err != nil {
		return Report{Mode: ModeNone, Reason: "bubblewrap (bwrap) is not installed"}
	}
	probe := Spec{Bwrap: bin}.Confine(proc.Cmd{Path: "true", Env: []string{"PATH=/usr/bin:/bin"}})
	if _, err := proc.Run(ctx, probe); err != nil {
		var exit *proc.ExitError
		if errors.As(err, &exit) {
			return Report{Mode: ModeNone, Reason: fmt.Sprintf("bubblewrap is installed at %s but cannot create a sandbox here: %s", bin, strings.TrimSpace(exit.Stderr))}
		}
		return Report{Mode: ModeNone, Reason: fmt.Sprintf("bubblewrap at %s cannot run: %v", bin, err)}
	}
	return Report{Mode: ModeBwrap, Bwrap: bin}
}

// Resolve decides the isolation of a run configured with want. ModeNone
// is honoured without probing. ModeAuto probes this system's sandbox
// (Probe): on Linux it falls back to none with the probe's reason; on
// macOS it fails closed as ModeSeatbelt does. ModeBwrap and ModeSeatbelt
// probe their sandbox and fail closed: the error is an *Unavailable that
// says what failed and what to do; asking for the other system's sandbox
// is one too. env and tmp are Probe's.
func Resolve(ctx context.Context, want Mode, env []string, tmp string) (Report, error) {
	return resolve(ctx, want, platformMode, func(ctx context.Context) Report { return Probe(ctx, env, tmp) })
}

// resolve is Resolve on a system whose sandbox is platform and is probed
// by probe.
func resolve(ctx context.Context, want, platform Mode, probe func(context.Context) Report) (Report, error) {
	switch want {
	case ModeNone:
		return Report{Mode: ModeNone, Reason: "isolation = \"none\" in the configuration"}, nil
	case ModeAuto, "":
		r := probe(ctx)
		if r.Mode == ModeNone && platform == ModeSeatbelt {
			return r, &Unavailable{Mode: ModeSeatbelt, Reason: r.Reason, platform: platform}
		}
		return r, nil
	case ModeBwrap, ModeSeatbelt:
		if want != platform {
			r := Report{Mode: ModeNone, Reason: fmt.Sprintf("%s is not this system's sandbox (%s's is %s)", want, runtime.GOOS, platform)}
			return r, &Unavailable{Mode: want, Reason: r.Reason, platform: platform}
		}
		r := probe(ctx)
		if r.Mode != want {
			return r, &Unavailable{Mode: want, Reason: r.Reason, platform: platform}
		}
		return r, nil
	}
	return Report{}, fmt.Errorf("isolation: unknown mode %q", want)
}

// ReportHint is how to report a Seatbelt sandbox that does not hold.
const ReportHint = "run `spawn doctor` and report what it prints at https://github.com/infinite-improbability-drive/spawn/issues"

// BwrapHint says how to get bubblewrap.
const BwrapHint = "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`) and make sure unprivileged user namespaces are enabled (sysctl kernel.unprivileged_userns_clone=1)"

// Unavailable is the sandbox a run needs missing, broken, or not holding:
// the configuration demands it (isolation = "bwrap" or "seatbelt"), or it
// is macOS's (isolation = "auto" there fails closed).
type Unavailable struct {
	Mode   Mode // the sandbox that is not there; "" is ModeBwrap
	Reason string

	platform Mode // this system's sandbox; "" is platformMode
}

func (e *Unavailable) Error() string {
	platform := e.platform
	if platform == "" {
		platform = platformMode
	}
	switch {
	case e.Mode == ModeSeatbelt && platform != ModeSeatbelt:
		return fmt.Sprintf("isolation = \"seatbelt\" but %s: Seatbelt is macOS's; set [sandbox] isolation = \"auto\" or \"bwrap\"", e.Reason)
	case e.Mode == ModeSeatbelt:
		return fmt.Sprintf("spawn starts no agent: %s; %s, or set [sandbox] isolation = \"none\" to run the agents without a sandbox", e.Reason, ReportHint)
	case platform != ModeBwrap:
		return fmt.Sprintf("isolation = \"bwrap\" but %s: bubblewrap is Linux's; set [sandbox] isolation = \"auto\" or \"seatbelt\"", e.Reason)
	}
	return fmt.Sprintf("isolation = \"bwrap\" but %s; %s, or set [sandbox] isolation = \"auto\"", e.Reason, BwrapHint)
}

// baseArgs are the namespace flags every sandbox (and the probe) uses.
// --new-session detaches the agent from spawn's terminal, so that it cannot
// push keystrokes into the user's shell (TIOCSTI); spawn still reaches it
// with signals, which go to every descendant of the agent's reaper.
func baseArgs() []string {
	return []string{"--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"}
}
