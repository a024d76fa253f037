package isolation

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// SandboxExec is macOS's sandbox-exec, which applies a Seatbelt profile to
// a command and executes it. spawn runs it from this path only, never from
// one found in PATH: a sandbox-exec planted earlier in PATH would be a
// sandbox that confines nothing.
const SandboxExec = "/usr/bin/sandbox-exec"

// SeatbeltRoots are the macOS system directories every Seatbelt sandbox
// shows read-only: the programs, libraries and frameworks, the developer
// tools, the system configuration (/private/etc, with the secrets of
// SeatbeltEtcSecrets masked), and the settings an administrator sets for
// the agent CLIs (Claude Code's and Gemini CLI's managed settings). Paths are the real ones: Seatbelt checks the
// path a file is reached by once links are resolved (/etc is
// /private/etc). Not /System whole: /System/Volumes/Data leads to every
// user's files by another path.
var SeatbeltRoots = []string{
	"/usr", "/bin", "/sbin", "/System/Library", "/opt", "/nix",
	"/Library/Apple", "/Library/Developer", "/Library/Frameworks",
	"/Library/Application Support/ClaudeCode", "/Library/Application Support/GeminiCli",
	"/private/etc", "/private/var/db/timezone",
}

// SeatbeltEtcSecrets are the places under /private/etc that hold a Mac's
// secrets (the password database, the auto-login password, sudo's rules,
// the host's ssh keys, Kerberos and VPN secrets): no sandbox reads them.
var SeatbeltEtcSecrets = []string{
	"/private/etc/master.passwd", "/private/etc/kcpassword", "/private/etc/sudoers", "/private/etc/sudoers.d",
	"/private/etc/ssh", "/private/etc/krb5.keytab", "/private/etc/racoon", "/private/etc/ppp",
}

// xcodeSelectLink is the link xcode-select keeps to the active developer
// directory (Xcode.app's or the command line tools'): /usr/bin/git and
// the other shims in /usr/bin run the tools it points to.
const xcodeSelectLink = "/private/var/db/xcode_select_link"

// seatbeltLinks are the links at the top of the file system that every
// program resolves (/etc, /tmp and /var into /private): their own
// metadata, not what they lead to.
var seatbeltLinks = []string{"/etc", "/tmp", "/var"}

// Profile is a Seatbelt profile and the parameters it is applied with.
// The text holds no path that comes from the host or the configuration:
// each is a parameter (sandbox-exec -D NAME=VALUE), which the profile
// names as (param "NAME"), so that no path, whatever characters it holds,
// can change what the profile says.
type Profile struct {
	Text   string
	Params []Param
}

// Param is one -D parameter of a profile.
type Param struct{ Name, Value string }

// Args are sandbox-exec's arguments for p, up to and including "--": the
// caller appends the command.
func (p Profile) Args() []string {
	args := []string{"-p", p.Text}
	for _, prm := range p.Params {
		args = append(args, "-D", prm.Name+"="+prm.Value)
	}
	return append(args, "--")
}

// seatbeltFiles is what a Spec's Files are under Seatbelt, which shows a
// file where it is and cannot show it at another path: a file shown at its
// own path (Src == Dst) is readable; one shown as /dev/null is masked
// (never readable, nor writable, even inside a directory the sandbox
// shows); one shown at another path is not shown at all, which denies it
// rather than showing more.
func seatbeltFiles(files []Bind) (readable, masked []string) {
	for _, b := range files {
		switch {
		case filepath.Clean(b.Src) == filepath.Clean(b.Dst):
			readable = append(readable, b.Dst)
		case b.Src == "/dev/null":
			masked = append(masked, b.Dst)
		}
	}
	return readable, masked
}

// Seatbelt returns the Seatbelt profile that confines an agent as s says:
// the same allowlist as the bubblewrap sandbox (Args), on macOS's terms.
// It starts from (deny default) and only allows; every exception (a mask,
// a read-only path inside a writable one) is a require-not inside the rule
// it narrows, so nothing depends on the order of the rules. Each rule says
// which line of SECURITY.md's confinement contract it keeps.
//
// Paths are made real (links resolved: /var/folders is /private/var/folders)
// with s's resolver before they become parameters. What macOS cannot do
// as bubblewrap does, the profile states in its comments: there is no
// private /tmp (the host's is denied; the agent's TMPDIR is in its
// private directory), and no network namespace: with NoNetwork the only
// address allowed is the relay's port on the loopback (RelayPort), which
// spawn's relay listens on, and none at all when RelayPort is 0.
func (s Spec) Seatbelt() Profile {
	b := &profileBuilder{resolve: s.resolver()}
	readableFiles, masked := seatbeltFiles(s.Files)

	var reads, writes, masks []string // parameter names
	var readPaths, writePaths []string
	for _, p := range append(append([]string{}, s.ReadOnly...), readableFiles...) {
		if p = b.real(p); !under(p, SeatbeltRoots) && !contains(readPaths, p) {
			readPaths = append(readPaths, p)
		}
	}
	if dev, ok := b.link(xcodeSelectLink); ok && !under(dev, SeatbeltRoots) {
		readPaths = append(readPaths, dev)
	}
	for _, p := range s.Writable {
		if p = b.real(p); !contains(writePaths, p) {
			writePaths = append(writePaths, p)
		}
	}
	for _, p := range readPaths {
		reads = append(reads, b.param("READ", p))
	}
	for _, p := range writePaths {
		writes = append(writes, b.param("WRITE", p))
	}
	for _, p := range masked {
		masks = append(masks, b.param("MASK", b.real(p)))
	}
	// A read-only path inside a writable one stays read-only, as a
	// read-only mount over a writable one does under bubblewrap.
	var readOnlyInside []string
	for i, p := range readPaths {
		if under(p, writePaths) {
			readOnlyInside = append(readOnlyInside, reads[i])
		}
	}
	var ancestors []string
	for _, p := range ancestorsOf(append(append([]string{}, readPaths...), writePaths...)) {
		ancestors = append(ancestors, b.param("PARENT", p))
	}

	except := func(extra []string) string {
		var parts []string
		for _, p := range SeatbeltEtcSecrets {
			parts = append(parts, fmt.Sprintf("(require-not (subpath %q))", p))
		}
		for _, m := range masks {
			parts = append(parts, fmt.Sprintf("(require-not (subpath (param %q)))", m))
		}
		for _, r := range extra {
			parts = append(parts, fmt.Sprintf("(require-not (subpath (param %q)))", r))
		}
		return strings.Join(parts, "\n    ")
	}
	subpaths := func(names []string) string {
		var parts []string
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("(subpath (param %q))", n))
		}
		return strings.Join(parts, "\n      ")
	}

	var w strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&w, format+"\n", args...) }
	line("(version 1)")
	line("; spawn's Seatbelt profile for one agent. Every path that comes from this")
	line("; machine or the configuration is a parameter (sandbox-exec -D), never text")
	line("; of the profile. Every rule allows; each exception is a require-not inside")
	line("; the rule it narrows, so no rule depends on the order of the others.")
	line("; \"Contract N\" is line N of the confinement contract in SECURITY.md.")
	line("")
	line("; Contract 3 (the sandbox is an allowlist): what no rule below allows is denied:")
	line("; your HOME, the host's /tmp and /var/run (and the sockets there: ssh-agent,")
	line("; gpg-agent, docker), .git/config, other runs, your keychain (no securityd).")
	line("(deny default)")
	line("")
	line("; The agent runs programs and forks. It signals and inspects only processes of")
	line("; its own sandbox, which every child inherits and none can leave.")
	line("(allow process-exec)")
	line("(allow process-fork)")
	line("(allow signal (target same-sandbox))")
	line("(allow process-info* (target same-sandbox))")
	line("")
	line("; Contract 3: the system's directories, read-only, the secrets of /etc masked.")
	line("(allow file-read* file-map-executable")
	line("  (require-all")
	line("    (require-any")
	for _, r := range SeatbeltRoots {
		line("      (subpath %q)", r)
	}
	line("      (literal %q))", xcodeSelectLink)
	line("    %s))", except(nil))
	if len(reads) > 0 {
		line("")
		line("; Contract 3: the toolchains on the agent's PATH, its CLI's install, spawn's")
		line("; binary (its hooks) and, for the coder, your objects, read-only (contract 2:")
		line("; the coder's store borrows them and cannot change them).")
		line("(allow file-read* file-map-executable")
		line("  (require-all")
		line("    (require-any")
		line("      %s)", subpaths(reads))
		line("    %s))", except(nil))
	}
	if len(writes) > 0 {
		line("")
		line("; Contract 2 and 3: the agent's worktree with its own git store, and its")
		line("; private directory (its HOME and TMPDIR), readable and writable. Nothing")
		line("; else is writable: there is no private /tmp on macOS, the host's is denied.")
		line("(allow file-read* file-map-executable file-write*")
		line("  (require-all")
		line("    (require-any")
		line("      %s)", subpaths(writes))
		line("    %s))", except(readOnlyInside))
		line("; Unix sockets the agent's tools make in those directories (a test server).")
		line("(allow system-socket (socket-domain AF_UNIX))")
		for _, n := range writes {
			line("(allow network-bind (local unix-socket (subpath (param %q))))", n)
			line("(allow network-outbound (remote unix-socket (subpath (param %q))))", n)
		}
	}
	line("")
	line("; Finding the paths above: the metadata (not the contents) of the directories")
	line("; that lead to them, and of the links at the top of the file system.")
	line("(allow file-read-metadata")
	line("  (literal \"/\")")
	line("  (literal \"/private\")")
	line("  (literal \"/private/var\")")
	line("  (literal \"/private/var/db\")")
	line("  (literal \"/Library\")")
	line("  (literal \"/Library/Application Support\")")
	line("  (literal \"/System\")")
	for _, l := range seatbeltLinks {
		line("  (literal %q)", l)
	}
	for _, a := range ancestors {
		line("  (literal (param %q))", a)
	}
	line("  (literal \"/dev\"))")
	line("")
	line("; Devices every program expects; no terminal: no ioctl on any tty, so no")
	line("; keystrokes pushed into yours (TIOCSTI).")
	line("(allow file-read* file-write-data")
	line("  (literal \"/dev/null\")")
	line("  (literal \"/dev/zero\"))")
	line("(allow file-read*")
	line("  (literal \"/dev/random\")")
	line("  (literal \"/dev/urandom\"))")
	line("(allow file-read-data file-write-data (subpath \"/dev/fd\"))")
	line("(allow file-read* file-write-data file-ioctl (literal \"/dev/dtracehelper\"))")
	line("")
	line("; The system's settings a runtime reads (CPUs, memory, OS version), but not the")
	line("; process table nor another process's arguments and environment (where your")
	line("; keys are): as in bubblewrap's pid namespace, the agent sees no other process.")
	line("(allow sysctl-read")
	line("  (require-all")
	line("    (require-not (sysctl-name-prefix \"kern.proc.\"))")
	line("    (require-not (sysctl-name \"kern.proc\"))")
	line("    (require-not (sysctl-name-prefix \"kern.procargs\"))))")
	line("(allow mach-host*)")
	line("(allow ipc-posix-sem)")
	line("; User and group names (getpwuid), the system log, notifications.")
	line("(allow mach-lookup")
	line("  (global-name \"com.apple.system.opendirectoryd.libinfo\")")
	line("  (global-name \"com.apple.system.notification_center\")")
	line("  (global-name \"com.apple.system.logger\")")
	line("  (global-name \"com.apple.logd\"))")
	line("")
	switch {
	case s.NoNetwork && s.RelayPort > 0:
		line("; Contract 6 and 7 (model-only): the agent's only way out is the model relay.")
		line("; macOS has no network namespace: spawn's relay listens on the host's loopback,")
		line("; and this port on it is the one address the agent may connect to. It cannot")
		line("; listen, resolve names, or reach any other address or socket.")
		line("(allow network-outbound (remote ip \"localhost:%d\"))", s.RelayPort)
	case s.NoNetwork:
		line("; No network at all: no address, no name resolution.")
	default:
		line("; network = \"open\": the host's network, and name resolution (mDNSResponder,")
		line("; the resolver's configuration, certificate trust). Still no unix socket but")
		line("; the agent's own: not ssh-agent's, not docker's.")
		line("(allow network-outbound (remote ip \"*:*\"))")
		line("(allow network-inbound (local ip \"*:*\"))")
		line("(allow network-bind (local ip \"*:*\"))")
		line("(allow network-outbound (literal \"/private/var/run/mDNSResponder\"))")
		line("(allow file-read* (literal \"/private/var/run/resolv.conf\"))")
		line("(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))")
		line("(allow mach-lookup")
		line("  (global-name \"com.apple.SystemConfiguration.DNSConfiguration\")")
		line("  (global-name \"com.apple.SystemConfiguration.configd\")")
		line("  (global-name \"com.apple.dnssd.service\")")
		line("  (global-name \"com.apple.trustd.agent\")")
		line("  (global-name \"com.apple.ocspd\"))")
	}
	return Profile{Text: w.String(), Params: b.params}
}

// profileBuilder names a profile's parameters.
type profileBuilder struct {
	resolve func(string) (string, error)
	params  []Param
	n       map[string]int // prefix -> parameters so far
}

// param returns the name of a new parameter PREFIX_N holding value.
func (b *profileBuilder) param(prefix, value string) string {
	if b.n == nil {
		b.n = map[string]int{}
	}
	name := fmt.Sprintf("%s_%d", prefix, b.n[prefix])
	b.n[prefix]++
	b.params = append(b.params, Param{Name: name, Value: value})
	return name
}

// real is p, clean, with its links resolved when it exists.
func (b *profileBuilder) real(p string) string {
	p = filepath.Clean(p)
	if r, err := b.resolve(p); err == nil {
		return r
	}
	return p
}

// link is what the link at p leads to, resolved, when it leads somewhere.
func (b *profileBuilder) link(p string) (string, bool) {
	r, err := b.resolve(p)
	if err != nil || r == p {
		return "", false
	}
	return r, true
}

// resolver is how s makes a path real: filepath.EvalSymlinks unless a
// test gave another.
func (s Spec) resolver() func(string) (string, error) {
	if s.resolve != nil {
		return s.resolve
	}
	return filepath.EvalSymlinks
}

// under reports whether p is, or is inside, one of roots.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// ancestorsOf lists the directories above paths, "/" and the top
// directories the profile names itself left out, sorted, each once.
func ancestorsOf(paths []string) []string {
	fixed := map[string]bool{"/": true, "/private": true, "/private/var": true, "/private/var/db": true, "/Library": true, "/Library/Application Support": true, "/System": true}
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		for d := filepath.Dir(p); d != "/" && d != "." && !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			if !fixed[d] {
				out = append(out, d)
			}
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
