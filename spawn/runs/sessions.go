package runs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// sessionsName is where, in a run's directory, the coder's sessions are
// kept between spawn processes, for `spawn resume`: the folders of the
// coder's private directory where its CLI keeps the sessions it resumes
// (runners.Agent.Sessions), at the same paths.
const sessionsName = "coder-sessions"

// SessionsDir is where the run's directory keeps its coder's sessions
// between spawn processes, for `spawn resume` (KeepSessions).
func (p Paths) SessionsDir() string { return filepath.Join(p.Dir, sessionsName) }

// maxSessionFile bounds one session file spawn keeps.
const maxSessionFile = 256 << 20

// KeepSessions copies the coder's sessions out of its private directory
// (private: the directory the coder's sandbox shows writable; sessions
// are the folders in it that hold them) into kept (replacing what kept
// held), secrets redacted as in every file spawn writes. The coder could
// write all of private: it is read through an os.Root, so that no link
// leads spawn out of it, and only regular files are copied. A coder that
// never ran has none: nothing is copied.
func KeepSessions(private string, sessions []string, kept string, red *observability.Redactor) error {
	root, err := os.OpenRoot(private)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("keep the coder's sessions: %w", err)
	}
	defer root.Close()
	var found []string
	for _, src := range sessions {
		if fi, err := root.Lstat(src); err == nil && fi.IsDir() {
			found = append(found, filepath.ToSlash(src))
		}
	}
	if len(found) == 0 {
		return nil
	}
	if err := os.RemoveAll(kept); err != nil {
		return fmt.Errorf("keep the coder's sessions: %w", err)
	}
	for _, src := range found {
		err = fs.WalkDir(root.FS(), src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			dst := filepath.Join(kept, filepath.FromSlash(p))
			switch {
			case d.IsDir():
				return os.MkdirAll(dst, 0o700)
			case !d.Type().IsRegular():
				return nil // no CLI keeps links there; nothing else is a session
			}
			info, err := d.Info()
			if err != nil || info.Size() > maxSessionFile {
				return err
			}
			b, err := root.ReadFile(path.Clean(p))
			if err != nil {
				return err
			}
			return os.WriteFile(dst, red.Bytes(b), 0o600)
		})
		if err != nil {
			return fmt.Errorf("keep the coder's sessions: %w", err)
		}
	}
	return nil
}

// RestoreSessions copies kept sessions into a new private directory dir,
// at the paths they were kept from, so that the coder's session can be
// resumed; nothing when none were kept. What the CLI's adapter already
// put there (its settings) is kept: a file of the same name is replaced.
func RestoreSessions(kept, dir string) error {
	if _, err := os.Stat(kept); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := filepath.WalkDir(kept, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(kept, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o700)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		return fmt.Errorf("restore the coder's sessions: %w", err)
	}
	return nil
}
