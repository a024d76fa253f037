package isolation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation/inside"
)

// ProbeCheck is one thing the Seatbelt probe tried under the profile: what
// it was, whether the sandbox must allow it, whether the sandbox did what
// it must, and what happened.
type ProbeCheck struct {
	What    string `json:"what"`
	Allowed bool   `json:"allowed"` // the sandbox must let it happen
	Held    bool   `json:"held"`    // the sandbox did what it must
	Detail  string `json:"detail,omitempty"`
}

// probeTimeout bounds the whole probe: a few file operations and two
// connections on the loopback.
const probeTimeout = 30 * time.Second

// ProbeSeatbelt proves on this machine that a Seatbelt sandbox holds
// before any agent is trusted to one. It makes a throwaway layout (a
// "worktree", a "HOME" with a secret in it, a read-only toolchain with a
// masked file, read-only "objects"), two listeners on the loopback (the
// "relay" and another port) and a process whose environment holds a
// secret, and runs spawn's own binary (this one, with a hidden argument)
// under /usr/bin/sandbox-exec and the profile Spec.Seatbelt generates for
// that layout. The subject must be able to write in the worktree, read the
// toolchain and reach the relay; it must fail to write outside the
// worktree or to the objects (directly, or through a hard link in the
// worktree), to read the HOME secret (by its path, or by the data volume's
// path to it), to read the masked file, to connect to the other port, and
// to read the other process's environment. What changed on disk and which
// listener was reached are checked by the probe itself, not taken from the
// subject's word.
//
// It never fails: a sandbox that does not hold, or that could not be
// tried, is a Report with Mode none, the reason (one sentence: what
// failed) and every check; one that holds is Mode seatbelt. Cancelling ctx
// stops the probe, which then reports none. The probe's processes run
// with env; its files are made under tmp, the user's TMPDIR ("" for the
// system's).
func ProbeSeatbelt(ctx context.Context, env []string, tmp string) Report {
	return probeSeatbelt(ctx, env, tmp, SandboxExec)
}

// probeSeatbelt is ProbeSeatbelt with sandbox-exec at bin: tests give a
// stand-in; spawn never passes another path than SandboxExec.
func probeSeatbelt(ctx context.Context, env []string, tmp, bin string) Report {
	none := func(format string, args ...any) Report {
		return Report{Mode: ModeNone, Reason: fmt.Sprintf(format, args...)}
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return none("macOS's sandbox-exec is not at %s", bin)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	l, err := newProbeLayout(tmp)
	if err != nil {
		return none("the Seatbelt probe could not prepare its files: %v", err)
	}
	checks, err := l.run(ctx, env, bin)
	if rerr := os.RemoveAll(l.root); rerr != nil {
		err = errors.Join(err, fmt.Errorf("remove %s: %w", l.root, rerr))
	}
	r := Report{Mode: ModeSeatbelt, SandboxExec: bin, Checks: checks}
	if err != nil {
		return Report{Mode: ModeNone, Reason: err.Error(), Checks: checks}
	}
	for _, c := range checks {
		if c.Held {
			continue
		}
		r.Mode, r.SandboxExec = ModeNone, ""
		if c.Allowed {
			r.Reason = fmt.Sprintf("the Seatbelt sandbox stopped what it must allow: %s (%s)", c.What, c.Detail)
		} else {
			r.Reason = fmt.Sprintf("the Seatbelt sandbox did not hold: it let a confined process %s", c.What)
		}
		return r
	}
	return r
}

// probeLayout is the probe's throwaway files, under root.
type probeLayout struct {
	root, worktree, outside, home, tools, objects string
	secret                                        string // a random word: the content of every file the subject must not read or change
}

func newProbeLayout(tmp string) (l *probeLayout, err error) {
	if tmp == "" {
		tmp = os.TempDir()
	}
	root, err := os.MkdirTemp(tmp, "spawn-seatbelt-probe-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(root))
		}
	}()
	// The real path: Seatbelt sees /private/var/folders, not /var/folders.
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	l = &probeLayout{root: root, secret: "spawn-probe-" + hex.EncodeToString(b),
		worktree: filepath.Join(root, "worktree"), outside: filepath.Join(root, "outside"), home: filepath.Join(root, "home"),
		tools: filepath.Join(root, "tools"), objects: filepath.Join(root, "objects")}
	for _, d := range []string{l.worktree, l.outside, l.home, l.tools, l.objects} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{filepath.Join(l.home, "id_ed25519"), filepath.Join(l.tools, "readable"),
		filepath.Join(l.tools, "credentials.toml"), filepath.Join(l.objects, "pack")} {
		if err := os.WriteFile(f, []byte(l.secret), 0o600); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// probeCase is one check: the task, and how the probe judges its outcome.
type probeCase struct {
	what    string
	allowed bool
	task    inside.Task
	// effect, when set, is what the probe itself sees of the operation
	// (a file written or changed, a listener reached), which decides
	// rather than the subject's report.
	effect func() bool
}

// run runs the subject under the profile an agent would get with env's
// toolchains, and judges every check.
func (l *probeLayout) run(ctx context.Context, env []string, bin string) (checks []ProbeCheck, err error) {
	relay, err := listenGreeting(l.secret)
	if err != nil {
		return nil, err
	}
	defer relay.Close()
	other, err := listenGreeting(l.secret)
	if err != nil {
		return nil, err
	}
	defer other.Close()
	target, stopTarget, err := l.secretHolder()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, stopTarget()) }()
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return nil, fmt.Errorf("the Seatbelt probe cannot find spawn's own binary: %w", err)
	}

	written, outside := filepath.Join(l.worktree, "written"), filepath.Join(l.outside, "written")
	pack, canary := filepath.Join(l.objects, "pack"), filepath.Join(l.home, "id_ed25519")
	unchanged := func(p string) func() bool {
		return func() bool {
			b, err := os.ReadFile(p)
			return err != nil || string(b) != l.secret
		}
	}
	cases := []probeCase{
		{what: "write in the worktree", allowed: true, task: inside.Task{Op: "write", Path: written, Want: l.secret},
			effect: func() bool { b, err := os.ReadFile(written); return err == nil && string(b) == l.secret }},
		{what: "read a toolchain's file", allowed: true, task: inside.Task{Op: "read", Path: filepath.Join(l.tools, "readable"), Want: l.secret}},
		{what: "connect to the model relay's port", allowed: true, task: inside.Task{Op: "connect", Addr: relay.addr(), Want: l.secret},
			effect: func() bool { return relay.reached.Load() > 0 }},
		{what: "write outside its worktree", task: inside.Task{Op: "write", Path: outside},
			effect: func() bool { return exists(outside) }},
		{what: "write to a read-only path (your objects)", task: inside.Task{Op: "write", Path: pack}, effect: unchanged(pack)},
		{what: "change a read-only file through a hard link in its worktree", task: inside.Task{Op: "link-write", Path: pack, To: filepath.Join(l.worktree, "pack")},
			effect: unchanged(pack)},
		{what: "read a secret in your HOME", task: inside.Task{Op: "read", Path: canary, Want: l.secret}},
		{what: "read a file the sandbox masks", task: inside.Task{Op: "read", Path: filepath.Join(l.tools, "credentials.toml"), Want: l.secret}},
		{what: "connect to another port on the loopback", task: inside.Task{Op: "connect", Addr: other.addr(), Want: l.secret},
			effect: func() bool { return other.reached.Load() > 0 }},
		{what: "read another process's environment (where your keys are)", task: inside.Task{Op: "environ", Pid: target, Want: l.secret}},
	}
	// spawn's git helper runs git in the sandbox: on a Mac, /usr/bin/git
	// is a shim that finds the developer tools (xcode-select) first.
	if git, err := proc.LookPath("git", env); err == nil {
		cases = append(cases, probeCase{what: "run git", allowed: true, task: inside.Task{Op: "exec", Path: git, Want: "git version"}})
	}
	// On a Mac, HOME is reachable by another path too: the data volume's.
	if dataPath := filepath.Join("/System/Volumes/Data", canary); exists(dataPath) {
		cases = append(cases, probeCase{what: "read a secret in your HOME by the data volume's path", task: inside.Task{Op: "read", Path: dataPath, Want: l.secret}})
	}

	tasks := make([]inside.Task, len(cases))
	for i, c := range cases {
		tasks[i] = c.task
	}
	arg, err := json.Marshal(tasks)
	if err != nil {
		return nil, err
	}
	spec := Spec{SandboxExec: bin, ReadOnly: append([]string{exe, l.tools, l.objects}, Toolchains(env)...), Writable: []string{l.worktree},
		Files: []Bind{{Src: "/dev/null", Dst: filepath.Join(l.tools, "credentials.toml")}}, NoNetwork: true, RelayPort: relay.port()}
	cmd := spec.Confine(proc.Cmd{Path: exe, Args: []string{inside.ProbeArg, string(arg)}, Dir: l.worktree,
		Env: []string{"HOME=" + l.home, "TMPDIR=" + l.worktree, "PATH=/usr/bin:/bin"}})
	out, err := proc.Run(ctx, cmd)
	if err != nil {
		var exit *proc.ExitError
		if errors.As(err, &exit) {
			// The whole first line: sandbox-exec names the call that failed.
			msg, _, _ := strings.Cut(strings.TrimSpace(exit.Stderr), "\n")
			if strings.Contains(msg, "sandbox_apply") {
				return nil, fmt.Errorf("sandbox-exec could not apply spawn's profile (%s): Seatbelt does not nest, and spawn itself runs in a sandbox (Codex's, another agent's, an app's); run spawn outside it", msg)
			}
			return nil, fmt.Errorf("sandbox-exec could not run spawn under its profile (exit %d: %s)", exit.Code, msg)
		}
		return nil, fmt.Errorf("sandbox-exec could not run spawn under its profile: %w", err)
	}
	var results []inside.Result
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(cases) {
		return nil, fmt.Errorf("the Seatbelt probe's subject answered %q, not its %d results", text.FirstLine(string(out)), len(cases))
	}
	checks = make([]ProbeCheck, len(cases))
	for i, c := range cases {
		done := results[i].Done
		if c.effect != nil {
			done = c.effect()
		}
		detail := results[i].Detail
		if detail == "" && done {
			detail = "it happened"
		}
		checks[i] = ProbeCheck{What: c.what, Allowed: c.allowed, Held: done == c.allowed, Detail: detail}
	}
	return checks, nil
}

// secretHolder starts a process outside the sandbox whose environment
// holds l.secret, and returns its pid and how to stop it.
func (l *probeLayout) secretHolder() (int, func() error, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, err
	}
	// cat ends at the end of its input, which comes when the probe closes
	// w or dies: it cannot outlive the probe, and needs no reaper.
	p, err := proc.StartDetached(proc.Cmd{Path: "/bin/cat", Env: []string{"SPAWN_PROBE_SECRET=" + l.secret}, Stdin: r}, "")
	err = errors.Join(err, r.Close())
	if err != nil {
		return 0, nil, errors.Join(fmt.Errorf("start a process for the probe: %w", err), w.Close())
	}
	return p.Pid(), func() error {
		// The timer is for a cat that does not end.
		t := time.AfterFunc(5*time.Second, p.Kill)
		defer t.Stop()
		err := w.Close()
		if _, werr := p.Wait(); werr != nil {
			err = errors.Join(err, werr)
		}
		return err
	}, nil
}

// greetingListener is a listener on the loopback that greets each
// connection with a word and counts them.
type greetingListener struct {
	ln      net.Listener
	reached atomic.Int64
	wg      sync.WaitGroup
}

func listenGreeting(word string) (*greetingListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on the loopback: %w", err)
	}
	g := &greetingListener{ln: ln}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.reached.Add(1)
			// A greeting the subject may not read is its loss.
			_, _ = io.WriteString(c, word+"\n")
			_ = c.Close()
		}
	}()
	return g, nil
}

func (g *greetingListener) addr() string { return g.ln.Addr().String() }
func (g *greetingListener) port() int    { return g.ln.Addr().(*net.TCPAddr).Port }

// Close stops the listener and waits for its loop.
func (g *greetingListener) Close() {
	// Closing a listener fails only when it is closed already.
	_ = g.ln.Close()
	g.wg.Wait()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
