package isolation

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/runners"
)

var update = flag.Bool("update", false, "rewrite the golden Seatbelt profiles in testdata/seatbelt")

// macLayout resolves paths as a Mac would: /var is /private/var, and
// xcode-select points into Xcode.app. Every other path resolves to itself
// when it is one the test names, and does not exist otherwise.
func macLayout(exists ...string) func(string) (string, error) {
	return func(p string) (string, error) {
		switch {
		case p == xcodeSelectLink:
			return "/Applications/Xcode.app/Contents/Developer", nil
		case strings.HasPrefix(p, "/var/"):
			return "/private" + p, nil
		case contains(exists, p):
			return p, nil
		}
		return "", os.ErrNotExist
	}
}

// noLinks is a machine where no path is a link (and none of xcode-select).
func noLinks(string) (string, error) { return "", os.ErrNotExist }

// The specs spawn makes (spawn/isolate.go), as they are on a Mac.
func seatbeltCases() map[string]Spec {
	const (
		repo     = "/Users/u/src/repo"
		worktree = repo + "/.spawn/worktrees/20250101-aaaa"
		private  = "/var/folders/xy/T/spawn-agents-20250101-aaaa-1"
		exe      = "/Users/u/go/bin/spawn"
		objects  = repo + "/.git/objects"
	)
	layout := macLayout(worktree, exe, objects, "/Users/u/.nvm/versions/node/v20.19.0/bin",
		"/Users/u/.nvm/versions/node/v20.19.0", "/opt/homebrew/bin", "/Users/u/.cargo/credentials.toml",
		repo+"/.spawn/runs/20250101-aaaa/inbox/delivered", "/Users/u/Library/Caches/spawn/repos/0123456789abcdef",
		repo+"/.spawn/runs/20250101-aaaa/inbox/pending")
	toolchains := []string{"/Users/u/.nvm/versions/node/v20.19.0/bin", "/Users/u/.nvm/versions/node/v20.19.0", "/opt/homebrew/bin"}
	return map[string]Spec{
		"coder-model-only": {SandboxExec: SandboxExec,
			ReadOnly: append(append([]string{}, toolchains...), "/Users/u/.nvm/versions/node/v20.19.0/lib/node_modules", exe,
				objects, private+"/control/hooks.json", repo+"/.spawn/runs/20250101-aaaa/inbox/pending"),
			Writable: []string{worktree, private + "/coder", repo + "/.spawn/runs/20250101-aaaa/inbox/delivered",
				"/Users/u/Library/Caches/spawn/repos/0123456789abcdef"},
			Files:     []Bind{{Src: "/dev/null", Dst: "/Users/u/.cargo/credentials.toml"}},
			NoNetwork: true, RelayPort: 49152, resolve: layout},
		"reviewer-open-network": {SandboxExec: SandboxExec,
			ReadOnly: append(append([]string{}, toolchains...), exe, worktree, objects),
			Writable: []string{private + "/reviewer-1"}, resolve: layout},
		"git-helper": {SandboxExec: SandboxExec, ReadOnly: []string{exe, objects}, Writable: []string{worktree},
			NoNetwork: true, resolve: layout},
	}
}

// render is a profile as its golden file holds it: the text, then its
// parameters as comments.
func render(p Profile) string {
	var b strings.Builder
	b.WriteString(p.Text)
	b.WriteString("\n; Parameters (sandbox-exec -D):\n")
	for _, prm := range p.Params {
		fmt.Fprintf(&b, "; %s=%s\n", prm.Name, prm.Value)
	}
	return b.String()
}

// The profiles spawn generates for the coder, a reviewer and the git
// helper, against golden files (go test -run TestSeatbeltProfilesAreGolden
// ./spawn/isolation/ -update rewrites them; read the diff).
func TestSeatbeltProfilesAreGolden(t *testing.T) {
	for name, spec := range seatbeltCases() {
		t.Run(name, func(t *testing.T) {
			got := render(spec.Seatbelt())
			path := filepath.Join("testdata", "seatbelt", name+".sb")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(want), got)
		})
	}
}

// sexp is a parsed profile: a list of forms, each an atom (a string, with
// strings quoted) or a list.
type sexp struct {
	atom string
	list []sexp
}

func (x sexp) String() string {
	if x.list == nil {
		return x.atom
	}
	parts := make([]string, len(x.list))
	for i, y := range x.list {
		parts[i] = y.String()
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// parseProfile reads an SBPL text as s-expressions: comments dropped,
// strings kept whole (with their quotes, escapes undone), and fails on
// what Seatbelt would not read (an unbalanced parenthesis, an unclosed
// string).
func parseProfile(t *testing.T, text string) []sexp {
	t.Helper()
	var stack [][]sexp
	var cur []sexp
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == ';':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '(':
			stack = append(stack, cur)
			cur = nil
		case c == ')':
			require.NotEmpty(t, stack, "unbalanced ) at %d", i)
			done := sexp{list: cur}
			cur = append(stack[len(stack)-1], done)
			stack = stack[:len(stack)-1]
		case c == '"':
			var s strings.Builder
			s.WriteByte('"')
			for i++; ; i++ {
				require.Less(t, i, len(text), "unclosed string")
				if text[i] == '\\' {
					i++
					s.WriteByte(text[i])
					continue
				}
				if text[i] == '"' {
					break
				}
				s.WriteByte(text[i])
			}
			cur = append(cur, sexp{atom: s.String() + `"`})
		case c == ' ' || c == '\n' || c == '\t':
		default:
			j := i
			for j < len(text) && !strings.ContainsRune(" \n\t()\";", rune(text[j])) {
				j++
			}
			cur = append(cur, sexp{atom: text[i:j]})
			i = j - 1
		}
	}
	require.Empty(t, stack, "unbalanced (")
	return cur
}

// seatbeltOperations are the Seatbelt operations spawn's profiles may name.
var seatbeltOperations = map[string]bool{
	"default": true, "process-exec": true, "process-fork": true, "signal": true, "process-info*": true,
	"file-read*": true, "file-read-data": true, "file-read-metadata": true, "file-write*": true, "file-write-data": true,
	"file-map-executable": true, "file-ioctl": true, "sysctl-read": true, "mach-host*": true, "mach-lookup": true,
	"ipc-posix-sem": true, "system-socket": true, "network-outbound": true, "network-inbound": true, "network-bind": true,
}

// walk calls f on every list in forms, depth first.
func walk(forms []sexp, f func(sexp)) {
	for _, x := range forms {
		if x.list != nil {
			f(x)
			walk(x.list, f)
		}
	}
}

// What makes a Seatbelt profile spawn's, for every spec: well-formed; it
// starts from (deny default) and otherwise only allows, with operations
// Seatbelt has; every (param) it names is given, and every parameter is
// named; no path of the host is in its text; writes are allowed only under
// WRITE parameters; and the network is what NoNetwork and RelayPort say.
func TestSeatbeltProfileIsAnAllowlistOfParameters(t *testing.T) {
	for name, spec := range seatbeltCases() {
		t.Run(name, func(t *testing.T) {
			p := spec.Seatbelt()
			forms := parseProfile(t, p.Text)
			require.GreaterOrEqual(t, len(forms), 3)
			assert.Equal(t, "(version 1)", p.Text[:len("(version 1)")])
			assert.Equal(t, []sexp{{atom: "deny"}, {atom: "default"}}, forms[1].list, "the first rule denies everything")
			params := map[string]string{}
			for _, prm := range p.Params {
				params[prm.Name] = prm.Value
				assert.NotContains(t, p.Text, prm.Value, "the host's path %s is only a parameter", prm.Value)
			}
			used := map[string]bool{}
			for _, f := range forms[2:] {
				head := f.list[0].atom
				require.Equal(t, "allow", head, "every rule after the first allows")
				for _, op := range f.list[1:] {
					if op.atom != "" {
						assert.True(t, seatbeltOperations[op.atom], "unknown operation %q", op.atom)
					}
				}
				writes := false
				for _, op := range f.list[1:] {
					writes = writes || op.atom == "file-write*"
				}
				if writes {
					// A write rule's filters: WRITE parameters only, minus exceptions.
					var allowed []string
					walk(f.list[1:], func(x sexp) {
						if x.list[0].atom == "require-any" {
							for _, y := range x.list[1:] {
								allowed = append(allowed, y.String())
							}
						}
					})
					require.NotEmpty(t, allowed)
					for _, a := range allowed {
						assert.Regexp(t, `^\(subpath \(param "WRITE_\d+"\)\)$`, a)
					}
				}
			}
			walk(forms, func(x sexp) {
				if x.list[0].atom == "param" {
					name := strings.Trim(x.list[1].atom, `"`)
					_, ok := params[name]
					assert.True(t, ok, "(param %q) is given", name)
					used[name] = true
				}
			})
			for n := range params {
				assert.True(t, used[n], "parameter %s is named in the profile", n)
			}
			for _, w := range spec.Writable {
				assert.Contains(t, params, "WRITE_0", w)
			}
			network := regexp.MustCompile(`\(allow network-outbound \(remote ip "([^"]+)"\)\)`).FindAllStringSubmatch(p.Text, -1)
			switch {
			case spec.NoNetwork && spec.RelayPort > 0:
				require.Len(t, network, 1)
				assert.Equal(t, fmt.Sprintf("localhost:%d", spec.RelayPort), network[0][1], "the relay's port only")
				assert.NotContains(t, p.Text, "mDNSResponder")
				assert.NotContains(t, p.Text, "network-inbound")
			case spec.NoNetwork:
				assert.Empty(t, network)
				assert.NotContains(t, p.Text, "(remote ip")
			default:
				require.Len(t, network, 1)
				assert.Equal(t, "*:*", network[0][1])
			}
			assert.NotContains(t, p.Text, "com.apple.SecurityServer", "no keychain")
			assert.NotContains(t, p.Text, "user-preference", "no preferences of yours")
			assert.NotContains(t, p.Text, "pseudo-tty")
		})
	}
}

// A path is data: quotes, parentheses, a newline or a Seatbelt rule in
// the name of the worktree change nothing of the profile's text.
func TestAPathCannotChangeTheProfile(t *testing.T) {
	plain := Spec{SandboxExec: SandboxExec, Writable: []string{"/Users/u/src/repo"}, NoNetwork: true, resolve: noLinks}
	evil := plain
	evil.Writable = []string{"/Users/u/src/repo\") (allow file-write* (subpath \"\")) ;\n(allow network*) (\""}
	a, b := plain.Seatbelt(), evil.Seatbelt()
	assert.Equal(t, a.Text, b.Text)
	assert.NotContains(t, b.Text, "(allow network*)")
	assert.Equal(t, evil.Writable[0], b.Params[0].Value)
}

// What Seatbelt cannot do as bubblewrap does: a file shown at another path
// is not shown at all (denied, not widened); a file shown as /dev/null is
// masked in every rule, the writable ones too; a read-only path inside a
// writable one is not writable.
func TestSeatbeltMapsFilesToWhatItCanSay(t *testing.T) {
	s := Spec{SandboxExec: SandboxExec, resolve: noLinks,
		ReadOnly: []string{"/Users/u/w/.git/objects"},
		Writable: []string{"/Users/u/w"},
		Files:    []Bind{{Src: "/Users/u/hooks.json", Dst: "/Users/u/w/.claude/settings.json"}, {Src: "/dev/null", Dst: "/Users/u/w/.env"}, {Src: "/Users/u/relay.sock", Dst: "/Users/u/relay.sock"}}}
	p := s.Seatbelt()
	values := map[string]string{}
	for _, prm := range p.Params {
		values[prm.Value] = prm.Name
	}
	assert.NotContains(t, values, "/Users/u/hooks.json", "a file at another path is not shown")
	assert.NotContains(t, values, "/Users/u/w/.claude/settings.json")
	assert.Equal(t, "MASK_0", values["/Users/u/w/.env"])
	assert.Equal(t, "READ_1", values["/Users/u/relay.sock"], "a file at its own path is readable")
	assert.Equal(t, 3, strings.Count(p.Text, `(require-not (subpath (param "MASK_0")))`), "masked in each file rule")
	write := p.Text[strings.Index(p.Text, "file-write*"):]
	assert.Contains(t, write[:strings.Index(write, "\n(allow system-socket")], `(require-not (subpath (param "READ_0")))`,
		"the objects inside the writable directory stay read-only")
}

// Under Seatbelt, Wrap runs the command through sandbox-exec at its fixed
// path, with the profile and its parameters, the agent's argv after "--",
// its environment and directory as given.
func TestWrapRunsSandboxExecAtItsFixedPath(t *testing.T) {
	s := Spec{SandboxExec: SandboxExec, Writable: []string{"/Users/u/w"}, NoNetwork: true, RelayPort: 4000, resolve: noLinks}
	cmd := s.Wrap(runners.Command{Path: "claude", Args: []string{"-p", "x"}, Dir: "/Users/u/w", Env: []string{"A=1"}})
	assert.Equal(t, "/usr/bin/sandbox-exec", cmd.Path)
	assert.Equal(t, "/Users/u/w", cmd.Dir)
	assert.Equal(t, []string{"A=1"}, cmd.Env)
	require.GreaterOrEqual(t, len(cmd.Args), 6)
	assert.Equal(t, "-p", cmd.Args[0])
	assert.Equal(t, s.Seatbelt().Text, cmd.Args[1])
	assert.Equal(t, []string{"-D", "WRITE_0=/Users/u/w", "-D", "PARENT_0=/Users", "-D", "PARENT_1=/Users/u", "--", "claude", "-p", "x"}, cmd.Args[2:])
	c := s.Confine(proc.Cmd{Path: "/bin/true"})
	assert.Equal(t, "/usr/bin/sandbox-exec", c.Path)
	assert.Equal(t, "/bin/true", c.Args[len(c.Args)-1])
}
