package spawn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// A run that got Seatbelt: the agents' commands go through sandbox-exec
// at its fixed path, model-only reaches the relay by its port on the
// loopback (no bridge, no relay socket), and the git helper is confined
// the same way, without network.
func TestUnderSeatbeltTheAgentsReachTheRelayByItsPortAlone(t *testing.T) {
	report := isolation.Report{Mode: isolation.ModeSeatbelt, SandboxExec: isolation.SandboxExec}
	c := &confinement{report: report, network: isolation.NetworkAuto.Effective(report.Mode), userEnv: []string{"PATH=/usr/bin:/bin"}, exe: "/opt/spawn/spawn"}
	coder, err := runners.NewRegistry().Lookup(runners.LegacyCoder)
	require.NoError(t, err)
	require.NoError(t, c.startRelay(seats{coder: seatCLI{adapter: coder}}, nil, nil))
	t.Cleanup(func() { require.NoError(t, c.close()) })
	assert.Equal(t, isolation.NetworkModelOnly, c.network)
	assert.Empty(t, c.sockDir, "no bridge: Seatbelt has no network namespace to bridge into")

	dir := t.TempDir()
	s := c.spec(c.userEnv, "/usr/bin/true", []string{dir, ""}, nil)
	assert.Equal(t, isolation.SandboxExec, s.SandboxExec)
	assert.Empty(t, s.Bwrap)
	assert.True(t, s.NoNetwork)
	assert.Equal(t, c.relay.Port(), s.RelayPort)
	assert.Equal(t, []string{dir}, s.Writable)
	cmd := s.Confine(proc.Cmd{Path: "claude"})
	assert.Equal(t, "/usr/bin/sandbox-exec", cmd.Path)
	assert.Contains(t, cmd.Args[1], `(allow network-outbound (remote ip "localhost:`)

	jail := isolation.GitJail(report, c.userEnv, &sandbox.Sandbox{Path: dir, Exe: "/opt/spawn/spawn"})
	git := jail.Confine(proc.Cmd{Path: "/opt/spawn/spawn"})
	assert.Equal(t, "/usr/bin/sandbox-exec", git.Path)
	assert.NotContains(t, git.Args[1], "(remote ip", "the git helper has no network at all")
}

// What doctor prints of the Seatbelt probe: each check, done or refused,
// and, for one the sandbox failed, what it must be.
func TestDoctorSaysWhatTheSeatbeltProbeFound(t *testing.T) {
	got := probeSummary([]isolation.ProbeCheck{
		{What: "write in the worktree", Allowed: true, Held: true},
		{What: "write outside its worktree", Held: true, Detail: "operation not permitted"},
		{What: "read a secret in your HOME", Held: false},
		{What: "connect to the model relay's port", Allowed: true, Held: false, Detail: "connection refused"},
	})
	assert.Equal(t, "write in the worktree: done; write outside its worktree: refused; read a secret in your HOME: done, and must be refused; "+
		"connect to the model relay's port: refused (connection refused), and must be done", got)
}
