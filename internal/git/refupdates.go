package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
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

	p      *proc.Process
	in     *os.File // the process's stdin
	out    *os.File // its stdout
	answer *bufio.Reader
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
	if u.p != nil && exited(u.p) {
		// It died between two updates (killed): nothing was asked of it.
		u.end(false)
	}
	if u.p == nil {
		if err := u.start(); err != nil {
			return fmt.Errorf("update %s: %w", ref, err)
		}
	}
	stop := context.AfterFunc(ctx, u.p.Kill)
	defer stop()
	_, err := fmt.Fprintf(u.in, "start\nupdate %s %s %s\nprepare\ncommit\n", ref, newOID, oldOID)
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
	stderr, code := u.end(true)
	if ctx.Err() != nil {
		return fmt.Errorf("update %s: %w", ref, ctx.Err())
	}
	if stderr != "" {
		err = &proc.ExitError{Argv: []string{"git", "update-ref", "--stdin"}, Code: code, Stderr: stderr}
	}
	return refError(ref, oldOID, u.Repo.ObjectFormat, err)
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
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return errors.Join(err, inR.Close(), inW.Close())
	}
	u.stderr = &bytes.Buffer{}
	c := u.Repo.cmd("update-ref", "--no-deref", "-m", u.Msg, "--stdin")
	c.Stdin, c.Stdout, c.Stderr = inR, outW, u.stderr
	p, err := proc.StartDirect(c)
	// The process holds its ends now.
	closed := errors.Join(inR.Close(), outW.Close())
	if err == nil && closed != nil {
		p.Kill()
		<-p.Done()
		err = closed
	}
	if err != nil {
		return errors.Join(err, inW.Close(), outR.Close())
	}
	u.p, u.in, u.out, u.answer = p, inW, outR, bufio.NewReader(outR)
	return nil
}

// end ends the process (killed when kill is set; else it reads the end
// of its stdin and exits) and returns what it wrote on stderr and its
// exit code.
func (u *RefUpdates) end(kill bool) (stderr string, code int) {
	err := u.in.Close()
	if kill {
		u.p.Kill()
	}
	code, werr := u.p.Wait()
	_ = errors.Join(err, werr, u.out.Close()) // the process is gone either way
	stderr = strings.TrimSpace(u.stderr.String())
	u.p = nil
	return stderr, code
}

// Close ends the process, if one runs: its stdin closes and it exits. A
// nil RefUpdates has none.
func (u *RefUpdates) Close() error {
	if u == nil || u.p == nil {
		return nil
	}
	if stderr, code := u.end(false); code != 0 {
		return &proc.ExitError{Argv: []string{"git", "update-ref", "--stdin"}, Code: code, Stderr: stderr}
	}
	return nil
}

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
