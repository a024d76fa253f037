// Package isolation confines spawn's agents: it decides whether a run gets
// an OS-level sandbox (bubblewrap) or none, builds the bwrap command line
// that wraps an agent's command, strips credentials from the agents'
// environment, and snapshots what the user relies on in the repository so
// that a change an agent made to it is detected, undone and reported.
//
// Probe is what `spawn doctor` calls to say which isolation a run would
// get on this machine.
package isolation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// Mode is how the agents are confined: the [sandbox] isolation setting, and
// the mode a run got.
type Mode string

// Isolation modes.
const (
	// ModeAuto is bubblewrap when it is installed and works, otherwise none,
	// said loudly once per run.
	ModeAuto Mode = "auto"
	// ModeBwrap is bubblewrap or nothing: a run fails closed without it.
	ModeBwrap Mode = "bwrap"
	// ModeNone runs the agents without an OS sandbox; tamper detection and
	// the credential relay still apply.
	ModeNone Mode = "none"
)

// ParseMode returns the mode s names.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAuto, ModeBwrap, ModeNone:
		return m, nil
	}
	return "", fmt.Errorf("unknown isolation %q (want auto, bwrap or none)", s)
}

// Network is what the agents may reach: the [sandbox] network setting.
type Network string

// Network policies.
const (
	// NetworkAuto is model-only under bubblewrap and open without it
	// (where nothing can take the network from the agents).
	NetworkAuto Network = "auto"
	// NetworkOpen leaves the host's network to the agents.
	NetworkOpen Network = "open"
	// NetworkModelOnly gives the agents a network namespace of their own
	// whose only way out is the run's model relay. It needs bubblewrap.
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
// NetworkAuto is model-only under bubblewrap, open otherwise.
func (n Network) Effective(mode Mode) Network {
	if n != NetworkAuto && n != "" {
		return n
	}
	if mode == ModeBwrap {
		return NetworkModelOnly
	}
	return NetworkOpen
}

// InstallHint says how to get bubblewrap.
const InstallHint = "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`) and make sure unprivileged user namespaces are enabled (sysctl kernel.unprivileged_userns_clone=1)"

// Report is what a run would get on this machine: the mode that applies
// (bwrap or none), the bwrap binary when there is one that works, and why
// a run gets none.
type Report struct {
	Mode   Mode   // ModeBwrap or ModeNone
	Bwrap  string // the bwrap binary's path; "" when Mode is ModeNone
	Reason string // why Mode is ModeNone; "" otherwise
}

// Probe reports whether bubblewrap is installed in env's PATH and can make
// the sandbox spawn needs (user and pid namespaces, no capabilities, no
// nested user namespaces, the system roots read-only, fresh /proc and
// /dev, private tmpfs), by running it once. It never fails: a machine
// without a working bubblewrap is a Report with Mode none and the reason.
// Cancelling ctx stops the probe and reports none.
func Probe(ctx context.Context, env []string) Report {
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
// is honoured without probing; ModeAuto probes and falls back to none with
// the probe's reason; ModeBwrap probes and fails closed: the error is an
// *Unavailable saying how to install bubblewrap.
func Resolve(ctx context.Context, want Mode, env []string) (Report, error) {
	switch want {
	case ModeNone:
		return Report{Mode: ModeNone, Reason: "isolation = \"none\" in the configuration"}, nil
	case ModeAuto, "":
		return Probe(ctx, env), nil
	case ModeBwrap:
		r := Probe(ctx, env)
		if r.Mode != ModeBwrap {
			return r, &Unavailable{Reason: r.Reason}
		}
		return r, nil
	}
	return Report{}, fmt.Errorf("isolation: unknown mode %q", want)
}

// Unavailable is bubblewrap missing or broken when the configuration
// demands it.
type Unavailable struct{ Reason string }

func (e *Unavailable) Error() string {
	return fmt.Sprintf("isolation = \"bwrap\" but %s; %s, or set [sandbox] isolation = \"auto\"", e.Reason, InstallHint)
}

// baseArgs are the namespace flags every sandbox (and the probe) uses.
// --new-session detaches the agent from spawn's terminal, so that it cannot
// push keystrokes into the user's shell (TIOCSTI); spawn still reaches it
// with signals, which go to every descendant of the agent's reaper.
func baseArgs() []string {
	return []string{"--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"}
}
