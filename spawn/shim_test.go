//go:build linux

// These tests read /proc.

package spawn

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation/inside"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// The spawn make build makes runs its own processes (the agent's reaper,
// the model bridge, the git helper) from the spawn-shim built with it, and
// never from a shim of another build: then it runs itself, and the run is
// the same.
func TestSpawnRunsItsOwnProcessesFromTheShimBuiltWithIt(t *testing.T) {
	requireBwrap(t)
	claude, env, _ := helloTurn(t)
	userClaude(t, env, claude)
	bin := testenv.Spawn(t)
	shim := filepath.Join(filepath.Dir(bin), proc.ShimName)

	ran := runWatchingOwnProcesses(t, bin, env)
	for _, role := range []string{"reaper", "bridge", "git helper"} {
		assert.Equal(t, []string{shim}, ran[role], "the %s ran from spawn-shim", role)
	}
	assert.Equal(t, Check{Name: "spawn-shim", OK: true, Detail: shim + ", built with this spawn, runs its own processes (each agent's reaper and model bridge, the git helper)"},
		shimCheck(t, bin, env))

	// A shim of another build (here, a script that would leave a mark) is
	// never run.
	mark := filepath.Join(t.TempDir(), "ran")
	require.NoError(t, os.WriteFile(shim, []byte("#!/bin/sh\necho ran >"+mark+"\nexit 1\n"), 0o755))
	ran = runWatchingOwnProcesses(t, bin, env)
	for _, role := range []string{"reaper", "bridge", "git helper"} {
		assert.Equal(t, []string{bin}, ran[role], "the %s ran from spawn itself", role)
	}
	assert.NoFileExists(t, mark, "the other build's shim never ran")
	check := shimCheck(t, bin, env)
	assert.True(t, check.OK, "spawn runs without its shim")
	assert.Contains(t, check.Detail, "none built with this spawn beside it")
}

// shimCheck is what spawn doctor of bin says of spawn-shim.
func shimCheck(t *testing.T, bin string, env []string) Check {
	t.Helper()
	cmd := exec.Command(bin, "doctor", "--json")
	cmd.Dir, cmd.Env = testenv.Repo(t), env
	out, _ := cmd.Output() // exit 1 when a check fails (this machine has no API key)
	var checks []Check
	require.NoError(t, json.Unmarshal(out, &checks), "spawn doctor --json: %s", out)
	for _, c := range checks {
		if c.Name == "spawn-shim" {
			return c
		}
	}
	t.Fatalf("spawn doctor has no spawn-shim check: %s", out)
	return Check{}
}

// runWatchingOwnProcesses runs `spawn run --mode solo` of bin in a new
// repository and checks that the coder's file is on the run's branch. It
// returns, for each of spawn's own processes (reaper, bridge, git
// helper), the binaries it ran from, read from /proc while the run ran.
func runWatchingOwnProcesses(t *testing.T, bin string, env []string) map[string][]string {
	t.Helper()
	repo := testenv.Repo(t)
	cmd := exec.Command(bin, "run", "--mode", "solo", "create hello.txt")
	cmd.Dir, cmd.Env = repo, env
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ran := map[string][]string{}
	for watching := true; watching; {
		select {
		case err := <-done:
			require.NoError(t, err, "spawn run: %s", out.String())
			watching = false
		case <-time.After(2 * time.Millisecond):
			ownProcesses(ran)
		}
	}
	branch := strings.TrimSpace(testenv.Git(t, repo, "for-each-ref", "--format=%(refname)", "refs/heads/spawn/"))
	assert.Equal(t, "hi", testenv.Git(t, repo, "show", branch+":hello.txt"), "the coder's file is on the run's branch")
	return ran
}

// ownProcesses adds to ran the binary of each of spawn's own processes
// running now, by role, once each: told apart by their arguments once
// they run (a process forked and not yet run has its parent's).
func ownProcesses(ran map[string][]string) {
	entries, _ := os.ReadDir("/proc") // a process that ended meanwhile is only not seen
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(string(b), "\x00")
		role := ""
		switch {
		case argv[0] == "spawn-reaper":
			role = "reaper"
		case len(argv) > 1 && argv[1] == inside.BridgeArg:
			role = "bridge"
		case len(argv) > 1 && argv[1] == sandbox.HelperArg:
			role = "git helper"
		default:
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && !slices.Contains(ran[role], exe) {
			ran[role] = append(ran[role], exe)
		}
	}
}

// The shim runs as the user, outside the sandbox, so the coder must not
// be able to change it: a go test the coder wrote tries to overwrite it,
// change its mode, move it and put a file beside it, and none of that
// reaches the user's files. The run still lands the coder's work.
func TestACoderCannotReplaceTheShim(t *testing.T) {
	requireBwrap(t)
	claude := testenv.Claude(t)
	bin := testenv.Spawn(t)
	dir := filepath.Dir(bin)
	shim := filepath.Join(dir, proc.ShimName)
	before, err := os.ReadFile(shim)
	require.NoError(t, err)
	mark := filepath.Join(t.TempDir(), "pwned")
	attack := fmt.Sprintf(`package attack

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestShim(t *testing.T) {
	shim := %q
	fmt.Println("WRITE", os.WriteFile(shim, []byte("#!/bin/sh\necho pwned >%s\n"), 0o755))
	fmt.Println("CHMOD", os.Chmod(shim, 0o777))
	fmt.Println("RENAME", os.Rename(shim, shim+".old"))
	fmt.Println("BESIDE", os.WriteFile(filepath.Join(filepath.Dir(shim), "planted"), nil, 0o755))
	fmt.Println("SHIM DONE")
}
`, shim, mark)
	srv := testenv.ModelServer(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{
			{ID: "gomod", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/go.mod", "content": "module attack\n\ngo 1.21\n"}},
			{ID: "attack", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/shim_test.go", "content": attack}},
		}},
		{Tools: []modelserver.ToolCall{{ID: "go-test", Name: "Bash", Input: map[string]any{"command": "go test -count=1 -v -run TestShim ./...", "description": "test", "timeout": 600000}}}},
		{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}}}},
		{Text: "Done."},
	}}}})
	env := testenv.Env(t, append(srv.ClaudeEnv(), "SPAWN_CACHE=shared")...)
	userClaude(t, env, claude)

	ran := runWatchingOwnProcesses(t, bin, env)
	assert.Equal(t, []string{shim}, ran["reaper"], "the run used the shim")
	goTest := toolOutput(srv, "go-test")
	require.Contains(t, goTest, "SHIM DONE", "the coder's test ran")
	assert.NotContains(t, goTest, "WRITE <nil>")
	after, err := os.ReadFile(shim)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the shim is the one make build made")
	fi, err := os.Stat(shim)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"spawn", "spawn-shim"}, names, "nothing new beside spawn")
	assert.NoFileExists(t, mark)
}
