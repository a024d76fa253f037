package git

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// ErrStale means a compare-and-swap update found the ref no longer where
// the caller last saw it.
var ErrStale = errors.New("the ref moved")

// ZeroOID is the all-zero object name of format ("sha1", the default, or
// "sha256"): as the old value of an update, "the ref must not exist".
func ZeroOID(format string) string {
	if format == "sha256" {
		return strings.Repeat("0", 64)
	}
	return strings.Repeat("0", 40)
}

// IsOID reports whether s is a full object name in lower-case hex (40
// characters for sha1, 64 for sha256).
func IsOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// unpackLimit is the object count below which ImportPack writes loose
// objects, as git's receive-pack does (transfer.unpackLimit).
const unpackLimit = 100

// ImportPack adds the objects of the pack (git's pack format, possibly
// thin: deltas against objects r already has) that pack reads into r, as
// git does with a push it receives from a stranger: each object is hashed,
// checked (--strict: well-formed, and every object it names present), and
// written only if r does not have it already; an object r has is never
// replaced. Small packs become loose objects, larger ones a pack of r's.
// A pack that fails a check is an error and leaves r's refs as they were.
func (r Repo) ImportPack(ctx context.Context, pack io.Reader) error {
	br := bufio.NewReaderSize(pack, 64<<10)
	head, err := br.Peek(12)
	if err != nil {
		return fmt.Errorf("import objects: the pack has no header: %w", err)
	}
	if string(head[:4]) != "PACK" {
		return errors.New("import objects: not a pack")
	}
	args := []string{"index-pack", "--stdin", "--fix-thin", "--strict"}
	if binary.BigEndian.Uint32(head[8:12]) < unpackLimit {
		args = []string{"unpack-objects", "-q", "--strict"}
	}
	c := r.cmd(args...)
	c.Stdin = br
	if _, err := proc.Run(ctx, c); err != nil {
		return fmt.Errorf("import objects: %w", err)
	}
	return nil
}

// Identity is who commits in r as git's configuration says (user.name and
// user.email, the environment's GIT_COMMITTER_* aside); "" for each that
// is not set.
func (r Repo) Identity(ctx context.Context) (name, email string, err error) {
	out, err := r.Run(ctx, "config", "--get-regexp", `^user\.(name|email)$`)
	var exit *proc.ExitError
	if errors.As(err, &exit) && exit.Code == 1 {
		return "", "", nil // none set
	}
	if err != nil {
		return "", "", fmt.Errorf("read the git identity: %w", err)
	}
	for _, line := range strings.Split(out, "\n") {
		key, value, _ := strings.Cut(line, " ")
		switch key {
		case "user.name":
			name = value
		case "user.email":
			email = value
		}
	}
	return name, email, nil
}
