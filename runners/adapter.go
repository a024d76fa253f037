package runners

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/relay"
)

// Family is a model family: a reviewer of the coder's own family shares
// its blind spots.
type Family string

// The model families of the CLIs spawn drives.
const (
	FamilyAnthropic Family = "anthropic"
	FamilyOpenAI    Family = "openai"
	FamilyGoogle    Family = "google"
)

// SeatRole is what an agent does in a run.
type SeatRole string

// The roles of a seat.
const (
	RoleCoder    SeatRole = "coder"
	RoleReviewer SeatRole = "reviewer"
)

// Adapter is everything spawn knows of one agent CLI: its name and family,
// how it is installed, the model API it calls and the credential that API
// takes, and how to make the agent of a coder or a reviewer seat. Outside
// package runners, no code names a CLI: it asks the CLI's Adapter.
type Adapter interface {
	// Name is the CLI's name in configuration, flags and the registry
	// ("claude"); Aliases are other names users write ("claude-code").
	Name() string
	Aliases() []string
	// Record is the agent's name in records ("claude-code").
	Record() string
	Family() Family
	Install() Install
	// Provider is the model API the CLI calls, through spawn's relay.
	Provider() Provider
	// Defaults is the CLI's configuration table ([runners.<name>]); Check
	// says what is wrong with a table the user wrote (a *SettingsError
	// naming its key), nil when the CLI can run with it.
	Defaults() Settings
	Check(s Settings) error
	// Seat makes the agent of one seat. Its directory exists.
	Seat(s Seat) (Agent, error)
	// Sessions are the folders, relative to a seat's directory, that hold
	// the CLI's sessions: kept between spawn processes for spawn resume.
	Sessions() []string
	// Parse reads a transcript of the CLI's stream (as a seat's agent's
	// Parse does).
	Parse(r io.Reader, emit func(Event)) error
}

// Install says how a CLI is installed and which version spawn is tested
// with (agents/package.json pins it).
type Install struct {
	Command string // the binary's name
	Package string // the npm package
	Pinned  string // the version
}

// Provider is a model API behind spawn's relay: the relay's route for it,
// the variable that names another upstream (a company gateway), its
// default base, the paths a CLI needs, and the user's credential for it.
type Provider struct {
	Route   string // the relay's route name: "anthropic"
	BaseVar string // "ANTHROPIC_BASE_URL"
	Default string // "https://api.anthropic.com"
	Paths   []relay.Path
	// Credential finds the user's credential among the values of
	// CredentialVars (an unset one is absent from vars), as the relay adds
	// it to each request; nil when they hold none.
	Credential func(vars Values) func() (relay.Header, error)
	// CredentialVars are the user's environment variables Credential
	// reads, first choice first: the caller reads them once, with BaseVar,
	// and hands Credential their values.
	CredentialVars []string
	// Missing says what to set when there is no credential.
	Missing string
	// Vars are the user's environment variables the CLI reads for this
	// API (its credentials, its base URL, its settings): names, or
	// prefixes ending in "*".
	Vars []string
}

// Values are environment variables' values by name, as the caller read
// them once (the variables providers name: BaseVar, CredentialVars); a
// variable that is not set is absent.
type Values map[string]string

// Get is name's value, "" when it is not set.
func (v Values) Get(name string) string { return v[name] }

// Reads reports whether the variable name is one of p's Vars.
func (p Provider) Reads(name string) bool {
	for _, v := range p.Vars {
		if prefix, ok := strings.CutSuffix(v, "*"); ok && strings.HasPrefix(name, prefix) || v == name {
			return true
		}
	}
	return false
}

// Settings configure a CLI ([runners.<name>] of spawn-team.toml).
type Settings struct {
	Command string `toml:"command"`
	// Model is the model the CLI runs; "" means the CLI's default (where
	// the CLI has one spawn can rely on).
	Model string `toml:"model"`
	// MaxRetries bounds the CLI's own retries of a failed model call; 0 is
	// none.
	MaxRetries int `toml:"max_retries"`
	// ApprovalMode is gemini's --approval-mode of a reviewer seat.
	ApprovalMode string `toml:"approval_mode,omitempty"`
	// AllowedTools are the only tools a reviewer seat of this CLI is
	// offered (read-only ones), in the CLI's own names; ExcludedTools are
	// never offered. Not every CLI takes them (codex's reviewer is
	// read-only by its sandbox).
	AllowedTools  []string `toml:"allowed_tools,omitempty"`
	ExcludedTools []string `toml:"excluded_tools,omitempty"`
}

// SettingsError is a bad value in a CLI's settings: Key is its key in
// the [runners.<name>] table.
type SettingsError struct{ Key, Msg string }

func (e *SettingsError) Error() string { return e.Key + ": " + e.Msg }

// checkTools checks a list of tool names: none empty, none holding a comma
// or a line break.
func checkTools(key string, tools []string) error {
	for _, t := range tools {
		if strings.TrimSpace(t) == "" || strings.ContainsAny(t, ",\n") {
			return &SettingsError{Key: key, Msg: fmt.Sprintf("holds %q, which is not a tool name", t)}
		}
	}
	return nil
}

// Permissions are the coder's tool manifest, in claude's rule grammar
// ([permissions] of spawn-team.toml): each adapter says what it makes of
// it.
type Permissions struct {
	Mode    string
	Allowed []string
	Denied  []string
}

// Seat is one agent of a run, as the adapter needs it to build its agent.
type Seat struct {
	Role     SeatRole
	Bin      string // the CLI's binary, as the preflight found it
	Settings Settings
	// Dir is the seat's private directory (it exists): the adapter keeps
	// its home, temporary files and state in it.
	Dir string
	// RelayURL is the base URL of the provider's route on the relay, and
	// RelayKey the key the relay gave this seat for it.
	RelayURL, RelayKey string
	// Confined says spawn's own sandbox (bubblewrap) is around the agent:
	// a CLI's own sandbox may then be off, spawn's is the boundary.
	Confined bool
	// Permissions are the coder's; SystemPrompt is appended to the CLI's
	// own; Hooks is a settings file of spawn's hooks ("" none), for a CLI
	// that has them (HookSettings).
	Permissions  Permissions
	SystemPrompt string
	Hooks        string
}

// Agent is one seat's agent: its command for a turn, the parser of its
// stream, the environment it runs with and where it keeps what a resumed
// session needs.
type Agent interface {
	Command(t Turn) (Command, error)
	Parse(r io.Reader, emit func(Event)) error
	// Env is the seat's environment: its homes, the relay's URL and key.
	Env() []string
	// Classify says why a turn failed (FailureNone when it did not).
	Classify(res *Result, stderr string, now time.Time) Failure
}

// Hooker is an adapter whose CLI runs spawn's hooks during a coder's
// turn: HookSettings is the settings file that has the CLI run exe with
// the hook arguments args (HookCall), given to its Seat as Hooks, when
// the shell condition when succeeds ("": always; see hook.ClaudeSettings).
type Hooker interface {
	HookSettings(exe, when string, args ...string) ([]byte, error)
}

// Noter is an agent with something to say of how it runs that the run's
// record should keep: a CLI's own sandbox left off inside spawn's.
type Noter interface {
	Note() string
}

// Offered is what a seat's agent is offered, for the record, when its
// CLI does not report its tools.
type Offered interface {
	Offered() []string
}

// LegacyCoder is the CLI that coded every run whose record is older than
// its seats: spawn's only coder then.
const LegacyCoder = "claude"

// Registry maps a CLI's name (or alias) to its adapter. It is a value,
// built once and passed down.
type Registry struct {
	adapters []Adapter
}

// NewRegistry is the registry of the CLIs spawn drives.
func NewRegistry() Registry {
	return Registry{adapters: []Adapter{claudeAdapter{}, codexAdapter{}, geminiAdapter{}}}
}

// Names are the CLIs' names, sorted.
func (r Registry) Names() []string {
	var names []string
	for _, a := range r.adapters {
		names = append(names, a.Name())
	}
	sort.Strings(names)
	return names
}

// Adapters are every adapter, in the order of Names.
func (r Registry) Adapters() []Adapter {
	out := slices.Clone(r.adapters)
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Lookup returns the adapter name (or one of its aliases) names. An
// unknown name is an error that lists the known ones.
func (r Registry) Lookup(name string) (Adapter, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, a := range r.adapters {
		if a.Name() == n || slices.Contains(a.Aliases(), n) || a.Record() == n {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%q is not an agent CLI spawn knows; use one of %s", name, strings.Join(r.Names(), ", "))
}

// ByRecord returns the adapter whose records name the agent record.
func (r Registry) ByRecord(record string) (Adapter, bool) {
	for _, a := range r.adapters {
		if a.Record() == record {
			return a, true
		}
	}
	return nil, false
}
