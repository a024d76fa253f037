// Package testenv sets up what spawn's end-to-end tests need: the pinned
// real agent CLIs, a throwaway git repository, and a clean environment.
// Under CI=true a missing CLI fails the test instead of skipping it; with
// -short (the fast tier) every test that needs one skips.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
)

// Root returns the module's root directory (the folder holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testenv: go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// Spawn builds spawn and its shim as make build does, into a temporary
// folder, and returns spawn's path: the binaries a user runs.
func Spawn(t testing.TB) string {
	t.Helper()
	bin := t.TempDir()
	cmd := exec.Command("make", "-s", "--no-print-directory", "build", "BIN="+bin)
	cmd.Dir = Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: make build: %v\n%s", err, out)
	}
	return filepath.Join(bin, "spawn")
}

// agent finds a pinned agent CLI installed by `make agents`.
func agent(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the fast tier runs no agent CLI")
	}
	path := filepath.Join(Root(t), "agents", "node_modules", ".bin", name)
	if _, err := os.Stat(path); err != nil {
		msg := name + " is not installed at " + path + "; run `make agents` (npm ci in agents/)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// Bubblewrap checks that bubblewrap runs `true` with the arguments
// args (its namespaces and mounts) here, and fails the test under CI=true
// when it does not, or skips it elsewhere.
func Bubblewrap(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command("bwrap", append(args, "true")...).CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("no bubblewrap here (%v: %s); install it (Debian: apt-get install bubblewrap)", err, out)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Claude returns the path of the pinned real claude binary.
func Claude(t testing.TB) string { return agent(t, "claude") }

// Gemini returns the path of the pinned real gemini binary.
func Gemini(t testing.TB) string { return agent(t, "gemini") }

// Codex returns the path of the pinned real codex binary (a node shim that
// runs the Rust binary of the optional package @openai/codex-linux-x64).
func Codex(t testing.TB) string { return agent(t, "codex") }

// Env returns a minimal environment for spawn and its agents: PATH, a
// fresh HOME and TMPDIR, no phone-home, plus extra. Nothing of the
// developer's own environment (API keys, config) leaks in.
func Env(t testing.TB, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	tmp := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"LANG=C.UTF-8",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	for _, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY"} {
		if v := os.Getenv(name); v != "" {
			env = append(env, name+"="+v)
		}
	}
	// spawn keeps the coder's toolchain caches: the tests share one (the
	// "shared" cache, in one folder for the whole test run), so that a
	// coder's `go test` compiles the standard library once, not per test.
	env = append(env, "SPAWN_CACHE=shared", "SPAWN_CACHE_DIR="+filepath.Join(os.TempDir(), "spawn-test-cache"))
	return append(env, extra...)
}

// Repo creates a git repository with a local identity and one commit
// holding README.md, and returns its path.
func Repo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Git(t, dir, "init", "--quiet", "--initial-branch=main")
	Git(t, dir, "config", "user.name", "Test User")
	Git(t, dir, "config", "user.email", "test@example.com")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", "README.md")
	Git(t, dir, "commit", "--quiet", "-m", "initial")
	return dir
}

// Git runs git in dir for a test's own set-up and checks, and returns its
// trimmed output. (Tests may exec directly: spawn's exec seam is for spawn.)
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Processes lists the pids of the running processes whose command line
// (arguments joined by spaces) satisfies match.
func Processes(t testing.TB, match func(cmdline string) bool) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && len(b) > 0 && match(strings.ReplaceAll(string(b), "\x00", " ")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// AssertGroupGone checks that no process of the process group pgid is left,
// within 5 s: a killed orphan stays a zombie until init reaps it.
func AssertGroupGone(t testing.TB, pgid int, msgAndArgs ...any) bool {
	t.Helper()
	if pgid <= 0 {
		t.Errorf("testenv: no process group to check (pgid %d)", pgid)
		return false
	}
	gone := func() bool { return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) }
	deadline := time.Now().Add(5 * time.Second)
	for !gone() {
		if time.Now().After(deadline) {
			t.Errorf("process group %d survived: %s", pgid, fmt.Sprint(msgAndArgs...))
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Parent returns the parent pid of pid, read from /proc, or 0 when pid is
// gone.
func Parent(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name may hold spaces and parentheses: skip to the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 2 {
		t.Fatalf("testenv: unexpected /proc/%d/stat: %q", pid, b)
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("testenv: /proc/%d/stat: %v", pid, err)
	}
	return ppid
}

// Ancestor returns the nearest ancestor of pid whose command line satisfies
// match, or 0 when there is none.
func Ancestor(t testing.TB, pid int, match func(cmdline string) bool) int {
	t.Helper()
	for p := Parent(t, pid); p > 1; p = Parent(t, p) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		if err == nil && match(strings.ReplaceAll(string(b), "\x00", " ")) {
			return p
		}
	}
	return 0
}

// AwaitGone waits up to 10 s until no running process's command line
// satisfies match, and fails the test naming the survivors otherwise. A
// killed orphan can stay a zombie (with an empty command line) until init
// reaps it; zombies do not count.
func AwaitGone(t testing.TB, what string, match func(cmdline string) bool) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := Processes(t, match)
		if len(left) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("%s survived: pids %v", what, left)
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// KillAtCleanup kills, when the test ends, every process whose command
// line satisfies match: a failing test leaves nothing behind.
func KillAtCleanup(t testing.TB, match func(cmdline string) bool) {
	t.Helper()
	t.Cleanup(func() {
		for _, pid := range Processes(t, match) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// WriteFile writes content to dir/name, making the folders it needs.
func WriteFile(t testing.TB, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Numbered is a file's text of n lines, "line 1" to "line n": lines a diff
// or a review comment can point at.
func Numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// ModelServer starts the scripted model server on sc for the test, and at
// its end closes it and fails the test unless every scripted turn was
// served (modelserver.Server.Verify): a test whose script holds a turn its
// story never reached proves less than it says. A test that skipped is not
// checked.
func ModelServer(t testing.TB, sc modelserver.Scenario, opts ...modelserver.Option) *modelserver.Server {
	t.Helper()
	srv, err := modelserver.Start(sc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		if err := srv.Verify(); err != nil && !t.Skipped() {
			t.Errorf("the scripted model: %v", err)
		}
	})
	return srv
}

// LoadAverage is the machine's 1-minute load average, to report beside a
// figure the machine's other work could sway; ok is false where the
// system does not say (no /proc/loadavg).
func LoadAverage() (load float64, ok bool) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	return f, err == nil
}

// StreamMB is the size, in MB, of the stream benchmarks' agent streams:
// SPAWN_BENCH_STREAM_MB, else 100.
func StreamMB(b *testing.B) int {
	b.Helper()
	if s := os.Getenv("SPAWN_BENCH_STREAM_MB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("SPAWN_BENCH_STREAM_MB=%q: want a positive number", s)
		}
		return n
	}
	return 100
}
