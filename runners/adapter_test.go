package runners

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The contract every adapter keeps, checked without any CLI installed.
func TestEveryAdapterKeepsTheContract(t *testing.T) {
	reg := NewRegistry()
	require.Equal(t, []string{"claude", "codex", "gemini"}, reg.Names())
	families := map[Family]bool{}
	for _, a := range reg.Adapters() {
		t.Run(a.Name(), func(t *testing.T) {
			families[a.Family()] = true

			// # its names find it, in any case; its record name too
			for _, n := range append([]string{a.Name(), strings.ToUpper(a.Name()), a.Record()}, a.Aliases()...) {
				got, err := reg.Lookup(n)
				require.NoError(t, err, n)
				assert.Equal(t, a.Name(), got.Name())
			}
			got, ok := reg.ByRecord(a.Record())
			require.True(t, ok)
			assert.Equal(t, a.Name(), got.Name())

			// # pinned and installable
			in := a.Install()
			assert.NotEmpty(t, in.Command)
			assert.True(t, strings.HasPrefix(in.Package, "@"), in.Package)
			assert.Regexp(t, `^\d+\.\d+\.\d+$`, in.Pinned)

			// # its defaults are settings it accepts
			def := a.Defaults()
			require.NoError(t, a.Check(def))
			assert.Equal(t, in.Command, def.Command)

			// # its provider: a route, an upstream, a credential from the
			// user's variables alone
			p := a.Provider()
			assert.NotEmpty(t, p.Route)
			u, err := url.Parse(p.Default)
			require.NoError(t, err)
			assert.Equal(t, "https", u.Scheme)
			assert.True(t, p.Reads(p.BaseVar), "the base URL variable is the provider's")
			assert.NotEmpty(t, p.Paths)
			assert.Nil(t, p.Credential(Values{"HOME": t.TempDir(), "PATH": "/bin"}), "no credential in an empty environment")
			require.NotEmpty(t, p.CredentialVars)
			cred := p.Credential(Values{p.CredentialVars[0]: "user-key-0123456789"})
			require.NotNil(t, cred, "a credential from its first variable")
			h, err := cred()
			require.NoError(t, err)
			assert.Contains(t, h.Value, "user-key-0123456789")
			assert.NotEmpty(t, p.Missing)

			// # a seat of each role: its homes in its own directory, the
			// relay's URL and key in its environment, never in argv, and
			// never a CLI's bypass of its own permissions
			for _, role := range []SeatRole{RoleCoder, RoleReviewer} {
				for _, confined := range []bool{false, true} {
					dir := t.TempDir()
					ag, err := a.Seat(Seat{Role: role, Bin: "/opt/" + in.Command, Settings: def, Dir: dir,
						RelayURL: "http://127.0.0.1:9/" + p.Route, RelayKey: "spawn-relay-seatkey", Confined: confined,
						Permissions: Permissions{Mode: "acceptEdits", Allowed: []string{"Read", "Edit", "Bash(go test:*)"}}, SystemPrompt: "be brief"})
					require.NoError(t, err)
					env := strings.Join(ag.Env(), "\n")
					assert.Contains(t, env, "spawn-relay-seatkey")
					assert.Contains(t, env, "HOME="+filepath.Join(dir, "home"))
					cmd, err := ag.Command(Turn{Prompt: "do it", Dir: "/w"})
					require.NoError(t, err)
					argv := strings.Join(append([]string{cmd.Path}, cmd.Args...), " ")
					assert.NotContains(t, argv, "spawn-relay-seatkey", "the key is never in argv")
					for _, bypass := range []string{"--dangerously-skip-permissions", "bypassPermissions", "--yolo", "approval-mode yolo"} {
						assert.NotContains(t, argv, bypass)
					}
					if strings.Contains(argv, "danger-full-access") {
						assert.True(t, confined, "a CLI's own sandbox is off only inside spawn's: %s", argv)
					}
					if def.Model != "" {
						assert.Contains(t, argv, def.Model)
					}
					for _, e := range cmd.Env {
						assert.NotContains(t, e, "spawn-relay-seatkey", "the key is the seat's environment's, not the command's")
					}
				}
			}

			// # its sessions are folders of the seat's directory
			for _, s := range a.Sessions() {
				assert.False(t, filepath.IsAbs(s), s)
				assert.False(t, strings.HasPrefix(filepath.Clean(s), ".."), s)
			}

			// # a turn without a result is a crash; an answer refusing the
			// credential is auth
			ag, err := a.Seat(Seat{Role: RoleReviewer, Bin: in.Command, Settings: def, Dir: t.TempDir(), RelayURL: "http://127.0.0.1:9/x", RelayKey: "k"})
			require.NoError(t, err)
			now := time.Now()
			assert.Equal(t, FailureCrash, ag.Classify(nil, "boom\n", now).Kind)
			assert.Equal(t, FailureNone, ag.Classify(&Result{Text: "ok"}, "", now).Kind)
			assert.Equal(t, FailureAuth, ag.Classify(&Result{IsError: true, APIErrorStatus: 401, ErrorMessage: "invalid key"}, "", now).Kind)
		})
	}
	assert.Len(t, families, 3, "three model families")
}

// Each CLI's words for a spent usage limit are a usage limit.
func TestUsageLimitsAreToldApart(t *testing.T) {
	now := time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC)
	reg := NewRegistry()
	for _, tt := range []struct {
		cli string
		res Result
	}{
		{"claude", Result{IsError: true, APIErrorStatus: 429, Text: "API Error: Request rejected (429) · This request would exceed your account's usage limit."}},
		{"gemini", Result{IsError: true, APIErrorStatus: 429, ErrorMessage: "You have exhausted your daily quota on this model."}},
		{"codex", Result{IsError: true, APIErrorStatus: 429, ErrorMessage: "You've hit your usage limit. Upgrade to Pro, or try again at 9:17 PM."}},
	} {
		a, err := reg.Lookup(tt.cli)
		require.NoError(t, err)
		ag, err := a.Seat(Seat{Role: RoleCoder, Bin: tt.cli, Settings: a.Defaults(), Dir: t.TempDir(), RelayURL: "http://127.0.0.1:9/x", RelayKey: "k"})
		require.NoError(t, err)
		res := tt.res
		f := ag.Classify(&res, "", now)
		assert.Equal(t, FailureUsageLimit, f.Kind, tt.cli)
		if tt.cli == "codex" {
			assert.Equal(t, time.Date(2026, 11, 26, 21, 18, 0, 0, time.UTC), f.ResetAt, "codex says when")
		}
	}
}

// Settings an adapter does not take are refused with their key.
func TestBadSettingsAreRefusedByKey(t *testing.T) {
	reg := NewRegistry()
	for _, tt := range []struct {
		cli, key string
		edit     func(*Settings)
	}{
		{"claude", "allowed_tools", func(s *Settings) { s.AllowedTools = nil }},
		{"claude", "approval_mode", func(s *Settings) { s.ApprovalMode = "yolo" }},
		{"gemini", "model", func(s *Settings) { s.Model = "" }},
		{"gemini", "approval_mode", func(s *Settings) { s.ApprovalMode = "yolo" }},
		{"gemini", "excluded_tools", func(s *Settings) { s.ExcludedTools = []string{"a,b"} }},
		{"codex", "model", func(s *Settings) { s.Model = "" }},
		{"codex", "allowed_tools", func(s *Settings) { s.AllowedTools = []string{"exec_command"} }},
	} {
		a, err := reg.Lookup(tt.cli)
		require.NoError(t, err)
		s := a.Defaults()
		tt.edit(&s)
		var se *SettingsError
		require.True(t, errors.As(a.Check(s), &se), "%s %s", tt.cli, tt.key)
		assert.Equal(t, tt.key, se.Key)
	}
	_, err := reg.Lookup("cursor")
	require.Error(t, err)
	assert.Equal(t, `"cursor" is not an agent CLI spawn knows; use one of claude, codex, gemini`, err.Error())
}

// A seat's agent is made in its directory and writes nothing outside it.
func TestASeatWritesOnlyItsDirectory(t *testing.T) {
	reg := NewRegistry()
	for _, a := range reg.Adapters() {
		parent := t.TempDir()
		dir := filepath.Join(parent, "seat")
		require.NoError(t, os.Mkdir(dir, 0o700))
		_, err := a.Seat(Seat{Role: RoleReviewer, Bin: a.Install().Command, Settings: a.Defaults(), Dir: dir, RelayURL: "http://127.0.0.1:9/x", RelayKey: "k"})
		require.NoError(t, err)
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		assert.Equal(t, []string{"seat"}, slices.Collect(func(yield func(string) bool) {
			for _, e := range entries {
				if !yield(e.Name()) {
					return
				}
			}
		}), a.Name())
	}
}
