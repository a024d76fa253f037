// Package runs is spawn's run registry and a repository's runs as the
// lifecycle commands (ls, show, ps, logs, diff, clean, send, stop, resume)
// see them.
//
// The registry (Registry, Run, Entry) owns <repo>/.spawn/runs/<id>/ and
// nothing else: the layout of a run directory, the live lock that says a
// process is still working on a run, listing runs and finding one by id,
// id prefix or "last". It creates no worktree or branch and commits
// nothing.
//
// A Repo (OpenRepo) is the repository around it: it repairs the runs
// whose spawn died (their work committed through the sandbox's git
// helper, their record finished as interrupted), cleans runs' worktrees
// and branches, sends messages to a live run's coder, and stops one. Its
// errors are *fault.Error, whose kind decides spawn's exit code. Running a
// run is package spawn's; nothing here starts an agent.
//
// A run directory holds:
//
//	lock                         the live lock (see Create)
//	record.json                  the run's observability.Record
//	events.ndjson                the run's event stream
//	<n>-<role>.stdout.jsonl      transcripts of the n-th agent process
//	<n>-<role>.stderr.log
//	inbox/                       messages for the running agent
//	coder-sessions/              the coder's claude sessions, kept for spawn resume
//
// A name starting with "." is a temporary file (a record being written,
// Check's probe), never a run.
package runs

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/inbox"
)

// File and directory names inside the registry.
const (
	runsName    = "runs"
	lockName    = "lock"
	recordName  = "record.json"
	eventsName  = "events.ndjson"
	inboxName   = "inbox"
	repoLock    = "lock" // in the spawn directory, beside runs/
	idTimestamp = "20060102-150405"
)

// NewID returns a new run id, YYYYMMDD-HHMMSS-xxxx: now in UTC to the
// second and four random hex digits. Ids sort by the time they name; two
// ids of the same second collide once in 65,536, which Create reports as
// fs.ErrExist (take a new id and try again).
func NewID(now time.Time) string {
	return fmt.Sprintf("%s-%04x", now.UTC().Format(idTimestamp), rand.N(0x10000))
}

// Registry is the run registry of one repository. Its methods are safe for
// concurrent use, by goroutines and by processes.
type Registry struct {
	spawnDir string
}

// Open returns the registry kept in spawnDir (<repo>/.spawn). It touches
// nothing on disk: a registry whose directory does not exist yet is empty,
// and Check or Create creates it.
func Open(spawnDir string) *Registry {
	return &Registry{spawnDir: spawnDir}
}

// Dir returns the registry's directory, <spawnDir>/runs.
func (r *Registry) Dir() string {
	return filepath.Join(r.spawnDir, runsName)
}

// Check verifies that the registry directory can be created and written,
// and that it supports the locks runs depend on, so that a caller can
// refuse a run before it creates anything else. It creates the directory
// (and its parents) if needed and leaves nothing else behind.
func (r *Registry) Check() (err error) {
	dir := r.Dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("the run registry %s cannot be created: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".check-*")
	if err != nil {
		return fmt.Errorf("the run registry %s is not writable: %w", dir, err)
	}
	defer func() {
		if rmErr := os.Remove(f.Name()); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("the run registry %s: %w", dir, rmErr))
		}
	}()
	_, werr := f.WriteString("spawn\n")
	if werr == nil {
		werr = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if werr = errors.Join(werr, f.Close()); werr != nil {
		return fmt.Errorf("the run registry %s is not writable: %w", dir, werr)
	}
	return nil
}

// Paths names the files of one run directory. Run and Entry embed it.
type Paths struct {
	// ID is the run's id, the name of its directory.
	ID string
	// Dir is the run's directory, <spawnDir>/runs/<id>.
	Dir string
}

// RecordPath returns the path of the run's record.json. Whoever holds the
// run's live lock writes it, with observability.WriteFile.
func (p Paths) RecordPath() string { return filepath.Join(p.Dir, recordName) }

// EventsPath returns the path of the run's events.ndjson.
func (p Paths) EventsPath() string { return filepath.Join(p.Dir, eventsName) }

// Transcript returns the paths of the transcripts of the run's n-th agent
// process (counted from 1 over the whole run) in role:
// <n>-<role>.stdout.jsonl and <n>-<role>.stderr.log. Paths{}.Transcript
// gives the names relative to the run directory, as the record keeps them.
func (p Paths) Transcript(n int, role observability.Role) (stdout, stderr string) {
	base := filepath.Join(p.Dir, fmt.Sprintf("%d-%s", n, role))
	return base + ".stdout.jsonl", base + ".stderr.log"
}

// InboxDir returns the directory of the run's message inbox. The registry
// does not create it.
func (p Paths) InboxDir() string { return filepath.Join(p.Dir, inboxName) }

// Inbox returns the run's inbox.
func (p Paths) Inbox() *inbox.Inbox { return inbox.New(p.InboxDir()) }

func (p Paths) lockPath() string { return filepath.Join(p.Dir, lockName) }

func (r *Registry) paths(id string) Paths {
	return Paths{ID: id, Dir: filepath.Join(r.Dir(), id)}
}

// validID rejects ids that are not one visible name in the registry
// directory, so that no id reaches outside it.
func validID(id string) error {
	if id == "" || strings.HasPrefix(id, ".") || strings.ContainsAny(id, `/\`+"\x00") {
		return fmt.Errorf("%q is not a run id", id)
	}
	return nil
}

// Run is a run whose live lock this process holds. Whoever holds a Run is
// the only writer of the run's record and events; the lock says so to
// every other spawn process (List reports the run as running, Acquire
// fails with ErrLive) until Close, or until this process dies, whatever
// the way: the kernel releases the lock with the last open descriptor.
// The lock's descriptor is close-on-exec: child processes do not inherit
// it, so an agent that outlives spawn does not keep a run alive.
type Run struct {
	Paths
	lock *lockFile
}

// Create makes the directory of a new run, runs/<id>/, and takes its live
// lock. It fails with an error matching fs.ErrExist when the directory
// exists (take a new id). For the microseconds before the lock is taken,
// List reports the new run as broken, and an Acquire can take the lock
// first: Create then fails and leaves the run to that process. On any
// other failure Create removes what it made.
func (r *Registry) Create(id string) (_ *Run, err error) {
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	p := r.paths(id)
	if err := os.MkdirAll(r.Dir(), 0o755); err != nil {
		return nil, fmt.Errorf("create run %s: %w", id, err)
	}
	if err := os.Mkdir(p.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run %s: %w", id, err)
	}
	defer func() {
		// Remove, not RemoveAll: a process that acquired the new run
		// meanwhile keeps its lock file, and the directory stays.
		if err != nil {
			if rmErr := os.Remove(p.Dir); rmErr != nil {
				err = errors.Join(err, fmt.Errorf("remove the half-created run %s: %w", id, rmErr))
			}
		}
	}()
	l, err := createLock(p.lockPath())
	if err != nil {
		return nil, fmt.Errorf("create run %s: %w", id, err)
	}
	return &Run{Paths: p, lock: l}, nil
}

// Acquire takes the live lock of an existing run, to resume it or to
// repair it when it was abandoned. It fails with an error matching
// ErrLive (a *LiveError naming the holder) when another process holds the
// lock, and with ErrNotFound when the run does not exist. The holder
// written in the lock file becomes this process.
func (r *Registry) Acquire(id string) (*Run, error) {
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("acquire run: %w", err)
	}
	p := r.paths(id)
	if _, err := os.Stat(p.Dir); errors.Is(err, fs.ErrNotExist) {
		return nil, &RefError{Ref: id, Err: ErrNotFound}
	} else if err != nil {
		return nil, fmt.Errorf("acquire run %s: %w", id, err)
	}
	l, err := acquireLock(p.lockPath())
	switch {
	case errors.Is(err, errHeld):
		h, _ := readHolder(p.lockPath()) // the holder is a courtesy: nil when unreadable
		return nil, &LiveError{ID: id, Holder: h}
	case errors.Is(err, fs.ErrNotExist):
		return nil, &RefError{Ref: id, Err: ErrNotFound}
	case err != nil:
		return nil, fmt.Errorf("acquire run %s: %w", id, err)
	}
	return &Run{Paths: p, lock: l}, nil
}

// Close releases the run's live lock, leaving the lock file empty. The run
// directory stays. Close is safe to call more than once; later calls
// return what the first returned.
func (r *Run) Close() error {
	if err := r.lock.release(); err != nil {
		return fmt.Errorf("release run %s: %w", r.ID, err)
	}
	return nil
}

// Remove deletes the run's directory and everything in it, then releases
// the lock. Holding the lock while removing keeps a live run from being
// removed under its process (take it with Acquire first). A run removed
// is gone for every later Find, List and Acquire.
func (r *Run) Remove() error {
	err := os.RemoveAll(r.Dir)
	if err != nil {
		err = fmt.Errorf("remove run %s: %w", r.ID, err)
	}
	return errors.Join(err, r.Close())
}
