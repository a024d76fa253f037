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
	ps := b.paths(s)
	var w strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&w, format+"\n", args...) }
	w.WriteString(profileHead)
	for _, r := range SeatbeltRoots {
		line("      (subpath %q)", r)
	}
	line("      (literal %q))", xcodeSelectLink)
	line("    %s))", ps.except(nil))
	if len(ps.reads) > 0 {
		w.WriteString(profileReads)
		line("      %s)", subpaths(ps.reads))
		line("    %s))", ps.except(nil))
	}
	if len(ps.writes) > 0 {
		w.WriteString(profileWrites)
		line("      %s)", subpaths(ps.writes))
		line("    %s))", ps.except(ps.readOnlyInside))
		line("; Unix sockets the agent's tools make in those directories (a test server).")
		line("(allow system-socket (socket-domain AF_UNIX))")
		for _, n := range ps.writes {
			line("(allow network-bind (local unix-socket (subpath (param %q))))", n)
			line("(allow network-outbound (remote unix-socket (subpath (param %q))))", n)
		}
	}
	w.WriteString(profileMetadata)
	for _, l := range seatbeltLinks {
		line("  (literal %q)", l)
	}
	for _, a := range ps.ancestors {
		line("  (literal (param %q))", a)
	}
	w.WriteString(profileSystem)
	switch {
	case s.NoNetwork && s.RelayPort > 0:
		w.WriteString(profileRelayOnly)
		line("(allow network-outbound (remote ip \"localhost:%d\"))", s.RelayPort)
	case s.NoNetwork:
		line("; No network at all: no address, no name resolution.")
	default:
		w.WriteString(profileOpenNetwork)
	}
	return Profile{Text: w.String(), Params: b.params}
}

// profilePaths are the parameters of a profile's paths: read-only,
// writable, masked, the read-only ones inside a writable one, and the
// directories that lead to them.
type profilePaths struct {
	reads, writes, masks, readOnlyInside, ancestors []string
}

// paths makes s's paths real and names them as parameters.
func (b *profileBuilder) paths(s Spec) profilePaths {
	var ps profilePaths
	readableFiles, masked := seatbeltFiles(s.Files)
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
		ps.reads = append(ps.reads, b.param("READ", p))
	}
	for _, p := range writePaths {
		ps.writes = append(ps.writes, b.param("WRITE", p))
	}
	for _, p := range masked {
		ps.masks = append(ps.masks, b.param("MASK", b.real(p)))
	}
	// A read-only path inside a writable one stays read-only, as a
	// read-only mount over a writable one does under bubblewrap.
	for i, p := range readPaths {
		if under(p, writePaths) {
			ps.readOnlyInside = append(ps.readOnlyInside, ps.reads[i])
		}
	}
	for _, p := range ancestorsOf(append(append([]string{}, readPaths...), writePaths...)) {
		ps.ancestors = append(ps.ancestors, b.param("PARENT", p))
	}
	return ps
}

// except are the require-nots that narrow a rule: the secrets of /etc,
// the masked files, and the parameters extra.
func (ps profilePaths) except(extra []string) string {
	var parts []string
	for _, p := range SeatbeltEtcSecrets {
		parts = append(parts, fmt.Sprintf("(require-not (subpath %q))", p))
	}
	for _, m := range append(append([]string{}, ps.masks...), extra...) {
		parts = append(parts, fmt.Sprintf("(require-not (subpath (param %q)))", m))
	}
	return strings.Join(parts, "\n    ")
}

// subpaths is a require-any's list of the parameters names.
func subpaths(names []string) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("(subpath (param %q))", n))
	}
	return strings.Join(parts, "\n      ")
}

// The fixed parts of the profile, in its order.
const (
	profileHead = `(version 1)
; spawn's Seatbelt profile for one agent. Every path that comes from this
; machine or the configuration is a parameter (sandbox-exec -D), never text
; of the profile. Every rule allows; each exception is a require-not inside
; the rule it narrows, so no rule depends on the order of the others.
; "Contract N" is line N of the confinement contract in SECURITY.md.

; Contract 3 (the sandbox is an allowlist): what no rule below allows is denied:
; your HOME, the host's /tmp and /var/run (and the sockets there: ssh-agent,
; gpg-agent, docker), .git/config, other runs, your keychain (no securityd).
(deny default)

; The agent runs programs and forks. It signals and inspects only processes of
; its own sandbox, which every child inherits and none can leave.
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))

; Contract 3: the system's directories, read-only, the secrets of /etc masked.
(allow file-read* file-map-executable
  (require-all
    (require-any
`
	profileReads = `
; Contract 3: the toolchains on the agent's PATH, its CLI's install, spawn's
; binary (its hooks) and, for the coder, your objects, read-only (contract 2:
; the coder's store borrows them and cannot change them).
(allow file-read* file-map-executable
  (require-all
    (require-any
`
	profileWrites = `
; Contract 2 and 3: the agent's worktree with its own git store, and its
; private directory (its HOME and TMPDIR), readable and writable. Nothing
; else is writable: there is no private /tmp on macOS, the host's is denied.
(allow file-read* file-map-executable file-write*
  (require-all
    (require-any
`
	profileMetadata = `
; Finding the paths above: the metadata (not the contents) of the directories
; that lead to them, and of the links at the top of the file system.
(allow file-read-metadata
  (literal "/")
  (literal "/private")
  (literal "/private/var")
  (literal "/private/var/db")
  (literal "/Library")
  (literal "/Library/Application Support")
  (literal "/System")
`
	profileSystem = `  (literal "/dev"))

; Devices every program expects; no terminal: no ioctl on any tty, so no
; keystrokes pushed into yours (TIOCSTI).
(allow file-read* file-write-data
  (literal "/dev/null")
  (literal "/dev/zero"))
(allow file-read*
  (literal "/dev/random")
  (literal "/dev/urandom"))
(allow file-read-data file-write-data (subpath "/dev/fd"))
(allow file-read* file-write-data file-ioctl (literal "/dev/dtracehelper"))

; The system's settings a runtime reads (CPUs, memory, OS version), but not the
; process table nor another process's arguments and environment (where your
; keys are): as in bubblewrap's pid namespace, the agent sees no other process.
(allow sysctl-read
  (require-all
    (require-not (sysctl-name-prefix "kern.proc."))
    (require-not (sysctl-name "kern.proc"))
    (require-not (sysctl-name-prefix "kern.procargs"))))
(allow mach-host*)
(allow ipc-posix-sem)
; User and group names (getpwuid), the system log, notifications.
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.notification_center")
  (global-name "com.apple.system.logger")
  (global-name "com.apple.logd"))

`
	profileRelayOnly = `; Contract 6 and 7 (model-only): the agent's only way out is the model relay.
; macOS has no network namespace: spawn's relay listens on the host's loopback,
; and this port on it is the one address the agent may connect to. It cannot
; listen, resolve names, or reach any other address or socket.
`
	profileOpenNetwork = `; network = "open": the host's network, and name resolution (mDNSResponder,
; the resolver's configuration, certificate trust). Still no unix socket but
; the agent's own: not ssh-agent's, not docker's.
(allow network-outbound (remote ip "*:*"))
(allow network-inbound (local ip "*:*"))
(allow network-bind (local ip "*:*"))
(allow network-outbound (literal "/private/var/run/mDNSResponder"))
(allow file-read* (literal "/private/var/run/resolv.conf"))
(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))
(allow mach-lookup
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd")
  (global-name "com.apple.dnssd.service")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.ocspd"))
`
)

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
