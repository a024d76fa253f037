package runs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// The test binary doubles as a second spawn process: with helperEnv set,
// TestMain runs a helper instead of the tests.
const (
	helperEnv    = "RUNS_TEST_HELPER" // "hold-run" or "hold-repo"
	helperDirEnv = "RUNS_TEST_SPAWN_DIR"
	helperIDEnv  = "RUNS_TEST_RUN_ID"
)

// TestMain also answers as spawn's git helper (sandbox.HelperArg), which Clean and
// Repair run on a run's worktree by re-executing this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperArg {
		proc.Exit(sandbox.Helper(os.Stdin, os.Stdout, os.Stderr))
	}
	proc.Main()
	mode := os.Getenv(helperEnv)
	if mode == "" {
		os.Exit(m.Run())
	}
	if err := helperMain(mode, Open(os.Getenv(helperDirEnv)), os.Getenv(helperIDEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helperMain takes a lock, says "ready" on stdout, and holds the lock
// until its stdin closes: hold-run creates run id with a record saying
// running; hold-repo takes the repository lock.
func helperMain(mode string, reg *Registry, id string) error {
	var release func() error
	switch mode {
	case "hold-run":
		run, err := reg.Create(id)
		if err != nil {
			return err
		}
		release = run.Close
		rec := observability.New(id, "a task held by a helper", observability.ModeSolo, time.Now())
		if err := observability.WriteFile(run.RecordPath(), rec, nil); err != nil {
			return errors.Join(err, release())
		}
	case "hold-repo":
		unlock, err := reg.LockRepo(context.Background())
		if err != nil {
			return err
		}
		release = unlock
	default:
		return fmt.Errorf("unknown helper mode %q", mode)
	}
	if _, err := fmt.Println("ready"); err != nil {
		return errors.Join(err, release())
	}
	_, err := io.Copy(io.Discard, os.Stdin)
	return errors.Join(err, release())
}

// helper is another process holding a lock (see helperMain).
type helper struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	done   bool
}

// startHelper starts a helper and returns once it holds its lock.
func startHelper(t *testing.T, mode, spawnDir, id string) *helper {
	t.Helper()
	h := &helper{cmd: exec.Command(os.Args[0])}
	h.cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDirEnv+"="+spawnDir, helperIDEnv+"="+id,
		"GORACE=atexit_sleep_ms=0") // a race-enabled binary otherwise idles a second before exiting
	h.cmd.Stderr = &h.stderr
	var err error
	h.stdin, err = h.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := h.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, h.cmd.Start())
	t.Cleanup(func() {
		if !h.done {
			h.kill(t)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		h.done = true
		waitErr := h.cmd.Wait()
		t.Fatalf("the helper did not get ready: read %q, %v; exit: %v; stderr: %s", line, err, waitErr, h.stderr.String())
	}
	return h
}

func (h *helper) pid() int { return h.cmd.Process.Pid }

// kill SIGKILLs the helper and waits for it to be gone.
func (h *helper) kill(t *testing.T) {
	t.Helper()
	h.done = true
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))
	err := h.cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stderr: %s", h.stderr.String())
	assert.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())
}

// finish lets the helper release its lock and exit, and waits for it.
func (h *helper) finish(t *testing.T) {
	t.Helper()
	h.done = true
	require.NoError(t, h.stdin.Close())
	require.NoError(t, h.cmd.Wait(), "stderr: %s", h.stderr.String())
}

// writeRecord writes a record for run id with status.
func writeRecord(t *testing.T, p Paths, task string, status observability.Status) *observability.Record {
	t.Helper()
	rec := observability.New(p.ID, task, observability.ModePingpong, time.Now())
	rec.Usage.CostUSD = 0.25
	rec.ReviewFeedback = []observability.ReviewFeedback{{Iteration: 1}, {Iteration: 2}}
	if status != observability.StatusRunning {
		rec.Finish(status, 0, time.Now())
	}
	require.NoError(t, observability.WriteFile(p.RecordPath(), rec, nil))
	return rec
}

func closeRun(t *testing.T, run *Run) {
	t.Helper()
	require.NoError(t, run.Close())
}

func states(entries []Entry) map[string]State {
	m := map[string]State{}
	for _, e := range entries {
		m[e.ID] = e.State
	}
	return m
}

func TestNewIDIsUTCSecondsAndSortsByTime(t *testing.T) {
	paris := time.FixedZone("CEST", 2*60*60)
	at := time.Date(2025, 6, 30, 23, 59, 58, 0, paris)
	id := NewID(at)
	assert.Regexp(t, regexp.MustCompile(`^20250630-215958-[0-9a-f]{4}$`), id)
	assert.Less(t, id, NewID(at.Add(time.Second)), "an id a second later sorts after")
	seen := map[string]bool{}
	for range 50 {
		seen[NewID(at)] = true
	}
	assert.Greater(t, len(seen), 40, "the suffix is random")
}

func TestTwoRunsAreListedNewestFirst(t *testing.T) {
	reg := Open(t.TempDir())
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

	older, err := reg.Create(NewID(t0))
	require.NoError(t, err)
	writeRecord(t, older.Paths, "the older task", observability.StatusSucceeded)
	closeRun(t, older)

	newer, err := reg.Create(NewID(t0.Add(time.Minute)))
	require.NoError(t, err)
	defer closeRun(t, newer)
	writeRecord(t, newer.Paths, "the newer task", observability.StatusRunning)

	entries, err := reg.List()
	require.NoError(t, err)
	require.Len(t, entries, 2)
	assert.Equal(t, newer.ID, entries[0].ID, "newest first")
	assert.Equal(t, older.ID, entries[1].ID)

	assert.Equal(t, StateRunning, entries[0].State, "this process holds the newer run")
	require.NotNil(t, entries[0].Holder)
	assert.Equal(t, os.Getpid(), entries[0].Holder.PID)
	assert.Equal(t, StateFinished, entries[1].State)
	assert.Nil(t, entries[1].Holder, "a finished run's lock is not read")

	s := entries[1].Summary
	require.NotNil(t, s, "%v", entries[1].Err)
	assert.Equal(t, "the older task", s.Task)
	assert.Equal(t, observability.StatusSucceeded, s.Status)
	assert.Equal(t, observability.ModePingpong, s.Mode)
	assert.Equal(t, 2, s.Rounds)
	assert.InDelta(t, 0.25, s.CostUSD, 1e-9)
	assert.NotNil(t, s.FinishedAt)
	assert.Equal(t, filepath.Join(reg.Dir(), older.ID), entries[1].Dir)
}

func TestRunWhoseProcessWasKilledIsAbandoned(t *testing.T) {
	spawnDir := t.TempDir()
	reg := Open(spawnDir)
	id := NewID(time.Now())
	h := startHelper(t, "hold-run", spawnDir, id)

	// While the helper lives, its run is running, and the lock names it.
	e, err := reg.Find(id)
	require.NoError(t, err)
	assert.Equal(t, StateRunning, e.State)
	require.NotNil(t, e.Holder)
	assert.Equal(t, h.pid(), e.Holder.PID)

	h.kill(t)

	// SIGKILL runs no cleanup: the record still says running, but the
	// kernel released the lock with the process.
	e, err = reg.Find(id)
	require.NoError(t, err)
	require.NotNil(t, e.Summary, "%v", e.Err)
	assert.Equal(t, observability.StatusRunning, e.Summary.Status)
	assert.Equal(t, StateAbandoned, e.State)
	require.NotNil(t, e.Holder, "the lock file still names the process that died")
	assert.Equal(t, h.pid(), e.Holder.PID)
	alive, err := e.Holder.Alive()
	require.NoError(t, err)
	assert.False(t, alive)

	entries, err := reg.List()
	require.NoError(t, err)
	assert.Equal(t, map[string]State{id: StateAbandoned}, states(entries))
}

func TestLiveRunCannotBeAcquiredUntilItsProcessLetsGo(t *testing.T) {
	spawnDir := t.TempDir()
	reg := Open(spawnDir)
	id := NewID(time.Now())
	h := startHelper(t, "hold-run", spawnDir, id)

	entries, err := reg.List()
	require.NoError(t, err)
	assert.Equal(t, map[string]State{id: StateRunning}, states(entries))

	// Another process holds the run: Acquire refuses and says who.
	_, err = reg.Acquire(id)
	require.ErrorIs(t, err, ErrLive)
	var live *LiveError
	require.ErrorAs(t, err, &live)
	require.NotNil(t, live.Holder)
	assert.Equal(t, h.pid(), live.Holder.PID)
	alive, aliveErr := live.Holder.Alive()
	require.NoError(t, aliveErr)
	assert.True(t, alive)
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(h.pid()))

	// The helper closes its run without finishing the record: abandoned,
	// and its lock file no longer names it.
	h.finish(t)
	e, err := reg.Find(id)
	require.NoError(t, err)
	assert.Equal(t, StateAbandoned, e.State)
	assert.Nil(t, e.Holder)

	// Repair: acquire, finish the record, close.
	run, err := reg.Acquire(id)
	require.NoError(t, err)
	e, err = reg.Find(id)
	require.NoError(t, err)
	assert.Equal(t, StateRunning, e.State, "the repairing process holds it now")
	require.NotNil(t, e.Holder)
	assert.Equal(t, os.Getpid(), e.Holder.PID)
	rec, err := run.ReadRecord()
	require.NoError(t, err)
	rec.Finish(observability.StatusInterrupted, 1, time.Now())
	require.NoError(t, observability.WriteFile(run.RecordPath(), rec, nil))
	closeRun(t, run)

	e, err = reg.Find(id)
	require.NoError(t, err)
	assert.Equal(t, StateFinished, e.State)
	assert.Equal(t, observability.StatusInterrupted, e.Summary.Status)
}

func TestFindByIDPrefixAndLast(t *testing.T) {
	reg := Open(t.TempDir())
	ids := []string{
		"20250101-090000-aaaa",
		"20250101-090000-aaab",
		"20250102-100000-beef",
	}
	for i := range 7 {
		ids = append(ids, fmt.Sprintf("20240505-00000%d-cafe", i))
	}
	for _, id := range ids {
		run, err := reg.Create(id)
		require.NoError(t, err)
		writeRecord(t, run.Paths, "task "+id, observability.StatusFailed)
		closeRun(t, run)
	}

	for _, tc := range []struct {
		ref, want string
	}{
		{"20250101-090000-aaab", "20250101-090000-aaab"},
		{"20250102", "20250102-100000-beef"},
		{"20250101-090000-aaaa", "20250101-090000-aaaa"},
		{Last, "20250102-100000-beef"},
	} {
		e, err := reg.Find(tc.ref)
		if assert.NoError(t, err, tc.ref) {
			assert.Equal(t, tc.want, e.ID, tc.ref)
			assert.Equal(t, StateFinished, e.State, tc.ref)
			assert.Equal(t, "task "+tc.want, e.Summary.Task, tc.ref)
		}
	}

	_, err := reg.Find("20250101-0900")
	require.ErrorIs(t, err, ErrAmbiguous)
	var ref *RefError
	require.ErrorAs(t, err, &ref)
	assert.Equal(t, []string{"20250101-090000-aaab", "20250101-090000-aaaa"}, ref.Candidates, "newest first")
	assert.Equal(t, `"20250101-0900" matches 2 runs (20250101-090000-aaab, 20250101-090000-aaaa); give more of the id`, err.Error())

	_, err = reg.Find("2024")
	require.ErrorIs(t, err, ErrAmbiguous)
	require.ErrorAs(t, err, &ref)
	assert.Len(t, ref.Candidates, 5, "at most five are named")
	assert.Equal(t, 7, ref.Matches)
	assert.Contains(t, err.Error(), "and 2 more")

	for _, unknown := range []string{"2023", "20250101-090000-aaaaa", "", "../runs"} {
		_, err = reg.Find(unknown)
		require.ErrorIs(t, err, ErrNotFound, "%q", unknown)
		assert.NotErrorIs(t, err, ErrAmbiguous)
		assert.Equal(t, fmt.Sprintf("no run matches %q; `spawn ls` lists the runs", unknown), err.Error())
	}
}

func TestFindInAnEmptyRegistry(t *testing.T) {
	noSpawnDir := Open(filepath.Join(t.TempDir(), ".spawn"))
	emptyRuns := Open(t.TempDir())
	require.NoError(t, emptyRuns.Check())
	for name, reg := range map[string]*Registry{"no .spawn at all": noSpawnDir, "an empty runs/": emptyRuns} {
		entries, err := reg.List()
		require.NoError(t, err, name)
		assert.Empty(t, entries, name)
		for _, ref := range []string{Last, "2025"} {
			_, err = reg.Find(ref)
			assert.ErrorIs(t, err, ErrNotFound, "%s: %s", name, ref)
		}
	}
	assert.NoDirExists(t, noSpawnDir.Dir(), "listing creates nothing")
}

func TestRunFilesHaveOneName(t *testing.T) {
	reg := Open(t.TempDir())
	run, err := reg.Create("20250101-000000-0000")
	require.NoError(t, err)
	defer closeRun(t, run)

	dir := filepath.Join(reg.Dir(), "20250101-000000-0000")
	assert.Equal(t, dir, run.Dir)
	assert.Equal(t, filepath.Join(dir, "record.json"), run.RecordPath())
	assert.Equal(t, filepath.Join(dir, "events.ndjson"), run.EventsPath())
	assert.Equal(t, filepath.Join(dir, "inbox"), run.InboxDir())
	stdout, stderr := run.Transcript(3, observability.RoleReviewer)
	assert.Equal(t, filepath.Join(dir, "3-reviewer.stdout.jsonl"), stdout)
	assert.Equal(t, filepath.Join(dir, "3-reviewer.stderr.log"), stderr)
	stdout, stderr = Paths{}.Transcript(1, observability.RoleCoder)
	assert.Equal(t, "1-coder.stdout.jsonl", stdout, "relative, as the record keeps it")
	assert.Equal(t, "1-coder.stderr.log", stderr)
}

func TestLockFileNamesItsHolder(t *testing.T) {
	reg := Open(t.TempDir())
	before := time.Now().Add(-time.Second)
	run, err := reg.Create(NewID(time.Now()))
	require.NoError(t, err)

	b, err := os.ReadFile(filepath.Join(run.Dir, "lock"))
	require.NoError(t, err)
	var h Holder
	require.NoError(t, json.Unmarshal(b, &h), "%s", b)
	assert.Equal(t, os.Getpid(), h.PID)
	ticks, err := startTicks(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, ticks, h.StartTicks)
	assert.NotZero(t, h.StartTicks)
	host, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, host, h.Host)
	assert.WithinRange(t, h.Since, before, time.Now())

	// Nothing but the lock is in the new run: no temporary file is left.
	names, err := os.ReadDir(run.Dir)
	require.NoError(t, err)
	require.Len(t, names, 1)
	assert.Equal(t, "lock", names[0].Name())

	// Close empties it: nobody holds it any more.
	closeRun(t, run)
	require.NoError(t, run.Close(), "closing twice is harmless")
	b, err = os.ReadFile(filepath.Join(run.Dir, "lock"))
	require.NoError(t, err)
	assert.Empty(t, b)
}

func TestLockIsNotInheritedByChildProcesses(t *testing.T) {
	spawnDir := t.TempDir()
	reg := Open(spawnDir)
	run, err := reg.Create(NewID(time.Now()))
	require.NoError(t, err)
	defer closeRun(t, run)
	unlock, err := reg.LockRepo(context.Background())
	require.NoError(t, err)
	defer func() { require.NoError(t, unlock()) }()
	runLock, repoLock := filepath.Join(run.Dir, "lock"), filepath.Join(spawnDir, "lock")

	// This process has both locks open...
	mine, err := exec.Command("ls", "-l", "/proc/"+strconv.Itoa(os.Getpid())+"/fd").Output()
	require.NoError(t, err)
	require.Contains(t, string(mine), runLock)
	require.Contains(t, string(mine), repoLock)

	// ...and a child it starts has neither.
	out, err := exec.Command("sh", "-c", "ls -l /proc/self/fd").Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), "0 ->", "the listing shows descriptors")
	assert.NotContains(t, string(out), runLock)
	assert.NotContains(t, string(out), repoLock)
}

func TestCheckSaysWhenTheRegistryCannotBeWritten(t *testing.T) {
	// Tests run as root, whom permission bits do not stop. A path that
	// goes through a regular file cannot be created by anyone: ENOTDIR.
	dir := t.TempDir()
	file := filepath.Join(dir, "not-a-dir")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))

	err := Open(file).Check()
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ENOTDIR)
	assert.Contains(t, err.Error(), "the run registry "+filepath.Join(file, "runs")+" cannot be created")

	// runs/ itself is a file.
	spawnDir := filepath.Join(dir, "spawn")
	require.NoError(t, os.MkdirAll(spawnDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(spawnDir, "runs"), nil, 0o644))
	err = Open(spawnDir).Check()
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(spawnDir, "runs"))

	// A good registry: Check creates runs/ and leaves it empty.
	good := Open(filepath.Join(dir, "repo", ".spawn"))
	require.NoError(t, good.Check())
	names, err := os.ReadDir(good.Dir())
	require.NoError(t, err)
	assert.Empty(t, names)
}

func TestCreateRefusesAnExistingOrOddID(t *testing.T) {
	reg := Open(t.TempDir())
	id := NewID(time.Now())
	run, err := reg.Create(id)
	require.NoError(t, err)
	defer closeRun(t, run)

	_, err = reg.Create(id)
	require.ErrorIs(t, err, fs.ErrExist)

	for _, odd := range []string{"", ".hidden", "../escape", "a/b"} {
		_, err := reg.Create(odd)
		assert.Error(t, err, "%q", odd)
		_, err = reg.Acquire(odd)
		assert.Error(t, err, "%q", odd)
	}
	names, err := os.ReadDir(reg.Dir())
	require.NoError(t, err)
	require.Len(t, names, 1, "nothing but the first run was created")
	assert.NoDirExists(t, filepath.Join(reg.Dir(), "..", "escape"))

	entries, err := reg.List()
	require.NoError(t, err)
	assert.Equal(t, map[string]State{id: StateRunning}, states(entries), "a live run with no record yet is running")
	assert.Nil(t, entries[0].Summary)
	assert.ErrorIs(t, entries[0].Err, fs.ErrNotExist)
}

func TestRunsThatCannotBeReadAreBroken(t *testing.T) {
	reg := Open(t.TempDir())
	write := func(id, record string) {
		dir := filepath.Join(reg.Dir(), id)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		if record != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "record.json"), []byte(record), 0o644))
		}
	}
	write("20250101-000000-0001", "")                     // no record
	write("20250101-000000-0002", `{"status": "runn`)     // truncated
	write("20250101-000000-0003", `{"id": "x"}`)          // no status
	write("20250101-000000-0004", `[1, 2, 3]`)            // not a record
	write("20250101-000000-0005", `{"status": "failed"}`) // minimal, finished
	require.NoError(t, os.WriteFile(filepath.Join(reg.Dir(), "20250101-000000-0006"), nil, 0o644))
	write(".tmp", "") // the registry's own, not a run

	entries, err := reg.List()
	require.NoError(t, err)
	assert.Equal(t, map[string]State{
		"20250101-000000-0001": StateBroken,
		"20250101-000000-0002": StateBroken,
		"20250101-000000-0003": StateBroken,
		"20250101-000000-0004": StateBroken,
		"20250101-000000-0005": StateFinished,
	}, states(entries), "a plain file and a hidden directory are not runs")
	for _, e := range entries {
		if e.State == StateBroken {
			assert.Error(t, e.Err, e.ID)
			assert.Nil(t, e.Summary, e.ID)
		}
	}
	assert.ErrorIs(t, entries[4].Err, fs.ErrNotExist, "the missing record says so")
}

func TestRemovedRunIsGone(t *testing.T) {
	reg := Open(t.TempDir())
	id := NewID(time.Now())
	run, err := reg.Create(id)
	require.NoError(t, err)
	writeRecord(t, run.Paths, "doomed", observability.StatusFailed)
	closeRun(t, run)

	run, err = reg.Acquire(id)
	require.NoError(t, err)
	require.NoError(t, run.Remove())
	assert.NoDirExists(t, run.Dir)

	_, err = reg.Find(id)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = reg.Acquire(id)
	assert.ErrorIs(t, err, ErrNotFound)
}

// Listing probes locks for an instant. An Acquire that meets a probe must
// wait it out, not report the run as live, and a probe that meets another
// must not take it for a live process.
func TestListingNeverMakesARunLookLive(t *testing.T) {
	reg := Open(t.TempDir())
	t0 := time.Now()
	id, abandoned := NewID(t0), NewID(t0.Add(-time.Hour))
	for _, id := range []string{id, abandoned} {
		run, err := reg.Create(id)
		require.NoError(t, err)
		writeRecord(t, run.Paths, "probed", observability.StatusRunning)
		closeRun(t, run)
	}

	stop := make(chan struct{})
	var listed atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				entries, err := reg.List()
				if err != nil {
					t.Error(err)
					return
				}
				if got := states(entries)[abandoned]; got != StateAbandoned {
					t.Errorf("a run nobody holds was listed %s", got)
					return
				}
				listed.Add(1)
			}
		})
	}
	var once sync.Once
	stopListing := func() { once.Do(func() { close(stop); wg.Wait() }) }
	t.Cleanup(stopListing) // also when a require below ends the test

	for range 200 {
		run, err := reg.Acquire(id)
		require.NoError(t, err)
		closeRun(t, run)
	}
	stopListing()
	assert.Positive(t, listed.Load())
}

func TestRepoLockSerialisesGoroutines(t *testing.T) {
	reg := Open(t.TempDir())
	counter := filepath.Join(t.TempDir(), "counter")
	require.NoError(t, os.WriteFile(counter, []byte("0"), 0o644))
	var inside atomic.Int32
	var wg sync.WaitGroup
	const workers, rounds = 4, 25
	for range workers {
		wg.Go(func() {
			for range rounds {
				unlock, err := reg.LockRepo(context.Background())
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, int32(1), inside.Add(1), "one holder at a time")
				// A read-modify-write that loses updates unless serialised.
				b, err := os.ReadFile(counter)
				assert.NoError(t, err)
				n, err := strconv.Atoi(string(b))
				assert.NoError(t, err)
				assert.NoError(t, os.WriteFile(counter, []byte(strconv.Itoa(n+1)), 0o644))
				inside.Add(-1)
				assert.NoError(t, unlock())
				assert.NoError(t, unlock(), "unlocking twice is harmless")
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(counter)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(workers*rounds), string(b))
}

func TestRepoLockWaitsForAnotherProcess(t *testing.T) {
	spawnDir := t.TempDir()
	reg := Open(spawnDir)
	h := startHelper(t, "hold-repo", spawnDir, "")

	// While the helper holds it, LockRepo waits until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := reg.LockRepo(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "waiting for the repository lock")

	// A waiter gets the lock once the helper lets go.
	got := make(chan error, 1)
	go func() {
		unlock, err := reg.LockRepo(context.Background())
		if err == nil {
			err = unlock()
		}
		got <- err
	}()
	h.finish(t)
	require.NoError(t, <-got)
}

func TestRepoLockWaitEndsWhenCancelled(t *testing.T) {
	reg := Open(t.TempDir())
	unlock, err := reg.LockRepo(context.Background())
	require.NoError(t, err)
	defer func() { require.NoError(t, unlock()) }()

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := reg.LockRepo(ctx)
		got <- err
	}()
	cancel()
	assert.ErrorIs(t, <-got, context.Canceled)
}

func TestTruncatedRecordIsAnErrorNotAPanic(t *testing.T) {
	rec := observability.New("20250203-040506-abcd", `a "task"`, observability.ModePingpong, time.Now())
	rec.ReviewFeedback = []observability.ReviewFeedback{{Iteration: 1, RawResponse: `{"x": "]}\""}`,
		Findings: []observability.Finding{{ID: "f1", Title: "t"}}}}
	rec.Error = &observability.Error{Kind: "k", Message: "m"}
	rec.Finish(observability.StatusFailed, 1, time.Now())
	b, err := observability.Encode(rec, nil)
	require.NoError(t, err)
	// Every cut of the record before its last brace is an error.
	end := bytes.LastIndexByte(b, '}')
	for i := range end {
		_, err := decodeSummary(b[:i])
		if !assert.Error(t, err, "truncated at %d of %d", i, len(b)) {
			return
		}
	}
	for _, garbage := range []string{`{"a" 1}`, `{"a":}`, `{"a":1,}`, `{"a":[1,}`, `{"a":{]}`, `{"a":1} x`, `{1:2}`, `{"a":"b"`} {
		_, err := decodeSummary([]byte(garbage))
		assert.Error(t, err, garbage)
	}
}
