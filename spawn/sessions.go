package spawn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// sessionsName is where, in a run's directory, the coder's claude sessions
// are kept between spawn processes, for `spawn resume`: the projects/
// directory of the coder's private CLAUDE_CONFIG_DIR, which holds the
// session transcripts `claude --resume` reads.
const sessionsName = "coder-sessions"

// maxSessionFile bounds one session file spawn keeps.
const maxSessionFile = 256 << 20

// keepSessions copies the coder's sessions out of its private directory
// (private: the directory the coder's sandbox shows writable; its config/
// is CLAUDE_CONFIG_DIR) into kept (replacing what kept held), secrets
// redacted as in every file spawn writes. The coder could write all of
// private: it is read through an os.Root, so that no link leads spawn out
// of it, and only regular files under config/projects are copied. A coder
// that never ran has none: nothing is copied.
func keepSessions(private, kept string, red *observability.Redactor) error {
	root, err := os.OpenRoot(private)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("keep the coder's sessions: %w", err)
	}
	defer root.Close()
	const src = "config/projects"
	if fi, err := root.Lstat(src); err != nil || !fi.IsDir() {
		return nil
	}
	if err := os.RemoveAll(kept); err != nil {
		return fmt.Errorf("keep the coder's sessions: %w", err)
	}
	err = fs.WalkDir(root.FS(), src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, filepath.FromSlash(p))
		if err != nil {
			return err
		}
		dst := filepath.Join(kept, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o700)
		case !d.Type().IsRegular():
			return nil // claude keeps no links there; nothing else is a session
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
	return nil
}

// restoreSessions copies kept sessions into a new private config
// directory, so that the coder's session can be resumed; nothing when
// none were kept.
func restoreSessions(kept, configDir string) error {
	if _, err := os.Stat(kept); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.CopyFS(filepath.Join(configDir, "projects"), os.DirFS(kept)); err != nil {
		return fmt.Errorf("restore the coder's sessions: %w", err)
	}
	return nil
}
