package watcher

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// An agent writes its stdout and stderr to regular files, never to pipes:
// gemini (node) exits before its pending pipe writes drain, and a stream
// longer than 128 KiB lost its tail, result event included. A write to a
// regular file is complete when the write call returns.

// outputFile is one private file an agent writes a stream to: w is the
// agent's end, r the watcher's, each with its own offset. The file has no
// name: it is removed as soon as both ends are open, so nothing is left on
// disk whatever happens to spawn, and its space is freed when both ends are
// closed.
type outputFile struct {
	w, r *os.File
}

// newOutputFile creates an output file in a fresh directory of the
// temporary directory that only this user can read (0700 directory, 0600
// file).
func newOutputFile(stream string) (_ *outputFile, err error) {
	dir, err := os.MkdirTemp("", "spawn-agent-")
	if err != nil {
		return nil, fmt.Errorf("agent %s file: %w", stream, err)
	}
	path := filepath.Join(dir, stream)
	// Removed whatever happens below: the open ends keep the file.
	defer func() {
		if rerr := errors.Join(os.Remove(path), os.Remove(dir)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("agent %s file: %w", stream, rerr))
		}
	}()
	// O_APPEND: a descendant that opens /proc/self/fd/1 anew still adds to
	// the end rather than writing over what is there.
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("agent %s file: %w", stream, err)
	}
	r, err := os.Open(path)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("agent %s file: %w", stream, err), w.Close())
	}
	return &outputFile{w: w, r: r}, nil
}

// closeWriter closes the watcher's copy of the agent's end, once the agent
// holds its own.
func (o *outputFile) closeWriter() error {
	if o.w == nil {
		return nil
	}
	err := o.w.Close()
	o.w = nil
	return err
}

// close closes both ends, which frees the file.
func (o *outputFile) close() error {
	return errors.Join(o.closeWriter(), o.r.Close())
}

// follow returns a reader of the file as it grows: at the end of what is
// written so far it waits for more, and it reports io.EOF only once exited
// is closed and everything written before is read. exited must be closed
// only when no process can write to the file any more. touch is called on
// every read that returns data.
func (o *outputFile) follow(exited <-chan struct{}, touch func()) io.Reader {
	return &follower{f: o.r, exited: exited, touch: touch}
}

// The follower looks for growth at intervals that start short after data
// and double while the file stays the same, up to followMax.
const (
	followMin = 2 * time.Millisecond
	followMax = 50 * time.Millisecond
)

type follower struct {
	f      *os.File
	exited <-chan struct{}
	touch  func()
	last   bool // exited was closed: the next end of file is the end
	wait   time.Duration
	timer  *time.Timer
}

func (r *follower) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := r.f.Read(b)
		if n > 0 {
			r.touch()
			r.wait = followMin
			return n, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if r.last {
			r.stopTimer()
			return 0, io.EOF
		}
		// At the end of the file for now: wait for more, or for the exit.
		r.wait = min(max(2*r.wait, followMin), followMax)
		if r.timer == nil {
			r.timer = time.NewTimer(r.wait)
		} else {
			r.timer.Reset(r.wait)
		}
		select {
		case <-r.exited:
			// Writes that returned before the exit are in the file: one
			// more pass reads them.
			r.last = true
		case <-r.timer.C:
		}
	}
}

func (r *follower) stopTimer() {
	if r.timer != nil {
		r.timer.Stop()
	}
}
