package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// RefUpdates moves refs of a repository, each update a compare-and-swap
// of its own, through one `git update-ref --stdin` kept running: a
// transaction costs it well under a millisecond, where a git process costs
// several. It starts at the first Update. A transaction git
// refuses ends the process (git says why, and exits); the next Update
// starts another. Every update's reflog message is Msg. Not safe for
// concurrent use; Close ends the process.
type RefUpdates struct {
	Repo Repo
	Msg  string

	p      *proc.Piped
	answer *bufio.Reader // p.Out, buffered
	stderr *bytes.Buffer // read once the process has exited
}

// Update moves ref (a full name, "refs/heads/...") to newOID if, and only
// if, it is at oldOID now (ZeroOID: it does not exist), in one atomic
// compare-and-swap, never through a symbolic ref. git checks that newOID
// names an object the repository has (a commit, for a branch). A ref that
// moved meanwhile is ErrStale. Cancelling ctx kills the process.
func (u *RefUpdates) Update(ctx context.Context, ref, newOID, oldOID string) error {
	if !IsOID(newOID) || !IsOID(oldOID) {
		return fmt.Errorf("update %s: %q or %q is not an object name", ref, newOID, oldOID)
	}
	if !strings.HasPrefix(ref, "refs/") || strings.ContainsAny(ref, " \t\r\n\x00") {
		return fmt.Errorf("update %q: not a full ref name", ref)
	}
	defer proc.Waited(ctx, "git update-ref", time.Now())
	if u.p != nil && exited(u.p.Process) {
		// It died between two updates (killed): nothing was asked of it.
		if _, _, err := u.end(false); err != nil {
			return fmt.Errorf("update %s: release the git update-ref that died: %w", ref, err)
		}
	}
	if u.p == nil {
		if err := u.start(); err != nil {
			return fmt.Errorf("update %s: %w", ref, err)
		}
	}
	stop := context.AfterFunc(ctx, u.p.Kill)
	defer stop()
	_, err := fmt.Fprintf(u.p.In, "start\nupdate %s %s %s\nprepare\ncommit\n", ref, newOID, oldOID)
	for _, want := range []string{"start: ok\n", "prepare: ok\n", "commit: ok\n"} {
		if err != nil {
			break
		}
		var line string
		if line, err = u.answer.ReadString('\n'); err == nil && line != want {
			err = fmt.Errorf("git update-ref answered %q, not %q", line, want)
		}
	}
	if err == nil {
		return nil
	}
	// The process is done for: git refused the update and exited, or it
	// broke the protocol, or ctx ended.
	stderr, code, released := u.end(true)
	if ctx.Err() != nil {
		return errors.Join(fmt.Errorf("update %s: %w", ref, ctx.Err()), released)
	}
	if stderr != "" {
		err = &proc.ExitError{Argv: updateRefArgv, Code: code, Stderr: stderr}
	}
	return errors.Join(refError(ref, oldOID, u.Repo.ObjectFormat, err), released)
}

// exited says p has exited.
func exited(p *proc.Process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// start starts the process.
func (u *RefUpdates) start() error {
	u.stderr = &bytes.Buffer{}
	c := u.Repo.cmd("update-ref", "--no-deref", "-m", u.Msg, "--stdin")
	c.Stderr = u.stderr
	p, err := proc.StartPiped(c)
	if err != nil {
		return err
	}
	u.p, u.answer = p, bufio.NewReader(p.Out)
	return nil
}

// end ends the process (killed when kill is set; else it reads the end
// of its stdin and exits) and returns what it wrote on stderr, its exit
// code, and what failed in releasing it (its pipes, its wait).
func (u *RefUpdates) end(kill bool) (stderr string, code int, err error) {
	err = u.p.In.Close()
	if kill {
		u.p.Kill()
	}
	code, werr := u.p.Wait()
	err = errors.Join(err, werr, u.p.Out.Close())
	u.p = nil
	return strings.TrimSpace(u.stderr.String()), code, err
}

// Close ends the process, if one runs: its stdin closes and it exits. A
// nil RefUpdates has none.
func (u *RefUpdates) Close() error {
	if u == nil || u.p == nil {
		return nil
	}
	stderr, code, err := u.end(false)
	if code != 0 {
		err = errors.Join(&proc.ExitError{Argv: updateRefArgv, Code: code, Stderr: stderr}, err)
	}
	return err
}

// updateRefArgv names the process in its errors.
var updateRefArgv = []string{"git", "update-ref", "--stdin"}

// refError is the error of an update of ref from oldOID that git
// refused with err: ErrStale when the ref was not at oldOID.
func refError(ref, oldOID, format string, err error) error {
	var exit *proc.ExitError
	if errors.As(err, &exit) && (strings.Contains(exit.Stderr, "but expected") || strings.Contains(exit.Stderr, "reference already exists") ||
		strings.Contains(exit.Stderr, "unable to resolve reference") && oldOID != ZeroOID(format)) {
		return fmt.Errorf("update %s: %w: %v", ref, ErrStale, err)
	}
	return fmt.Errorf("update %s: %w", ref, err)
}
