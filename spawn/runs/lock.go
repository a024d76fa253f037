package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Holder is what a lock file says about the process that took the lock.
// Only the kernel's lock says whether a run is live; Holder says who, for
// messages and for a caller that wants to signal the process (check Alive
// first: pids are reused).
type Holder struct {
	PID int `json:"pid"` // the holder's process id
	// StartTicks is the process's start time, field 22 of
	// /proc/<pid>/stat: clock ticks after boot. With PID it names one
	// process even after the pid is reused.
	StartTicks uint64    `json:"start_ticks"`
	Host       string    `json:"host"`  // os.Hostname of the holder
	Since      time.Time `json:"since"` // when the lock was taken, UTC
}

// String says who holds the lock, for messages.
func (h Holder) String() string {
	return fmt.Sprintf("pid %d on %s since %s", h.PID, h.Host, h.Since.Local().Format(time.DateTime))
}

// Alive reports whether the holder process still exists: same host, and a
// process with its pid that started at the same tick. A holder on another
// host is reported as not alive: this host cannot see it.
func (h Holder) Alive() (bool, error) {
	host, err := os.Hostname()
	if err != nil {
		return false, fmt.Errorf("holder alive: %w", err)
	}
	if h.Host != host || h.PID <= 0 {
		return false, nil
	}
	ticks, err := startTicks(h.PID)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("holder alive: %w", err)
	}
	return ticks == h.StartTicks, nil
}

// self returns this process as a Holder taking a lock now.
func self() (Holder, error) {
	pid := os.Getpid()
	ticks, err := startTicks(pid)
	if err != nil {
		return Holder{}, err
	}
	host, err := os.Hostname()
	if err != nil {
		return Holder{}, fmt.Errorf("hostname: %w", err)
	}
	return Holder{PID: pid, StartTicks: ticks, Host: host, Since: time.Now().UTC()}, nil
}

// startTicks reads a process's start time from /proc/<pid>/stat.
func startTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("process start time: %w", err)
	}
	// The command name, field 2, is in parentheses and may hold spaces and
	// parentheses itself; the fields after the last ')' start at field 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("process start time: /proc/%d/stat has no command name", pid)
	}
	fields := bytes.Fields(b[i+1:])
	const starttime = 22 - 3
	if len(fields) <= starttime {
		return 0, fmt.Errorf("process start time: /proc/%d/stat has %d fields", pid, len(fields)+2)
	}
	ticks, err := strconv.ParseUint(string(fields[starttime]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("process start time: /proc/%d/stat: %w", pid, err)
	}
	return ticks, nil
}

// readHolder reads the holder a lock file names; nil with no error when
// the file is absent or empty (nobody has held it, or its holder released
// it).
func readHolder(path string) (*Holder, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(bytes.TrimSpace(b)) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read lock holder: %w", err)
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("read lock holder %s: %w", path, err)
	}
	return &h, nil
}

// errHeld says that another open file holds an exclusive lock.
var errHeld = errors.New("lock held by another process")

// flock applies how (syscall.LOCK_*) to f. A non-blocking lock that
// conflicts fails with errHeld.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("flock %s: %w", f.Name(), err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("flock %s: %w", f.Name(), err)
	}
	if errors.Is(ferr, syscall.EWOULDBLOCK) {
		return errHeld
	}
	if ferr != nil {
		return fmt.Errorf("flock %s: %w", f.Name(), ferr)
	}
	return nil
}

// lockFile is an open lock file this process holds an exclusive flock on.
type lockFile struct {
	f    *os.File
	once sync.Once
	err  error
}

// release empties the lock file (its holder is gone) and closes it, which
// releases the lock. Later calls return the first call's error.
func (l *lockFile) release() error {
	l.once.Do(func() {
		l.err = errors.Join(l.f.Truncate(0), l.f.Close())
	})
	return l.err
}

// writeHolder replaces the lock file's content with this process.
func (l *lockFile) writeHolder() error {
	h, err := self()
	if err != nil {
		return err
	}
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode lock holder: %w", err)
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("write lock holder: %w", err)
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("write lock holder: %w", err)
	}
	return nil
}

// createLock makes a new lock file at path (failing if it exists) and
// takes it at once, then writes this process as its holder. In the
// instant between, an Acquire may take it first: createLock then fails
// with errHeld and leaves the file to that process.
func createLock(path string) (*lockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create lock: %w", err)
	}
	l := &lockFile{f: f}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if err := l.writeHolder(); err != nil {
		return nil, errors.Join(err, os.Remove(path), l.release())
	}
	return l, nil
}

// acquireLock takes the exclusive lock on the file at path, creating it
// if needed. It fails with errHeld when another process holds it, and with
// an error matching fs.ErrNotExist when the file was removed while it was
// being locked (its run directory was removed).
//
// Probes (see probe) take a shared lock for an instant, which also makes a
// non-blocking exclusive lock fail. So when the exclusive lock fails,
// acquireLock asks for a shared one: that fails only while some process
// holds the lock exclusively (errHeld at once); when it succeeds the
// conflict was a probe, and acquireLock tries again.
func acquireLock(path string) (_ *lockFile, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	l := &lockFile{f: f}
	defer func() {
		if err != nil {
			err = errors.Join(err, f.Close())
		}
	}()
	const attempts = 200
	for i := 0; ; i++ {
		err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, errHeld) {
			return nil, err
		}
		if err := flock(f, syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
			return nil, err // errHeld: an exclusive holder
		}
		if err := flock(f, syscall.LOCK_UN); err != nil {
			return nil, err
		}
		if i == attempts {
			return nil, fmt.Errorf("lock %s: still busy with other processes' probes after %d attempts", path, attempts)
		}
		time.Sleep(time.Duration(i+1) * 50 * time.Microsecond)
	}
	// A lock taken on a file that was unlinked meanwhile guards nothing.
	if err := sameFile(f, path); err != nil {
		return nil, err
	}
	if err := l.writeHolder(); err != nil {
		return nil, err
	}
	return l, nil
}

// sameFile checks that path still names the open file f.
func sameFile(f *os.File, path string) error {
	open, err := f.Stat()
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	named, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if !os.SameFile(open, named) {
		return fmt.Errorf("lock %s was replaced while it was being locked: %w", path, fs.ErrNotExist)
	}
	return nil
}

// probe reports whether some process holds the lock file at path, by
// taking a shared lock without blocking and releasing it at once. A
// missing file is not held. Probing creates nothing.
func probe(path string) (held bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("probe lock: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("probe lock: %w", cerr))
		}
	}()
	err = flock(f, syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, errHeld) {
		return true, nil
	}
	return false, err
}

// LockRepo takes the repository-wide lock, <spawnDir>/lock, which
// serialises sandbox creation between the spawn processes of one
// repository (and the goroutines of one: each call opens the file anew).
// It waits until the lock is free, polling with a short backoff, or until
// ctx is cancelled, when it returns ctx's error. unlock releases the lock;
// so does the death of the process. unlock is safe to call twice.
func (r *Registry) LockRepo(ctx context.Context) (unlock func() error, err error) {
	if err := os.MkdirAll(r.spawnDir, 0o755); err != nil {
		return nil, fmt.Errorf("repository lock: %w", err)
	}
	path := filepath.Join(r.spawnDir, repoLock)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("repository lock: %w", err)
	}
	const maxWait = 50 * time.Millisecond
	for wait := time.Millisecond; ; wait = min(2*wait, maxWait) {
		if ctx.Err() != nil {
			return nil, errors.Join(fmt.Errorf("waiting for the repository lock %s: %w", path, context.Cause(ctx)), f.Close())
		}
		err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, errHeld) {
			return nil, errors.Join(fmt.Errorf("repository lock: %w", err), f.Close())
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	var once sync.Once
	var closeErr error
	return func() error {
		once.Do(func() {
			if err := f.Close(); err != nil {
				closeErr = fmt.Errorf("release the repository lock: %w", err)
			}
		})
		return closeErr
	}, nil
}
