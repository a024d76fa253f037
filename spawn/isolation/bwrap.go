package isolation

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// Spec is what one agent process may see and touch, under bubblewrap on
// Linux (Bwrap) or Seatbelt on macOS (SandboxExec; see Seatbelt for how
// each field reads there). The sandbox is built from an allowlist, never
// from the host's / minus what is hidden: under bubblewrap it shows the
// host's system directories read-only (SystemRoots, with the secrets of
// /etc masked), ReadOnly and Files read-only, Writable writable, and
// nothing else. /tmp, /var/tmp, /run (and /var/run) and /dev/shm are empty
// and the agent's own; /proc and /dev are fresh; the root is read-only.
// The agent holds no capability, cannot make user namespaces (to regain
// one), and dies with its parent.
type Spec struct {
	Bwrap string // the bwrap binary; "" under Seatbelt
	// SandboxExec is the sandbox-exec binary (SandboxExec, but for the
	// probe's tests): set, the agent runs under the Seatbelt profile of
	// s rather than under bubblewrap.
	SandboxExec string
	ReadOnly    []string // host paths shown read-only at the same path
	Writable    []string // host paths shown writable at the same path; each must exist
	Files       []Bind   // host files shown read-only at another path
	// NoNetwork unshares the network: the agent sees only its own loopback.
	// Under Seatbelt, which has no network namespace, it denies every
	// address but the loopback's RelayPort.
	NoNetwork bool
	// RelayPort is the port of the model relay on the host's loopback,
	// the one address a Seatbelt sandbox with NoNetwork may reach (0:
	// none). Under bubblewrap the agent reaches the relay through the
	// bridge (Bridged) instead, and RelayPort is not used.
	RelayPort int
	// TmpSize bounds each of the agent's own tmpfs (/tmp, /var/tmp, /run,
	// /dev/shm), in bytes; 0 means DefaultTmpSize.
	TmpSize int64

	// lstat reads the host's layout; nil is os.Lstat (tests give a fake).
	lstat func(string) (fs.FileInfo, error)
	// resolve makes a path real for Seatbelt; nil is filepath.EvalSymlinks
	// (tests give a fake).
	resolve func(string) (string, error)
}

// Bind is one source path shown at a destination path.
type Bind struct{ Src, Dst string }

// SystemRoots are the host directories every sandbox shows read-only: the
// programs, libraries and system configuration the toolchains need. Where
// a root is a link (/bin to usr/bin), the sandbox has the same link.
var SystemRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix"}

// EtcSecrets are the places under /etc that hold a host's secrets (password
// hashes, host keys, private keys, saved network and registry credentials):
// a sandbox shows them empty. Only root can read most of them, and spawn
// may run as root (CI).
var EtcSecrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private", "/etc/pki/tls/private",
	"/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/docker", "/etc/containers/auth.json",
	"/etc/krb5.keytab", "/etc/credstore", "/etc/credstore.encrypted", "/etc/gitlab-runner",
}

// privateTmpfs are the directories every sandbox gets empty, its own.
var privateTmpfs = []string{"/tmp", "/var/tmp", "/run", "/dev/shm"}

// DefaultTmpSize bounds each private tmpfs of a sandbox: the agents' TMPDIR
// is on disk, in their private directory, so /tmp holds little.
const DefaultTmpSize = 256 << 20

// mount is one bwrap mount operation.
type mount struct {
	op       string // --tmpfs, --ro-bind, --bind, --symlink
	src, dst string
}

// rank orders mounts of the same depth: tmpfs first, then read-only binds,
// then writable ones (so a writable path is not made read-only again).
var rank = map[string]int{"--symlink": 0, "--tmpfs": 1, "--ro-bind": 2, "--bind": 3}

// Args returns bwrap's arguments for s, up to and including "--": the
// caller appends the command. Mounts are ordered so that a path nested in
// another is mounted after it (a writable worktree inside a read-only
// system root, an agent's private directory inside /tmp).
func (s Spec) Args() []string {
	lstat := s.lstat
	if lstat == nil {
		lstat = os.Lstat
	}
	size := s.TmpSize
	if size <= 0 {
		size = DefaultTmpSize
	}
	args := append(baseArgs(), "--cap-drop", "ALL", "--disable-userns")
	if s.NoNetwork {
		args = append(args, "--unshare-net")
	}
	var ms []mount
	shown := map[string]bool{} // system roots that are directories
	for _, root := range SystemRoots {
		fi, err := lstat(root)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(root); err == nil {
				ms = append(ms, mount{op: "--symlink", src: target, dst: root})
			}
		case fi.IsDir():
			ms = append(ms, mount{op: "--ro-bind", src: root, dst: root})
			shown[root] = true
		}
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	for _, p := range privateTmpfs {
		ms = append(ms, mount{op: "--tmpfs", dst: p})
	}
	ms = append(ms, mount{op: "--symlink", src: "../run", dst: "/var/run"})
	var remount []string
	for _, p := range EtcSecrets {
		fi, err := lstat(p)
		switch {
		case err != nil || fi.Mode()&fs.ModeSymlink != 0:
		case fi.IsDir():
			ms = append(ms, mount{op: "--tmpfs", dst: p})
			remount = append(remount, p)
		default:
			ms = append(ms, mount{op: "--ro-bind", src: "/dev/null", dst: p})
		}
	}
	underRoot := func(p string) bool {
		for root := range shown {
			if strings.HasPrefix(p+"/", root+"/") && !underSecret(p) {
				return true
			}
		}
		return false
	}
	ro := s.ReadOnly
	if !s.NoNetwork {
		// Name resolution: systemd-resolved links /etc/resolv.conf into /run.
		if target, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && target != "/etc/resolv.conf" {
			ro = append(ro, target)
		}
	}
	for _, p := range ro {
		if p = clean(p); !underRoot(p) {
			ms = append(ms, mount{op: "--ro-bind", src: p, dst: p})
		}
	}
	for _, p := range s.Writable {
		ms = append(ms, mount{op: "--bind", src: clean(p), dst: clean(p)})
	}
	for _, b := range s.Files {
		ms = append(ms, mount{op: "--ro-bind", src: clean(b.Src), dst: clean(b.Dst)})
	}
	sort.SliceStable(ms, func(i, j int) bool {
		di, dj := depth(ms[i].dst), depth(ms[j].dst)
		if di != dj {
			return di < dj
		}
		return rank[ms[i].op] < rank[ms[j].op]
	})
	seen := map[mount]bool{}
	for _, m := range ms {
		if seen[m] {
			continue
		}
		seen[m] = true
		switch m.op {
		case "--tmpfs":
			args = append(args, "--size", strconv.FormatInt(size, 10), m.op, m.dst)
		default:
			args = append(args, m.op, m.src, m.dst)
		}
	}
	for _, p := range remount {
		args = append(args, "--remount-ro", p)
	}
	return append(args, "--remount-ro", "/", "--")
}

// underSecret reports whether p is, or is inside, one of EtcSecrets.
func underSecret(p string) bool {
	for _, s := range EtcSecrets {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// Wrap returns cmd run under bubblewrap (or Seatbelt) as s describes: the
// same environment, directory and stdin, the agent's argv after bwrap's
// (or sandbox-exec's).
func (s Spec) Wrap(cmd runners.Command) runners.Command {
	cmd.Path, cmd.Args = s.argv(cmd.Dir, cmd.Path, cmd.Args)
	// bubblewrap dies of the signals meant for the agent; sandbox-exec
	// becomes the agent (it execs it).
	cmd.Wrapper = s.SandboxExec == ""
	return cmd
}

// Confine returns c run under bubblewrap (or Seatbelt) as s describes: the
// same environment, directory and streams.
func (s Spec) Confine(c proc.Cmd) proc.Cmd {
	c.Path, c.Args = s.argv(c.Dir, c.Path, c.Args)
	return c
}

// argv is bwrap's (or sandbox-exec's) path and arguments running path with
// args in dir. sandbox-exec runs the command where it was started: dir is
// the caller's to set.
func (s Spec) argv(dir, path string, args []string) (string, []string) {
	if s.SandboxExec != "" {
		return s.SandboxExec, append(append(s.Seatbelt().Args(), path), args...)
	}
	out := s.Args()
	if dir != "" {
		out = append(out[:len(out)-1], "--chdir", dir, "--")
	}
	return s.Bwrap, append(append(out, path), args...)
}

// Toolchains returns the directories a sandbox must show read-only for the
// programs env's PATH names (and GOROOT, GOPATH, GOMODCACHE) to run, when
// they live outside SystemRoots: each PATH directory, and the directory
// above a .../bin (nvm, pyenv and the like link bin/ into a sibling lib/),
// except HOME itself and ~/.local (which holds more than programs). Paths
// that do not exist are left out.
func Toolchains(env []string) []string {
	home := filepath.Clean(proc.Getenv(env, "HOME"))
	var out []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) || p == "/" || p == home {
			return
		}
		p = filepath.Clean(p)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	for _, p := range filepath.SplitList(proc.Getenv(env, "PATH")) {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		add(p)
		if parent := filepath.Dir(p); filepath.Base(p) == "bin" && filepath.Base(parent) != ".local" {
			add(parent)
		}
	}
	for _, k := range []string{"GOROOT", "GOPATH", "GOMODCACHE"} {
		add(proc.Getenv(env, k))
	}
	return out
}

// HomeSecrets are files under a user's HOME that hold credentials and may
// sit inside a directory Toolchains shows (~/.cargo/credentials.toml): a
// sandbox shows each that exists as an empty file.
var HomeSecrets = []string{".cargo/credentials.toml", ".cargo/credentials", ".pyenv/.pypirc", "go/pkg/mod/cache/download/.netrc"}

// Masks returns the Files that hide HomeSecrets under the user's home
// (each shown as /dev/null) for those that exist; none when home is "".
func Masks(home string) []Bind {
	if home == "" {
		return nil
	}
	var out []Bind
	for _, rel := range HomeSecrets {
		p := filepath.Join(home, rel)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, Bind{Src: "/dev/null", Dst: p})
		}
	}
	return out
}

func clean(p string) string { return filepath.Clean(p) }

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }
