package isolation

import (
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// GitJail is the sandbox.Jail of a sandbox's git helper, given the
// isolation report of the run and spawn's environment userEnv: with the
// coder's view of the files (its worktree writable, spawn's binary and
// the user's objects read-only), no network and no credential when
// report confines; without a sandbox, an environment that holds no
// credential.
func GitJail(report Report, userEnv []string, sb *sandbox.Sandbox) sandbox.Jail {
	env := AgentEnv(userEnv, "HOME=/nonexistent", "TMPDIR=/tmp")
	if !report.Mode.Confines() {
		return envJail{env}
	}
	spec := Spec{Bwrap: report.Bwrap, SandboxExec: report.SandboxExec, ReadOnly: append([]string{sb.Exe}, sb.Objects...), Writable: []string{sb.Path}, NoNetwork: true}
	return specJail{spec: spec, env: env}
}

// envJail runs a command with env, unconfined.
type envJail struct{ env []string }

func (j envJail) Confine(c proc.Cmd) proc.Cmd {
	c.Env = j.env
	return c
}

// specJail runs a command with env under spec's sandbox.
type specJail struct {
	spec Spec
	env  []string
}

func (j specJail) Confine(c proc.Cmd) proc.Cmd {
	c.Env = j.env
	return j.spec.Confine(c)
}
