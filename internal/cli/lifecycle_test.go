package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

var lifecycleT0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func TestLsTableNamesEachRunsStateAndOutcome(t *testing.T) {
	finished := lifecycleT0.Add(5 * time.Minute)
	entries := []runs.Entry{
		{Paths: runs.Paths{ID: "20261123-093000-aaaa"}, State: runs.StateRunning, Summary: &runs.Summary{
			ID: "20261123-093000-aaaa", Task: "add a /healthz endpoint\n\nwith a test", Mode: observability.ModePingpong,
			Status: observability.StatusRunning, Verdict: observability.VerdictNone, Branch: "spawn/20261123-093000-aaaa/add-healthz",
			StartedAt: lifecycleT0.Add(30 * time.Minute), CostUSD: 0.0123, Rounds: 1}},
		{Paths: runs.Paths{ID: "20261123-090000-bbbb"}, State: runs.StateFinished, Summary: &runs.Summary{
			ID: "20261123-090000-bbbb", Task: strings.Repeat("a very long task ", 10), Mode: observability.ModeSolo,
			Status: observability.StatusSucceeded, Verdict: observability.VerdictNone, Branch: "spawn/b",
			StartedAt: lifecycleT0, FinishedAt: &finished, CostUSD: 0.5}},
		{Paths: runs.Paths{ID: "20261120-090000-cccc"}, State: runs.StateBroken, Err: errors.New("read record: no such file")},
	}
	var b bytes.Buffer
	require.NoError(t, lsTable(&b, entries, lifecycleT0.Add(42*time.Minute)))
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	require.Len(t, lines, 4)
	assert.Regexp(t, `^ID +AGE +MODE +OUTCOME +ROUNDS +COST +TASK$`, lines[0])
	assert.Regexp(t, `^20261123-093000-aaaa +12m +pingpong +running +1 +\$0\.0123 +add a /healthz endpoint$`, lines[1])
	assert.Regexp(t, `^20261123-090000-bbbb +42m +solo +done, not reviewed +0 +\$0\.5000 +a very long task a very\.\.\.$`, lines[2])
	assert.Regexp(t, `^20261120-090000-cccc +- +- +broken +- +- +read record: no such file$`, lines[3])
	for _, l := range lines {
		assert.LessOrEqual(t, len([]rune(l)), 100, "fits 100 columns: %q", l)
	}

	// --wide: every column, the whole task, and no branch that is gone.
	b.Reset()
	require.NoError(t, lsWide(&b, entries, lifecycleT0.Add(42*time.Minute), map[string]bool{"spawn/20261123-093000-aaaa/add-healthz": true}))
	lines = strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	require.Len(t, lines, 4)
	assert.Regexp(t, `^ID +AGE +MODE +STATUS +VERDICT +ROUNDS +COST +BRANCH +TASK$`, lines[0])
	assert.Regexp(t, `^20261123-093000-aaaa +12m +pingpong +running +none +1 +\$0\.0123 +spawn/20261123-093000-aaaa/add-healthz +add a /healthz endpoint$`, lines[1])
	assert.Regexp(t, `^20261123-090000-bbbb +42m +solo +succeeded +none +0 +\$0\.5000 +- +(a very long task ){9}a very long task$`, lines[2], "spawn/b was removed")
	assert.Regexp(t, `^20261120-090000-cccc +- +- +broken +- +- +- +- +read record: no such file$`, lines[3])
}

func TestLsJSONSaysWhyARunIsBroken(t *testing.T) {
	r := lsEntry(runs.Entry{Paths: runs.Paths{ID: "x", Dir: "/r/x"}, State: runs.StateBroken, Err: errors.New("read record: no such file")})
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"x","state":"broken","status":"","mode":"","verdict":"","exit_code":0,"rounds":0,"cost_usd":0,
		"branch":"","task":"","started_at":null,"finished_at":null,"pr_url":null,"error":null,"problem":"read record: no such file","dir":"/r/x","pid":0}`, string(b))
}

func TestAgeReadsAsAPersonCountsIt(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 45 * time.Second: "45s", 12*time.Minute + 59*time.Second: "12m",
		5 * time.Hour: "5h", 47 * time.Hour: "47h", 72 * time.Hour: "3d",
	} {
		assert.Equal(t, want, age(d), "%s", d)
	}
}

func TestLastActionReadsAsTheRepositorysOwnPaths(t *testing.T) {
	l := runs.Live{Tool: "Edit", Input: json.RawMessage(`{"file_path":"/r/.spawn/worktrees/x/cmd/main.go","old_string":"a"}`), Sandbox: "/r/.spawn/worktrees/x"}
	assert.Equal(t, "Edit cmd/main.go", lastAction(l))
	assert.Equal(t, "TodoWrite", lastAction(runs.Live{Tool: "TodoWrite", Input: json.RawMessage(`{"todos":[]}`)}))
	assert.Equal(t, "", lastAction(runs.Live{}))
}

// A person looking at a run in the middle of its work sees that it is
// running, what it is doing now, and how to follow it; not an exit code.
func TestShowOfALiveRunSaysWhatItIsDoing(t *testing.T) {
	rec := observability.New("20261123-090000-aaaa", "add a /healthz endpoint", observability.ModePingpong, lifecycleT0)
	rec.Branch, rec.SandboxPath = "spawn/a", "/r/.spawn/worktrees/20261123-090000-aaaa"
	l := runs.Live{Phase: observability.PhaseFixing, Round: 2, Turns: 7, CostUSD: 0.25, Role: observability.RoleCoder, Tool: "Bash",
		Input: json.RawMessage(`{"command":"go test ./..."}`)}
	got := liveSummary(rec, l, lifecycleT0.Add(90*time.Second))
	assert.Regexp(t, `^spawn 20261123-090000-aaaa: running since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n  now:       fixing, round 2, coder turn 7, 1m30s elapsed; last: Bash go test \./\.\.\. \(coder\)\n`, got)
	assert.Contains(t, got, "commits:   none yet")
	assert.Contains(t, got, "\n  cost:      $0.2500 so far\n", "one figure: the live cost")
	assert.Equal(t, 1, strings.Count(got, "$"), "and no other")
	assert.Contains(t, got, "next:      the run is still working: spawn logs -f 20261123-090000-aaaa follows it")
	assert.NotContains(t, got, "exit")
}

// liveRegistryRun is a run this test holds live (its lock taken, its
// record running) in a new repository, with events already in its log.
func liveRegistryRun(t *testing.T, events ...observability.Event) (repo string, run *runs.Run) {
	t.Helper()
	repo = testenv.Repo(t)
	reg := runs.Open(filepath.Join(repo, ".spawn"))
	run, err := reg.Create("20261123-090000-aaaa")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, run.Close()) })
	rec := observability.New(run.ID, "add a /healthz endpoint", observability.ModeSolo, time.Now())
	require.NoError(t, observability.WriteFile(run.RecordPath(), rec, nil))
	appendEvents(t, run.Paths, events...)
	return repo, run
}

func appendEvents(t *testing.T, p runs.Paths, events ...observability.Event) {
	t.Helper()
	var b []byte
	for _, e := range events {
		line, err := json.Marshal(e)
		require.NoError(t, err)
		b = append(append(b, line...), '\n')
	}
	appendRaw(t, p, string(b))
}

func appendRaw(t *testing.T, p runs.Paths, s string) {
	t.Helper()
	f, err := os.OpenFile(p.EventsPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, errors.Join(err, f.Close()))
}

// followLogs runs `spawn logs -f` on the run in repo in the background;
// the channel gives its error when it returns.
func followLogs(ctx context.Context, t *testing.T, repo string, out, errw *testenv.SyncBuffer) <-chan error {
	t.Helper()
	d := &deps{io: IO{In: strings.NewReader(""), Out: out, Err: errw}, env: os.Environ()}
	done := make(chan error, 1)
	go func() {
		done <- runLogs(ctx, d, &logsOptions{Repo: repo, Ref: "last", Follow: true, Interval: 5 * time.Millisecond})
	}()
	return done
}

// awaitOutput waits (up to 10 seconds) until out holds want.
func awaitOutput(t *testing.T, out *testenv.SyncBuffer, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), want) }, 10*time.Second, 5*time.Millisecond,
		"the output never held %q; it is:\n%s", want, out.String())
}

func toolEvent(tool, path string) observability.Event {
	return observability.Event{Time: time.Now(), Kind: observability.EventAgent, Role: observability.RoleCoder,
		Agent: &observability.Progress{Kind: observability.ProgressTool, Tool: tool, Input: json.RawMessage(`{"file_path":"` + path + `"}`)}}
}

// spawn logs -f prints what a live run does as it writes it, a line
// arriving in two writes included, and returns when the run finishes.
func TestLogsFollowsALiveRunUntilItFinishes(t *testing.T) {
	repo, run := liveRegistryRun(t,
		observability.Event{Kind: observability.EventPhase, Phase: observability.PhaseSandbox, Text: "/sb"},
		toolEvent("Read", "/sb/a.go"))
	var out, errw testenv.SyncBuffer
	done := followLogs(context.Background(), t, repo, &out, &errw)
	awaitOutput(t, &out, "tool:   Read a.go\n")

	line, err := json.Marshal(toolEvent("Edit", "/sb/b.go"))
	require.NoError(t, err)
	appendRaw(t, run.Paths, string(line[:10]))
	appendRaw(t, run.Paths, string(line[10:])+"\n")
	awaitOutput(t, &out, "tool:   Edit b.go\n")
	select {
	case err := <-done:
		t.Fatalf("logs -f returned before the run finished: %v", err)
	default:
	}

	appendEvents(t, run.Paths,
		observability.Event{Kind: observability.EventCommit, Commit: &observability.Commit{SHA: "0123456789abcdef", Message: "spawn: add it\n\nbody"}},
		observability.Event{Kind: observability.EventFinished, Outcome: &observability.Outcome{Status: observability.StatusSucceeded, Verdict: observability.VerdictNone}})
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f did not return when the run finished")
	}
	assert.Equal(t, "  coder    tool:   Read a.go\n  coder    tool:   Edit b.go\n"+
		"  spawn    commit: 0123456789ab spawn: add it\n  spawn    finished: succeeded, verdict none, exit 0\n", out.String())
	assert.Empty(t, errw.String())
}

// A run whose spawn dies writes no finished event: logs -f sees that the
// run is no longer live and returns, saying so.
func TestLogsFollowReturnsWhenTheRunsProcessDies(t *testing.T) {
	repo, run := liveRegistryRun(t, toolEvent("Read", "a.go"))
	var out, errw testenv.SyncBuffer
	done := followLogs(context.Background(), t, repo, &out, &errw)
	awaitOutput(t, &out, "Read a.go")
	require.NoError(t, run.Close()) // as the kernel does when the process dies
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f did not return when the run's process died")
	}
	assert.Contains(t, errw.String(), "stopped without finishing: its spawn process died")
}

// Ctrl-C stops following, not the run: no error (exit 0).
func TestLogsFollowStopsOnCtrlC(t *testing.T) {
	repo, _ := liveRegistryRun(t, toolEvent("Read", "a.go"))
	ctx, cancel := context.WithCancel(context.Background())
	var out, errw testenv.SyncBuffer
	done := followLogs(ctx, t, repo, &out, &errw)
	awaitOutput(t, &out, "Read a.go")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f did not return on Ctrl-C")
	}
}

// A line of the log that is not an event is named on stderr and skipped;
// the events around it are shown.
func TestLogsSkipsALineThatIsNotAnEvent(t *testing.T) {
	repo, run := liveRegistryRun(t, toolEvent("Read", "a.go"))
	appendRaw(t, run.Paths, "{not json\n")
	appendEvents(t, run.Paths, toolEvent("Edit", "b.go"))
	r := spawnMain(t, os.Environ(), "", "logs", "last", "--repo", repo)
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "  coder    tool:   Read a.go\n  coder    tool:   Edit b.go\n", r.stdout)
	assert.Contains(t, r.stderr, "spawn: warning: line 2 of ")
}

// spawn ps describes a live run from the end of its event stream.
func TestPsShowsALiveRunsPhaseTurnAndLastAction(t *testing.T) {
	repo, _ := liveRegistryRun(t,
		observability.Event{Kind: observability.EventPhase, Phase: observability.PhaseSandbox, Text: "/sb"},
		observability.Event{Kind: observability.EventPhase, Phase: observability.PhaseCoder, Round: 1},
		observability.Event{Time: time.Now(), Kind: observability.EventAgent, Role: observability.RoleCoder, RunCostUSD: 0.0042,
			Agent: &observability.Progress{Kind: observability.ProgressTool, Turns: 3, Tool: "Edit", Input: json.RawMessage(`{"file_path":"/sb/main.go"}`)}})
	r := spawnMain(t, os.Environ(), "", "ps", "--repo", repo)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `(?m)^ID +PID +PHASE +ROUND +TURN +COST +ELAPSED +LAST ACTION\n20261123-090000-aaaa +(\d+|-) +coder +1 +3 +\$0\.0042 +\d+s +Edit main.go$`, r.stdout)

	r = spawnMain(t, os.Environ(), "", "ps", "--json", "--repo", repo)
	require.Equal(t, 0, r.code, r.stderr)
	var got []psRun
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got, 1)
	assert.Equal(t, "coder", got[0].Phase)
	assert.Equal(t, 3, got[0].Turn)
	assert.Equal(t, "Edit main.go", got[0].LastAction)
	assert.Equal(t, os.Getpid(), got[0].PID)
	assert.Equal(t, "add a /healthz endpoint", got[0].Task)
}

// The last line of a log may lack its newline: a whole event is shown, a
// line still being written is not.
func TestLogsShowsALastEventWithoutItsNewline(t *testing.T) {
	repo, run := liveRegistryRun(t, toolEvent("Read", "a.go"))
	line, err := json.Marshal(toolEvent("Edit", "b.go"))
	require.NoError(t, err)
	appendRaw(t, run.Paths, string(line))
	r := spawnMain(t, os.Environ(), "", "logs", "last", "--repo", repo)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "  coder    tool:   Read a.go\n  coder    tool:   Edit b.go\n", r.stdout)

	appendRaw(t, run.Paths, "\n"+string(line[:20]))
	r = spawnMain(t, os.Environ(), "", "logs", "last", "--repo", repo)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "  coder    tool:   Read a.go\n  coder    tool:   Edit b.go\n", r.stdout)
	assert.Empty(t, r.stderr)
}

// A run whose record is gone is named, with where its files are; exit 1.
func TestShowOfARunWithoutARecordSaysWhereItsFilesAre(t *testing.T) {
	repo, run := liveRegistryRun(t)
	require.NoError(t, run.Close())
	require.NoError(t, os.Remove(run.RecordPath()))
	r := spawnMain(t, os.Environ(), "", "show", "last", "--repo", repo)
	assert.Equal(t, 1, r.code)
	assert.Regexp(t, `^spawn: run 20261123-090000-aaaa has no readable record \(.*\); its files are in .*/\.spawn/runs/20261123-090000-aaaa\n$`, r.stderr)

	r = spawnMain(t, os.Environ(), "", "ls", "--repo", repo)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `(?m)^20261123-090000-aaaa +- +- +broken +- +- +read record: .*$`, r.stdout)
}
