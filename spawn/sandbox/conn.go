package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// helperConn is a git helper kept running for a sandbox: started once in
// its jail, it answers the sandbox's requests one after the other until
// spawn closes its stdin. Everything it sends comes from the coder's side
// of the sandbox and is read as untrusted: bounded lines, bounded frames,
// object names checked.
type helperConn struct {
	worktree string
	p        *proc.Process
	requests *os.File      // the helper's stdin
	out      *os.File      // its stdout
	answers  *bufio.Reader // out, buffered
	stderr   *tail
}

// startHelper starts the helper in worktree through jail.
func startHelper(jail Jail, exe, worktree string) (*helperConn, error) {
	h := &helperConn{worktree: worktree, stderr: &tail{}}
	p, err := proc.StartPiped(jail.Confine(proc.Cmd{Path: exe, Args: []string{HelperArg}, Dir: worktree, Stderr: h.stderr}))
	if err != nil {
		return nil, fmt.Errorf("start spawn's git helper in %s: %w", worktree, err)
	}
	h.p, h.requests, h.out, h.answers = p.Process, p.In, p.Out, bufio.NewReaderSize(p.Out, 64<<10)
	return h, nil
}

// brokenError is a helper that can no longer be asked: it died, it broke
// the protocol, or ctx ended while it worked. unasked says the request
// never reached it (it was gone before), so a new helper may be asked.
type brokenError struct {
	err     error
	unasked bool
}

func (e *brokenError) Error() string { return e.err.Error() }

func (e *brokenError) Unwrap() error { return e.err }

// ask sends req and reads the answer; a pack the answer carries is
// written to packOut. Cancelling ctx kills the helper.
func (h *helperConn) ask(ctx context.Context, req helperRequest, packOut io.Writer) (helperAnswer, error) {
	stop := context.AfterFunc(ctx, h.kill)
	defer stop()
	var ans helperAnswer
	broken := func(unasked bool, format string, args ...any) (helperAnswer, error) {
		err := fmt.Errorf("spawn's git helper in %s "+format, append([]any{h.worktree}, args...)...)
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
		} else if msg := h.stderr.String(); msg != "" {
			err = fmt.Errorf("%w (it said: %s)", err, msg)
		}
		return ans, &brokenError{err: err, unasked: unasked}
	}
	line, err := json.Marshal(req)
	if err != nil {
		return ans, err
	}
	if _, err := h.requests.Write(append(line, '\n')); err != nil {
		return broken(true, "cannot be asked: %w", err)
	}
	header, err := readLine(h.answers, maxHeader)
	if err != nil {
		return broken(errors.Is(err, io.EOF) && len(header) == 0, "gave no answer: %w", err)
	}
	if err := json.Unmarshal(header, &ans); err != nil {
		return broken(false, "gave an answer that is not JSON: %w", err)
	}
	if ans.Pack {
		if packOut == nil {
			return broken(false, "sent a pack nobody asked for")
		}
		if err := readFrames(h.answers, packOut); err != nil {
			return broken(false, "sent a pack that could not be read: %w", err)
		}
		end, err := readLine(h.answers, maxHeader)
		var pe packEnd
		if err != nil || json.Unmarshal(end, &pe) != nil {
			return broken(false, "did not end its pack: %v", err)
		}
		if pe.Error != "" {
			return ans, errors.New(pe.Error)
		}
	}
	if ans.Error != "" {
		return ans, errors.New(ans.Error)
	}
	if ans.Tip != "" && !git.IsOID(ans.Tip) || ans.Committed != "" && !git.IsOID(ans.Committed) {
		return ans, fmt.Errorf("spawn's git helper in %s named %q, which is not a commit", h.worktree, ans.Tip)
	}
	return ans, nil
}

// maxHeader bounds the helper's answer line.
const maxHeader = 4 << 20

// readLine reads one line of at most limit bytes, without its newline.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit {
			return nil, errors.New("the line is too long")
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return line, err
		}
	}
}

// readFrames copies a pack's frames (see frameWriter) to w, up to the
// frame that ends it.
func readFrames(r io.Reader, w io.Writer) error {
	var size [4]byte
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(size[:])
		if n == 0 {
			return nil
		}
		if n > maxFrame {
			return fmt.Errorf("a frame of %d bytes, more than %d", n, maxFrame)
		}
		if _, err := io.CopyN(w, r, int64(n)); err != nil {
			return err
		}
	}
}

// close ends the helper: its stdin closes, and it exits once it read the
// end; one that does not within helperExit is killed.
func (h *helperConn) close() error {
	err := h.requests.Close()
	select {
	case <-h.p.Done():
	case <-time.After(helperExit):
		h.p.Kill()
	}
	_, werr := h.p.Wait()
	return errors.Join(err, werr, h.out.Close())
}

// helperExit is how long an idle helper may take to exit once its stdin
// closed.
const helperExit = 5 * time.Second

// kill stops the helper at once (ctx ended mid-answer): it cannot be
// asked again, and drop releases it.
func (h *helperConn) kill() {
	h.p.Kill()
}

// drop kills the helper and releases its pipes, once it broke.
func (h *helperConn) drop() error {
	h.p.Kill()
	<-h.p.Done() // its exit status says nothing more than what broke it
	return errors.Join(h.requests.Close(), h.out.Close())
}

// tail keeps the last tailSize bytes written to it: the helper's stderr,
// which lives as long as a run.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailSize = 4 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if over := len(t.b) - tailSize; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
