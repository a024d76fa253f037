package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/infinite-improbability-drive/spawn/internal/entry"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
)

// TestMain lets the test binary stand in for the spawn binary: the stories
// in testdata/script run `spawn` as a real process.
func TestMain(m *testing.M) {
	if code, ok := entry.Dispatch(os.Args); ok {
		proc.Exit(code)
	}
	proc.Main()
	if os.Getenv("SPAWN_TEST_BE_SPAWN") == "1" {
		os.Exit(Main(os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"spawn": func() { os.Exit(Main(os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI's user stories, testdata/script/*.txtar: each is
// what a person types and what they check afterwards.
func TestScripts(t *testing.T) {
	root := testenv.Root(t)
	agents := filepath.Join(root, "agents", "node_modules", ".bin")
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join(root, "testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("LANG", "C.UTF-8")
			env.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
			env.Setenv("AGENTS", agents)
			env.Values[serverKey{}] = &serverSlot{t: env.T()}
			for _, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY"} {
				if v := os.Getenv(name); v != "" {
					env.Setenv(name, v)
				}
			}
			return os.MkdirAll(home, 0o755)
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "agents":
				// Under CI=true the agent CLIs must be there: a story that
				// needs them never skips, it fails. The fast tier (-short)
				// runs none.
				if testing.Short() {
					return false, nil
				}
				_, err := os.Stat(filepath.Join(agents, "claude"))
				return err == nil || os.Getenv("CI") == "true", nil
			case "bwrap":
				// Under CI=true bubblewrap must be there (.ci/run installs it).
				return isolation.Probe(context.Background(), os.Environ(), os.Getenv("TMPDIR")).Mode == isolation.ModeBwrap || os.Getenv("CI") == "true", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkrepo":                 cmdMkrepo,
			"modelserver":            cmdModelserver,
			"await-tool":             cmdAwaitTool,
			"signal":                 cmdSignal,
			"claude-sessions":        cmdClaudeSessions,
			"await-request":          cmdAwaitRequest,
			"await-request-contains": cmdAwaitRequestContains,
		},
	})
}

// mkrepo DIR: a git repository with a local identity and one commit
// holding README.md.
func cmdMkrepo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkrepo DIR")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	git := func(args ...string) { ts.Check(ts.Exec("git", append([]string{"-C", dir}, args...)...)) }
	git("init", "--quiet", "--initial-branch=main")
	git("config", "user.name", "Test User")
	git("config", "user.email", "test@example.com")
	ts.Check(os.WriteFile(filepath.Join(dir, "README.md"), []byte("# test\n"), 0o644))
	git("add", "README.md")
	git("commit", "--quiet", "-m", "initial")
}

// serverKey finds a script's serverSlot among its values.
type serverKey struct{}

// serverSlot holds the model server a script started, for await-tool, and
// the script's T.
type serverSlot struct {
	t   testscript.T
	srv *modelserver.Server
}

// modelserver SCENARIO.json: starts the scripted model server for the rest
// of the script, points the pinned claude and gemini at it (the SPAWN_*
// command variables and the CLIs' API variables), and, when the script
// ends, fails it if a scripted turn was never served.
func cmdModelserver(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: modelserver SCENARIO.json")
	}
	sc, err := modelserver.LoadScenario(ts.MkAbs(args[0]))
	ts.Check(err)
	srv, err := modelserver.Start(sc)
	ts.Check(err)
	slot := ts.Value(serverKey{}).(*serverSlot)
	slot.srv = srv
	ts.Defer(func() {
		srv.Close()
		if err := srv.Verify(); err != nil {
			// Not Fatalf: the script may have failed already, and a
			// deferred function must not fail it twice.
			ts.Logf("%v", err)
			if f, ok := slot.t.(interface{ Fail() }); ok {
				f.Fail()
			} else {
				slot.t.FailNow()
			}
		}
	})
	agents := ts.Getenv("AGENTS")
	ts.Setenv("SPAWN_CLAUDE_COMMAND", filepath.Join(agents, "claude"))
	ts.Setenv("SPAWN_GEMINI_COMMAND", filepath.Join(agents, "gemini"))
	genv, err := srv.GeminiEnv(ts.Getenv("HOME"))
	ts.Check(err)
	for _, kv := range slices.Concat(srv.ClaudeEnv(), genv) {
		k, v, _ := strings.Cut(kv, "=")
		ts.Setenv(k, v)
	}
}

// agentWait bounds how long a story waits for an agent to reach a point
// (a tool call run, a request made). It only bounds a failure: a passing
// story waits no longer than the agent takes. It is generous because CI
// starts every story's node processes at once, beside the race-built
// tests of other packages, on two cores; the suite's own -timeout still
// bounds the whole.
const agentWait = 5 * time.Minute

// await-tool ID: waits (up to agentWait) until the model server has seen
// the result of the tool call ID, i.e. the agent ran it.
func cmdAwaitTool(ts *testscript.TestScript, neg bool, args []string) {
	srv := ts.Value(serverKey{}).(*serverSlot).srv
	if neg || len(args) != 1 || srv == nil {
		ts.Fatalf("usage: await-tool ID (after modelserver)")
	}
	awaitRequest(ts, srv, "the result of the tool call "+args[0], func(req modelserver.Request) bool {
		return slices.ContainsFunc(req.ToolResults(), func(tr modelserver.ToolResultSeen) bool { return tr.ID == args[0] })
	})
}

// signal NAME WORD: sends the signal NAME (HUP, INT, TERM, KILL) to every
// spawn run of this script whose command line holds WORD, as a closing
// terminal, a supervisor or the kernel's OOM killer would. Stories run in
// parallel and some give the same task: a process is this script's when
// its environment holds this script's WORK.
func cmdSignal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: signal NAME WORD")
	}
	sig, ok := map[string]syscall.Signal{"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL}[args[0]]
	if !ok {
		ts.Fatalf("signal: unknown signal %q", args[0])
	}
	entries, err := os.ReadDir("/proc")
	ts.Check(err)
	sent := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), args[1]) || !strings.Contains(string(b), "spawn\x00run") {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), "WORK="+ts.Getenv("WORK")) {
			continue
		}
		ts.Check(syscall.Kill(pid, sig))
		sent++
	}
	if sent == 0 {
		ts.Fatalf("signal: no spawn process runs %q", args[1])
	}
}

// claude-sessions N: the model server saw claude's main requests in
// exactly N sessions (X-Claude-Code-Session-Id), e.g. 1 when a resumed
// run went on in the coder's session.
func cmdClaudeSessions(ts *testscript.TestScript, neg bool, args []string) {
	srv := ts.Value(serverKey{}).(*serverSlot).srv
	if neg || len(args) != 1 || srv == nil {
		ts.Fatalf("usage: claude-sessions N (after modelserver)")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	sessions := map[string]bool{}
	for _, req := range srv.Requests() {
		if req.API == modelserver.APIAnthropic && req.Main {
			sessions[req.SessionID] = true
		}
	}
	if len(sessions) != want {
		ts.Fatalf("claude's requests came in %d sessions (%v), want %d", len(sessions), sessions, want)
	}
}
