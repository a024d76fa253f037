package isolation

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/infinite-improbability-drive/spawn/runners"
)

// Spec is what one agent process may see and touch under bubblewrap. The
// whole filesystem is read-only; Hide paths are replaced by empty, read-only tmpfs
// (the user's HOME: keys, tokens, ~/.ssh); ReadOnly paths are shown again,
// read-only, inside a hidden one (the repository, the agent's binaries);
// Writable paths are the only places the agent can write; Files are single
// files bound read-only at a destination (a login file in the agent's
// private config directory). /proc and /dev are fresh, and the agent dies
// with its parent.
type Spec struct {
	Bwrap    string   // the bwrap binary
	Hide     []string // directories replaced by an empty tmpfs
	ReadOnly []string // paths shown read-only (inside a hidden directory)
	Writable []string // paths bound read-write; each must exist
	Files    []Bind   // files bound read-only at another path
	// Unshare the network: the agent sees only its own loopback.
	NoNetwork bool
}

// Bind is one source path shown at a destination path.
type Bind struct{ Src, Dst string }

// mount is one bwrap mount operation.
type mount struct {
	op       string // --tmpfs, --ro-bind, --bind
	src, dst string
}

// Args returns bwrap's arguments for s, up to and including "--": the
// caller appends the command. Mounts are ordered so that a path nested in
// another is mounted after it (a writable worktree inside a read-only
// repository inside a hidden HOME).
func (s Spec) Args() []string {
	args := append(baseArgs(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	if s.NoNetwork {
		args = append(args, "--unshare-net")
	}
	var ms []mount
	for _, p := range s.Hide {
		ms = append(ms, mount{op: "--tmpfs", dst: clean(p)})
	}
	for _, p := range s.ReadOnly {
		ms = append(ms, mount{op: "--ro-bind", src: clean(p), dst: clean(p)})
	}
	for _, p := range s.Writable {
		ms = append(ms, mount{op: "--bind", src: clean(p), dst: clean(p)})
	}
	for _, b := range s.Files {
		ms = append(ms, mount{op: "--ro-bind", src: clean(b.Src), dst: clean(b.Dst)})
	}
	// Parents before children; at equal depth, tmpfs before binds, read-only
	// before writable (so a writable path is not made read-only again).
	rank := map[string]int{"--tmpfs": 0, "--ro-bind": 1, "--bind": 2}
	sort.SliceStable(ms, func(i, j int) bool {
		di, dj := depth(ms[i].dst), depth(ms[j].dst)
		if di != dj {
			return di < dj
		}
		return rank[ms[i].op] < rank[ms[j].op]
	})
	for _, m := range ms {
		if m.op == "--tmpfs" {
			args = append(args, m.op, m.dst)
			continue
		}
		args = append(args, m.op, m.src, m.dst)
	}
	// A hidden directory is read-only too, once what it shows is mounted.
	for _, p := range s.Hide {
		args = append(args, "--remount-ro", clean(p))
	}
	return append(args, "--")
}

// Wrap returns cmd run under bubblewrap as s describes: the same
// environment, directory and stdin, the agent's argv after bwrap's.
func (s Spec) Wrap(cmd runners.Command) runners.Command {
	args := s.Args()
	if cmd.Dir != "" {
		args = append(args[:len(args)-1], "--chdir", cmd.Dir, "--")
	}
	cmd.Args = append(append(args, cmd.Path), cmd.Args...)
	cmd.Path = s.Bwrap
	return cmd
}

func clean(p string) string { return filepath.Clean(p) }

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }
