package isolation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// These tests put a stand-in where the Seatbelt probe looks for
// sandbox-exec: no Seatbelt sandbox runs on Linux, and none of them
// pretends one did. They prove the probe's decision: what it runs, what it
// checks, and that it fails closed on a sandbox that does not hold.

// standInEnv makes the test binary a sandbox-exec stand-in (see
// sandboxExecStandIn); its value is the stand-in's kind.
const standInEnv = "SPAWN_TEST_SANDBOX_EXEC"

// standIn writes a script named sandbox-exec with body and returns its path.
func standIn(t *testing.T, body string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandbox-exec")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return bin
}

// enforcingStandIn is a sandbox-exec that enforces what spawn's profile
// says by other means: this test binary reads the profile's parameters and
// runs the command under bubblewrap with exactly them (the READ parameters
// read-only, the WRITE ones writable, the MASK ones as /dev/null, and a
// network of its own whose only way out is the port the profile allows,
// through spawn's model bridge). kind "readonly" makes the WRITE
// parameters read-only too: a sandbox that blocks more than it must.
func enforcingStandIn(t *testing.T, kind string) string {
	t.Helper()
	if r := ProbeBwrap(context.Background(), []string{"PATH=/usr/local/bin:/usr/bin:/bin"}); r.Mode != ModeBwrap {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs bubblewrap: %s", r.Reason)
		}
		t.Skip(r.Reason)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	return standIn(t, fmt.Sprintf("%s=%s exec %q \"$@\"", standInEnv, kind, exe))
}

// liar is a sandbox-exec that confines nothing: it drops the profile and
// its parameters and runs the command as it is.
const liar = `while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    -p|-D|-f) shift 2 ;;
    *) break ;;
  esac
done
exec "$@"`

// probeEnv is the probe's environment: git in PATH, as on every machine
// spawn runs on, and a TMPDIR of the test's.
func probeEnv(t *testing.T) []string {
	return []string{"PATH=/usr/bin:/bin", "TMPDIR=" + t.TempDir()}
}

// probeTmp is the TMPDIR of a probeEnv.
func probeTmp(env []string) string { return strings.TrimPrefix(env[1], "TMPDIR=") }

// probeSeatbeltIn is probeSeatbelt with sandbox-exec at bin, in a
// probeEnv and its TMPDIR.
func probeSeatbeltIn(t *testing.T, bin string) Report {
	env := probeEnv(t)
	return probeSeatbelt(context.Background(), env, probeTmp(env), bin)
}

// A sandbox-exec that lets the confined process do anything: the probe
// finds every operation the sandbox must deny, fails closed, and says the
// first one; a run with isolation = "auto" on macOS stops before anything
// is created, with how to report it, unless the user chose "none".
func TestASandboxThatDoesNotHoldFailsTheProbeClosed(t *testing.T) {
	ctx := context.Background()
	env := probeEnv(t)
	bin := standIn(t, liar)
	r := probeSeatbelt(ctx, env, probeTmp(env), bin)
	assert.Equal(t, ModeNone, r.Mode)
	assert.Empty(t, r.SandboxExec)
	assert.Equal(t, "the Seatbelt sandbox did not hold: it let a confined process write outside its worktree", r.Reason)
	require.Len(t, r.Checks, 11)
	for _, c := range r.Checks {
		assert.Equal(t, c.Allowed, c.Held, "%s: %s", c.What, c.Detail)
	}
	probe := func(ctx context.Context) Report { return probeSeatbelt(ctx, env, probeTmp(env), bin) }
	_, err := resolve(ctx, ModeAuto, ModeSeatbelt, probe)
	var u *Unavailable
	require.ErrorAs(t, err, &u)
	assert.Equal(t, "spawn starts no agent: the Seatbelt sandbox did not hold: it let a confined process write outside its worktree; "+
		"run `spawn doctor` and report what it prints at https://github.com/infinite-improbability-drive/spawn/issues, "+
		"or set [sandbox] isolation = \"none\" to run the agents without a sandbox", err.Error())
	_, err = resolve(ctx, ModeSeatbelt, ModeSeatbelt, probe)
	require.ErrorAs(t, err, &u)
	r, err = resolve(ctx, ModeNone, ModeSeatbelt, func(context.Context) Report { panic("none never probes") })
	require.NoError(t, err)
	assert.Equal(t, ModeNone, r.Mode)
	assert.DirExists(t, proc.Getenv(env, "TMPDIR"))
	entries, err := os.ReadDir(proc.Getenv(env, "TMPDIR"))
	require.NoError(t, err)
	assert.Empty(t, entries, "the probe leaves nothing behind")
}

// A sandbox-exec that blocks everything spawn's profile denies and allows
// what it allows: the probe passes, every check held, and auto on macOS
// gets Seatbelt with sandbox-exec's path.
func TestASandboxThatHoldsPassesTheProbe(t *testing.T) {
	ctx := context.Background()
	env := probeEnv(t)
	bin := enforcingStandIn(t, "bwrap")
	r := probeSeatbelt(ctx, env, probeTmp(env), bin)
	require.Equal(t, ModeSeatbelt, r.Mode, "%s\n%+v", r.Reason, r.Checks)
	assert.Equal(t, bin, r.SandboxExec)
	assert.Empty(t, r.Reason)
	require.Len(t, r.Checks, 11)
	var denied []string
	for _, c := range r.Checks {
		assert.True(t, c.Held, "%s: %s", c.What, c.Detail)
		if !c.Allowed {
			denied = append(denied, c.What)
			assert.NotEmpty(t, c.Detail, "%s: what stopped it", c.What)
		}
	}
	assert.Equal(t, []string{"write outside its worktree", "write to a read-only path (your objects)",
		"change a read-only file through a hard link in its worktree", "read a secret in your HOME", "read a file the sandbox masks",
		"connect to another port on the loopback", "read another process's environment (where your keys are)"}, denied)
	got, err := resolve(ctx, ModeAuto, ModeSeatbelt, func(ctx context.Context) Report { return probeSeatbelt(ctx, env, probeTmp(env), bin) })
	require.NoError(t, err)
	assert.Equal(t, ModeSeatbelt, got.Mode)
	assert.Equal(t, NetworkModelOnly, NetworkAuto.Effective(got.Mode), "auto's network under Seatbelt is model-only")
}

// A sandbox that blocks what the agents need (here: writing their
// worktree) fails the probe too: a run could not work in it.
func TestASandboxThatBlocksTheWorktreeFailsTheProbe(t *testing.T) {
	r := probeSeatbeltIn(t, enforcingStandIn(t, "readonly"))
	assert.Equal(t, ModeNone, r.Mode)
	assert.True(t, strings.HasPrefix(r.Reason, "the Seatbelt sandbox stopped what it must allow: write in the worktree ("), r.Reason)
}

// spawn run from inside another Seatbelt sandbox (an agent's own): the
// profile cannot be applied, and the probe says why.
func TestANestedSandboxFailsTheProbeWithWhy(t *testing.T) {
	bin := standIn(t, `echo "sandbox-exec: sandbox_apply: Operation not permitted" >&2; exit 71`)
	r := probeSeatbeltIn(t, bin)
	assert.Equal(t, ModeNone, r.Mode)
	assert.Equal(t, "sandbox-exec could not apply spawn's profile (sandbox-exec: sandbox_apply: Operation not permitted): "+
		"Seatbelt does not nest, and spawn itself runs in a sandbox (Codex's, another agent's, an app's); run spawn outside it", r.Reason)

	r = probeSeatbeltIn(t, standIn(t, `echo "not json"`))
	assert.Equal(t, ModeNone, r.Mode)
	assert.Contains(t, r.Reason, `the Seatbelt probe's subject answered "not json"`)

	r = probeSeatbeltIn(t, filepath.Join(t.TempDir(), "sandbox-exec"))
	assert.Equal(t, ModeNone, r.Mode)
	assert.Contains(t, r.Reason, "sandbox-exec is not at")
}

// The other system's sandbox is refused with what to set instead.
func TestTheOtherSystemsSandboxIsRefused(t *testing.T) {
	never := func(context.Context) Report { panic("no probe") }
	_, err := resolve(context.Background(), ModeSeatbelt, ModeBwrap, never)
	assert.EqualError(t, err, `isolation = "seatbelt" but seatbelt is not this system's sandbox (`+runtimeGOOS()+`'s is bwrap): Seatbelt is macOS's; set [sandbox] isolation = "auto" or "bwrap"`)
	_, err = resolve(context.Background(), ModeBwrap, ModeSeatbelt, never)
	assert.ErrorContains(t, err, `bubblewrap is Linux's; set [sandbox] isolation = "auto" or "seatbelt"`)
	m, err := ParseMode("seatbelt")
	require.NoError(t, err)
	assert.True(t, m.Confines())
	assert.False(t, ModeNone.Confines())
}

// sandboxExecStandIn is the enforcing stand-in's main (enforcingStandIn):
// args are sandbox-exec's. It returns the exit code.
func sandboxExecStandIn(kind string, args []string) int {
	var profile string
	params := map[string]string{}
	for len(args) > 0 && args[0] != "--" {
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, "stand-in: bad arguments")
			return 64
		}
		switch args[0] {
		case "-p":
			profile = args[1]
		case "-D":
			k, v, _ := strings.Cut(args[1], "=")
			params[k] = v
		}
		args = args[2:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "stand-in: no command")
		return 64
	}
	argv := args[1:]
	bwrap, err := proc.LookPath("bwrap", []string{"PATH=/usr/local/bin:/usr/bin:/bin"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	spec := Spec{Bwrap: bwrap, NoNetwork: true}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := params[k]
		switch {
		case strings.HasPrefix(k, "READ_"):
			spec.ReadOnly = append(spec.ReadOnly, v)
		case strings.HasPrefix(k, "WRITE_") && kind == "readonly":
			spec.ReadOnly = append(spec.ReadOnly, v)
		case strings.HasPrefix(k, "WRITE_"):
			spec.Writable = append(spec.Writable, v)
		case strings.HasPrefix(k, "MASK_"):
			spec.Files = append(spec.Files, Bind{Src: "/dev/null", Dst: v})
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if m := regexp.MustCompile(`\(remote ip "localhost:(\d+)"\)`).FindStringSubmatch(profile); m != nil {
		port, _ := strconv.Atoi(m[1])
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		sockDir, err := os.MkdirTemp("/tmp", "stand-in-") // a short path: a unix socket's has at most 107 bytes
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(sockDir)
		sock := filepath.Join(sockDir, "relay.sock")
		stop, err := forwardUnixToTCP(sock, "127.0.0.1:"+m[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
		spec, argv = Bridged(spec, exe, sock, port, argv)
	}
	c := spec.Confine(proc.Cmd{Path: argv[0], Args: argv[1:], Dir: dir, Env: os.Environ(), Stdout: os.Stdout})
	if _, err := proc.Run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		var exit *proc.ExitError
		if errors.As(err, &exit) {
			return exit.Code
		}
		return 1
	}
	return 0
}

// forwardUnixToTCP serves the unix socket sock, forwarding every
// connection to addr, until stop.
func forwardUnixToTCP(sock, addr string) (stop func(), err error) {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(up, c)
				io.Copy(c, up)
			}()
		}
	}()
	return func() { ln.Close(); wg.Wait() }, nil
}
