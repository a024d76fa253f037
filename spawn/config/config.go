// Package config is spawn's configuration: the Config type, its built-in
// defaults, and Load, which layers defaults < file < SPAWN_* environment
// variables < flag overrides and validates the result once, before anything
// is created. Every problem is an *Error that names where the bad value came
// from: the file and line, the environment variable, or the flag.
package config

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// File is the name spawn looks for in the repository and in
// $XDG_CONFIG_HOME/spawn.
const File = "spawn-team.toml"

// Config is spawn's configuration.
type Config struct {
	Team        Team        `toml:"spawn-team"`
	Spawn       Limits      `toml:"spawn"`
	Permissions Permissions `toml:"permissions"`
	Runners     Runners     `toml:"-"`
	Sandbox     Sandbox     `toml:"sandbox"`
	GitHub      GitHub      `toml:"github"`
	// Observability is what spawn keeps of a run beside its record.
	Observability Observability `toml:"observability"`
}

// Observability is what spawn keeps of a run beside its record.
type Observability struct {
	// Cassette keeps the run's model traffic, redacted and compressed, in
	// its run directory, for spawn replay.
	Cassette bool `toml:"cassette"`
}

// GitHub configures github mode and spawn pr (package team/github).
type GitHub struct {
	// Remote is the git remote spawn pushes the run's branch to; its URL
	// names the repository on GitHub (GITHUB_REPOSITORY overrides that).
	Remote string `toml:"remote"`
	// Draft opens the pull request as a draft, marked ready for review
	// once the reviewers approve.
	Draft bool `toml:"draft"`
	// PRBase is the pull request's base branch; "" means the branch --base
	// names, else the repository's default branch.
	PRBase string `toml:"pr_base"`
	// MinWriteInterval spaces spawn's writes to GitHub (reviews, replies,
	// statuses), as GitHub asks of integrations.
	MinWriteInterval time.Duration `toml:"min_write_interval"`
	// TrustedAuthors are logins whose review threads spawn pr acts on,
	// besides the repository's writers, maintainers and admins.
	TrustedAuthors []string `toml:"trusted_authors"`
	// ResolveHumanThreads lets spawn pr resolve a person's thread once
	// fixed; otherwise it replies and leaves resolving to them.
	ResolveHumanThreads bool `toml:"resolve_human_threads"`
	// VerifyFixes has spawn pr's reviewer check the coder's fix of each
	// thread before spawn says it is fixed; a thread it finds still open
	// is answered so and the coder gets another turn, up to
	// [spawn-team] max_iterations turns. Off: one coder turn, and each
	// thread is answered with the commits, unverified.
	VerifyFixes bool `toml:"verify_fixes"`
	// AllowCIChanges lets github mode and spawn pr push a change to CI
	// configuration (.github/workflows/ and the like), which runs with
	// the repository's secrets once pushed; off, such a push is refused.
	AllowCIChanges bool `toml:"allow_ci_changes"`
}

// Sandbox configures how the agents are confined (package isolation).
type Sandbox struct {
	// Isolation is auto (bubblewrap when it works, else none, said loudly),
	// bwrap (fail closed without it) or none.
	Isolation isolation.Mode `toml:"isolation"`
	// Network is auto (model-only under bubblewrap, open without it), open,
	// or model-only: the agents reach nothing but the run's model relay.
	Network isolation.Network `toml:"network"`
	// MaxProcesses, MaxMemory and MaxDisk bound each agent's process tree:
	// the processes it holds at once, its memory, and what it writes (of
	// its filesystems' free space); 0 is no limit. An agent that reaches
	// one is stopped, its work kept.
	MaxProcesses int  `toml:"max_processes"`
	MaxMemory    Size `toml:"max_memory"`
	MaxDisk      Size `toml:"max_disk"`
	// Cache is where the coder's toolchain caches (Go's build cache, npm's,
	// pip's) live: "repository" (kept by spawn for each repository, shared
	// by its runs), "shared" (one for all of the user's repositories) or
	// "none" (fresh for every agent). Never the user's own caches.
	Cache isolation.Cache `toml:"cache"`
}

// Size is a number of bytes, written in a file as "8GiB", "512MiB" or a
// plain integer.
type Size int64

// UnmarshalText reads a size with its unit.
func (s *Size) UnmarshalText(b []byte) error {
	n, err := isolation.ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

// MarshalText writes the size in binary units.
func (s Size) MarshalText() ([]byte, error) { return []byte(isolation.Size(int64(s))), nil }

// Limits are the sandbox's per-agent limits.
func (s Sandbox) Limits() isolation.Limits {
	return isolation.Limits{Processes: s.MaxProcesses, Memory: int64(s.MaxMemory), Disk: int64(s.MaxDisk)}
}

// Team configures the orchestrator.
type Team struct {
	Mode          observability.Mode `toml:"mode"`
	MaxIterations int                `toml:"max_iterations"`
	// Coder is the coder's agent CLI (a registry name: "claude", "codex",
	// "gemini"). primary_llm is its older name.
	Coder string `toml:"coder"`
	// Reviewers are the review board's agent CLIs, a seat each.
	// reviewer_llm is the older name of a board of one.
	Reviewers []string `toml:"reviewers"`
	// Board is how the board decides a round: "unanimous" (every seat
	// approves) or "majority" (more than half do). BlockAt is the severity
	// at and above which an open finding blocks approval whatever the seats
	// say ("none": none blocks).
	Board   string `toml:"board"`
	BlockAt string `toml:"block_at"`
	// SameFamily lets a reviewer of the coder's own model family sit on the
	// board (a model reviewing itself shares its blind spots).
	SameFamily             bool     `toml:"same_family"`
	MaxEscalations         int      `toml:"max_escalations"`
	ReviewDomains          []string `toml:"review_domains"`
	ParallelReviewers      bool     `toml:"parallel_reviewers"`
	MaxConcurrentReviewers int      `toml:"max_concurrent_reviewers"`

	// PrimaryLLM and ReviewerLLM are the older names of coder and
	// reviewers, kept working; Load folds them in.
	PrimaryLLM  string `toml:"primary_llm" legacy:"coder"`
	ReviewerLLM string `toml:"reviewer_llm" legacy:"reviewers"`
}

// Limits bounds one agent run.
type Limits struct {
	IdleTimeout    time.Duration `toml:"idle_timeout"`
	TotalTimeout   time.Duration `toml:"total_timeout"`
	ToolTimeout    time.Duration `toml:"tool_timeout"` // replaces IdleTimeout while a tool call runs
	MaxTurns       int           `toml:"max_turns"`
	MaxCostUSD     float64       `toml:"max_cost_usd"`
	MaxAutoAnswers int           `toml:"max_auto_answers"`
	// QuestionConfidence is the question detector's score (0 to 1) at which
	// a coder that stopped with a question is answered.
	QuestionConfidence float64 `toml:"question_confidence"`
	// QuestionPatterns are extra regular expressions that signal a question.
	QuestionPatterns []string `toml:"question_patterns"`
	// AutoAnswer is what the coder is told; "" means the built-in answer.
	AutoAnswer string `toml:"auto_answer"`
	// WaitForQuota is how long a run may wait, in all, for an agent's
	// usage limit to reset before it goes on; 0 ends the turn at the limit
	// (spawn resume goes on later).
	WaitForQuota time.Duration `toml:"wait_for_quota"`
}

// Permissions is the coder's tool manifest.
type Permissions struct {
	// Mode is claude's --permission-mode. bypassPermissions is refused.
	Mode         string   `toml:"mode"`
	AllowedTools []string `toml:"allowed_tools"`
	Escalatable  []string `toml:"escalatable"`
	DeniedTools  []string `toml:"denied_tools"`
}

// Runners configures the agent CLIs: [runners.<name>] for each CLI of the
// registry (runners.NewRegistry), each starting from its adapter's
// Defaults.
type Runners map[string]runners.Settings

// Get is the settings of the CLI name.
func (r Runners) Get(name string) runners.Settings { return r[name] }

// Set replaces the settings of the CLI name.
func (r Runners) Set(name string, s runners.Settings) { r[name] = s }

// Edit changes the settings of the CLI name with edit.
func (r Runners) Edit(name string, edit func(*runners.Settings)) {
	s := r[name]
	edit(&s)
	r[name] = s
}

// Default returns the built-in configuration; spawn-team.toml at the root
// of spawn's repository documents the same values.
func Default() Config {
	return Config{
		Team: Team{
			Mode:                   observability.ModePingpong,
			MaxIterations:          3,
			Coder:                  "claude",
			Reviewers:              []string{"gemini"},
			Board:                  BoardUnanimous,
			BlockAt:                string(observability.SeverityHigh),
			MaxEscalations:         5,
			ReviewDomains:          []string{"security", "technical_feasibility", "general_polish"},
			MaxConcurrentReviewers: 3,
		},
		Spawn: Limits{
			IdleTimeout:        5 * time.Minute,
			TotalTimeout:       30 * time.Minute,
			ToolTimeout:        20 * time.Minute,
			MaxAutoAnswers:     2,
			QuestionConfidence: 0.6,
			QuestionPatterns:   []string{},
		},
		Permissions: Permissions{
			Mode:         "acceptEdits",
			AllowedTools: []string{"Read", "Edit", "Write", "Glob", "Grep", "Bash(go test:*)"},
			Escalatable:  []string{"Bash(go build:*)", "Bash(make:*)"},
			DeniedTools:  []string{"WebFetch", "WebSearch"},
		},
		Runners: defaultRunners(),
		Sandbox: Sandbox{Isolation: isolation.ModeAuto, Network: isolation.NetworkAuto,
			MaxProcesses: 4096, MaxMemory: 8 << 30, MaxDisk: 20 << 30, Cache: isolation.CacheRepository},
		GitHub:        GitHub{Remote: "origin", Draft: true, MinWriteInterval: time.Second, TrustedAuthors: []string{}, VerifyFixes: true},
		Observability: Observability{Cassette: true},
	}
}

// The board's rules.
const (
	BoardUnanimous = "unanimous"
	BoardMajority  = "majority"
)

// defaultRunners are every CLI's defaults.
func defaultRunners() Runners {
	r := Runners{}
	for _, a := range runners.NewRegistry().Adapters() {
		r[a.Name()] = a.Defaults()
	}
	return r
}

// Clone is a copy of c that shares no list or map with it.
func (c Config) Clone() Config {
	out := c
	out.Runners = Runners{}
	for k, v := range c.Runners {
		v.AllowedTools, v.ExcludedTools = slices.Clone(v.AllowedTools), slices.Clone(v.ExcludedTools)
		out.Runners[k] = v
	}
	out.Team.Reviewers = slices.Clone(c.Team.Reviewers)
	out.Team.ReviewDomains = slices.Clone(c.Team.ReviewDomains)
	out.Permissions.AllowedTools = slices.Clone(c.Permissions.AllowedTools)
	out.Permissions.Escalatable = slices.Clone(c.Permissions.Escalatable)
	out.Permissions.DeniedTools = slices.Clone(c.Permissions.DeniedTools)
	out.GitHub.TrustedAuthors = slices.Clone(c.GitHub.TrustedAuthors)
	out.Spawn.QuestionPatterns = slices.Clone(c.Spawn.QuestionPatterns)
	return out
}

// Error is a configuration problem: a file that does not parse, an unknown
// key, a bad value. It names where the problem is.
type Error struct {
	File string // the file, or "" for the environment or flags
	Line int    // 0 when unknown
	Key  string // the key, the environment variable, or the flag
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "%s: ", e.Key)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Overrides are the values flags set. An empty string or a nil pointer
// sets nothing; a pointer set to zero sets zero (--max-turns 0 lifts a
// file's limit).
type Overrides struct {
	Mode          observability.Mode // --mode
	MaxIterations *int               // --max-iterations
	IdleTimeout   *time.Duration     // --idle-timeout
	TotalTimeout  *time.Duration     // --total-timeout
	ToolTimeout   *time.Duration     // --tool-timeout
	MaxTurns      *int               // --max-turns
	MaxCostUSD    *float64           // --max-cost
	Model         string             // --model: the coder's model
	Coder         string             // --coder
	Reviewers     []string           // --reviewer, repeated
	PRBase        string             // --pr-base
}

// flagKeys names the flag that sets each key, for error messages.
var flagKeys = map[string]string{
	"spawn-team.mode":           "--mode",
	"spawn-team.max_iterations": "--max-iterations",
	"spawn.idle_timeout":        "--idle-timeout",
	"spawn.total_timeout":       "--total-timeout",
	"spawn.tool_timeout":        "--tool-timeout",
	"spawn.max_turns":           "--max-turns",
	"spawn.max_cost_usd":        "--max-cost",
	"github.pr_base":            "--pr-base",
	"spawn-team.coder":          "--coder",
	"spawn-team.reviewers":      "--reviewer",
}

func (o Overrides) apply(c *Config, set map[string]string) {
	if o.Mode != "" {
		c.Team.Mode, set["spawn-team.mode"] = o.Mode, flagKeys["spawn-team.mode"]
	}
	override(o.MaxIterations, &c.Team.MaxIterations, "spawn-team.max_iterations", set)
	override(o.IdleTimeout, &c.Spawn.IdleTimeout, "spawn.idle_timeout", set)
	override(o.TotalTimeout, &c.Spawn.TotalTimeout, "spawn.total_timeout", set)
	override(o.ToolTimeout, &c.Spawn.ToolTimeout, "spawn.tool_timeout", set)
	override(o.MaxTurns, &c.Spawn.MaxTurns, "spawn.max_turns", set)
	override(o.MaxCostUSD, &c.Spawn.MaxCostUSD, "spawn.max_cost_usd", set)
	if o.PRBase != "" {
		c.GitHub.PRBase, set["github.pr_base"] = o.PRBase, flagKeys["github.pr_base"]
	}
	if o.Coder != "" {
		c.Team.Coder, set["spawn-team.coder"] = o.Coder, flagKeys["spawn-team.coder"]
	}
	if len(o.Reviewers) > 0 {
		c.Team.Reviewers, set["spawn-team.reviewers"] = slices.Clone(o.Reviewers), flagKeys["spawn-team.reviewers"]
	}
	if o.Model != "" {
		name := canonical(c.Team.Coder)
		rs := c.Runners.Get(name)
		rs.Model = o.Model
		c.Runners.Set(name, rs)
		set["runners."+name+".model"] = "--model"
	}
}

// canonical is the registry's name of the CLI name (an alias, in any case),
// name itself when the registry does not know it.
func canonical(name string) string {
	if a, err := runners.NewRegistry().Lookup(name); err == nil {
		return a.Name()
	}
	return name
}

// override sets *dst to *v when v is set, and notes that key's flag set it.
func override[T any](v *T, dst *T, key string, set map[string]string) {
	if v != nil {
		*dst, set[key] = *v, flagKeys[key]
	}
}

// Flag is the flag of spawn run (and spawn resume) that sets key, "" when
// none does.
func Flag(key string) string { return flagKeys[key] }

// EnvVar is the SPAWN_* environment variable that sets key, "" when none
// does.
func EnvVar(key string) string {
	for _, v := range envVars {
		if v.key == key {
			return v.name
		}
	}
	return ""
}

// Ways says every way to set key, for a message that tells the user how to
// change it: "--idle-timeout, idle_timeout in [spawn] of spawn-team.toml,
// or SPAWN_IDLE_TIMEOUT".
func Ways(key string) string {
	var ways []string
	if f := Flag(key); f != "" {
		ways = append(ways, f)
	}
	if i := strings.LastIndex(key, "."); i >= 0 {
		ways = append(ways, fmt.Sprintf("%s in [%s] of %s", key[i+1:], key[:i], File))
	} else {
		ways = append(ways, key+" in "+File)
	}
	if v := EnvVar(key); v != "" {
		ways = append(ways, v)
	}
	if len(ways) == 1 {
		return ways[0]
	}
	return strings.Join(ways[:len(ways)-1], ", ") + " or " + ways[len(ways)-1]
}

// Source says where Load reads the configuration from.
type Source struct {
	// File is the file --config names; "" means the user's own file
	// ($XDG_CONFIG_HOME/spawn/spawn-team.toml), when there is one.
	File string
	// RepoDir is a directory inside the repository ("" is the current one).
	RepoDir string
	// Top is the top of the work tree that holds RepoDir, when the caller
	// has found it already (runs.Repo.WorkTree): Load then runs no git to
	// find the repository's file. "" has Load find it.
	Top string
	// Env is the environment: SPAWN_* variables, XDG_CONFIG_HOME, HOME
	// (ReadEnvironment).
	Env []string
	// Flags are the flag overrides, applied last.
	Flags Overrides
}

// Loaded is a configuration and where it came from.
type Loaded struct {
	Config Config
	// Files are the files read, in the order applied: the user's own (or
	// the one --config names), then the repository's.
	Files []string
	// Notes say what the repository's file asked for that would have
	// lowered spawn's security, and what spawn kept instead: one sentence
	// each.
	Notes []string
}

// Load assembles the configuration: the built-in defaults, then the
// user's own file (the one --config names, else
// $XDG_CONFIG_HOME/spawn/spawn-team.toml, ~/.config when unset), then the
// repository's spawn-team.toml, then the SPAWN_* variables of src.Env,
// then src.Flags. It validates the result once, at the end. An error is
// an *Error naming the file and line, the variable or the flag that set
// the bad value.
//
// The repository's file is the repository's word, and the repository may
// be anyone's (a pull request, an injected change): it may choose the
// mode, the domains, the models, and tighten security, never lower it. A
// value of its that would lower isolation, open the network, name an
// agent's binary, widen the tools, raise a budget or a limit, or trust
// more GitHub authors is not applied: the stricter value stays, and Notes
// says so. Only the user's own file, the environment and flags can loosen.
func Load(ctx context.Context, src Source) (Loaded, error) {
	dir := src.RepoDir
	if dir == "" {
		dir = "."
	}
	top := src.Top
	if top == "" {
		top = dir
		if repo, err := git.Open(ctx, dir, src.Env); err == nil {
			top = repo.Dir
		}
	}
	user, repoFile, err := Files(src.File, top, ReadEnvironment(src.Env))
	if err != nil {
		return Loaded{}, err
	}
	out := Loaded{Config: Default()}
	data := map[string][]byte{}
	for _, path := range []string{user, repoFile} {
		if path == "" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return Loaded{}, &Error{File: path, Msg: fmt.Sprintf("cannot read the configuration file (%v); check the path", err)}
		}
		data[path] = b
		out.Files = append(out.Files, path)
		next, md, err := decodeFile(path, b, out.Config)
		if err != nil {
			return Loaded{}, err
		}
		if path == repoFile {
			var notes []string
			next, notes = tighten(out.Config, next, md, path)
			out.Notes = append(out.Notes, notes...)
		}
		out.Config = next
	}
	set := map[string]string{} // key -> the variable or flag that set it last
	if err := applyEnv(&out.Config, src.Env, set); err != nil {
		return Loaded{}, err
	}
	src.Flags.apply(&out.Config, set)
	if err := out.Config.Validate(); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			if by, ok := set[ce.Key]; ok {
				ce.Key = by
			} else {
				for i := len(out.Files) - 1; i >= 0; i-- {
					if line := keyLine(data[out.Files[i]], ce.Key); line > 0 {
						ce.File, ce.Line = out.Files[i], line
						break
					}
				}
			}
		}
		return Loaded{}, err
	}
	return out, nil
}

// Files returns the configuration files to load, the user's first: the
// user's own (explicit when set, which must exist; else
// $XDG_CONFIG_HOME/spawn/spawn-team.toml, ~/.config when unset) and the
// repository's <repo>/spawn-team.toml. "" stands for one that does not
// exist.
func Files(explicit, repo string, env Environment) (user, inRepo string, err error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", "", &Error{File: explicit, Msg: "cannot read the configuration file; check the --config path"}
		}
		user = explicit
	} else {
		xdg := env.ConfigHome
		if xdg == "" && env.Home != "" {
			xdg = filepath.Join(env.Home, ".config")
		}
		if xdg != "" {
			if p := filepath.Join(xdg, "spawn", File); exists(p) {
				user = p
			}
		}
	}
	if p := filepath.Join(repo, File); exists(p) && !sameFile(p, user) {
		inRepo = p
	}
	return user, inRepo, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func sameFile(a, b string) bool {
	if b == "" {
		return false
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// decodeFile decodes a file's data over base strictly: unknown keys, wrong
// types and bad durations are an *Error naming the file, key and line. A
// list the file sets replaces the default list; it is not merged into it.
func decodeFile(path string, data []byte, base Config) (Config, toml.MetaData, error) {
	base = base.Clone()
	cfg := base.Clone()
	cfg.Team.ReviewDomains, cfg.Permissions.AllowedTools = nil, nil
	cfg.Permissions.Escalatable, cfg.Permissions.DeniedTools = nil, nil
	cfg.GitHub.TrustedAuthors, cfg.Spawn.QuestionPatterns = nil, nil
	cfg.Team.Reviewers = nil
	var file struct {
		Config
		Runners map[string]toml.Primitive `toml:"runners"`
	}
	file.Config = cfg
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&file)
	if err != nil {
		return base, md, decodeError(path, err)
	}
	cfg = file.Config
	cfg.Runners = base.Clone().Runners
	reg := runners.NewRegistry()
	for name, prim := range file.Runners {
		a, err := reg.Lookup(name)
		if err != nil {
			return base, md, &Error{File: path, Line: keyLine(data, "runners."+name), Key: "runners." + name, Msg: err.Error()}
		}
		rs := cfg.Runners.Get(a.Name())
		keep := struct{ allowed, excluded []string }{rs.AllowedTools, rs.ExcludedTools}
		rs.AllowedTools, rs.ExcludedTools = nil, nil
		if err := md.PrimitiveDecode(prim, &rs); err != nil {
			return base, md, decodeError(path, err)
		}
		if !md.IsDefined("runners", name, "allowed_tools") {
			rs.AllowedTools = keep.allowed
		}
		if !md.IsDefined("runners", name, "excluded_tools") {
			rs.ExcludedTools = keep.excluded
		}
		cfg.Runners.Set(a.Name(), rs)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		key := undecoded[0].String()
		return base, md, &Error{File: path, Line: keyLine(data, key), Key: key, Msg: unknownKey(key)}
	}
	if err := integerDurations(path, data, md); err != nil {
		return base, md, err
	}
	for _, keep := range []struct {
		key  []string
		dst  *[]string
		from []string
	}{
		{[]string{"spawn-team", "review_domains"}, &cfg.Team.ReviewDomains, base.Team.ReviewDomains},
		{[]string{"spawn-team", "reviewers"}, &cfg.Team.Reviewers, base.Team.Reviewers},
		{[]string{"permissions", "allowed_tools"}, &cfg.Permissions.AllowedTools, base.Permissions.AllowedTools},
		{[]string{"permissions", "escalatable"}, &cfg.Permissions.Escalatable, base.Permissions.Escalatable},
		{[]string{"permissions", "denied_tools"}, &cfg.Permissions.DeniedTools, base.Permissions.DeniedTools},
		{[]string{"github", "trusted_authors"}, &cfg.GitHub.TrustedAuthors, base.GitHub.TrustedAuthors},
		{[]string{"spawn", "question_patterns"}, &cfg.Spawn.QuestionPatterns, base.Spawn.QuestionPatterns},
	} {
		if !md.IsDefined(keep.key...) {
			*keep.dst = keep.from
		}
	}
	// The older names: primary_llm and reviewer_llm, unless the file names
	// the coder and the reviewers the new way.
	if cfg.Team.PrimaryLLM != "" && !md.IsDefined("spawn-team", "coder") {
		cfg.Team.Coder = cfg.Team.PrimaryLLM
	}
	if cfg.Team.ReviewerLLM != "" && !md.IsDefined("spawn-team", "reviewers") {
		cfg.Team.Reviewers = []string{cfg.Team.ReviewerLLM}
	}
	cfg.Team.PrimaryLLM, cfg.Team.ReviewerLLM = "", ""
	return cfg, md, nil
}

var tomlErrRE = lazy.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): (.*)$`)

func decodeError(path string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{File: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: valueMessage(pe.LastKey, pe.Message)}
	}
	if m := tomlErrRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: path, Line: line, Key: m[2], Msg: valueMessage(m[2], m[3])}
	}
	return &Error{File: path, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

// wrongValueRE matches the TOML decoder's words for a value of the wrong
// type or a duration it cannot read.
var wrongValueRE = lazy.MustCompile(`^incompatible types: TOML value has type (\w+); destination has type \w+$|^invalid duration`)

// valueMessage is the decoder's message about key's value made into what
// the user must write: the kind of value key wants, with an example. Other
// messages are returned as they are.
func valueMessage(key, msg string) string {
	if !wrongValueRE.MatchString(msg) {
		return msg
	}
	want, example := wanted(key)
	if want == "" {
		return msg
	}
	got := ""
	if m := wrongValueRE.FindStringSubmatch(msg); m != nil && m[1] != "" {
		got = map[string]string{"string": "a string", "int64": "a whole number", "float64": "a decimal number", "bool": "a boolean (true or false)",
			"[]interface {}": "a list", "map[string]interface {}": "a table"}[m[1]]
	}
	if got != "" {
		return fmt.Sprintf("is %s, and must be %s, such as %s = %s", got, want, key[strings.LastIndex(key, ".")+1:], example)
	}
	return fmt.Sprintf("must be %s, such as %s = %s", want, key[strings.LastIndex(key, ".")+1:], example)
}

// keyLine finds the line that sets a dotted key ("spawn.idle_timeout") in a
// TOML document, or 0. It reads table headers and key = value lines, which is
// all a spawn-team.toml holds. The decoder knows each key's position, but
// BurntSushi/toml (v1.6.0, its latest release) keeps it unexported in
// MetaData, so the line is found here.
func keyLine(data []byte, key string) int {
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "["):
			table = strings.Trim(strings.TrimSpace(strings.SplitN(line, "#", 2)[0]), "[]")
			table = strings.ReplaceAll(strings.TrimSpace(table), `"`, "")
			if table == key {
				return n
			}
		case strings.Contains(line, "="):
			k := strings.Trim(strings.TrimSpace(strings.SplitN(line, "=", 2)[0]), `"`)
			full := k
			if table != "" {
				full = table + "." + k
			}
			if full == key {
				return n
			}
		}
	}
	return 0
}

// Validate checks every value, every tool rule and every pattern: a
// configuration that passes is one spawn can run with. The error is an
// *Error naming the key.
func (c Config) Validate() error {
	bad := func(key, format string, args ...any) error {
		return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if err := c.validateAgents(); err != nil {
		return err
	}
	if _, err := observability.ParseMode(string(c.Team.Mode)); err != nil && c.Team.Mode != observability.ModePR {
		return bad("spawn-team.mode", "%v", err)
	}
	switch {
	case c.Team.MaxIterations < 1:
		return bad("spawn-team.max_iterations", "must be at least 1, got %d", c.Team.MaxIterations)
	case c.Team.Board != BoardUnanimous && c.Team.Board != BoardMajority:
		return bad("spawn-team.board", "%q is not a board rule; use %q (every seat approves) or %q", c.Team.Board, BoardUnanimous, BoardMajority)
	case c.Team.BlockAt != "none" && observability.Severity(c.Team.BlockAt).Rank() == 0:
		return bad("spawn-team.block_at", "%q is not a severity; use critical, high, medium, low, info or none", c.Team.BlockAt)
	case c.Spawn.WaitForQuota < 0:
		return bad("spawn.wait_for_quota", "must not be negative (0 means do not wait)")
	case c.Team.MaxEscalations < 0:
		return bad("spawn-team.max_escalations", "must not be negative")
	case c.Team.MaxConcurrentReviewers < 1:
		return bad("spawn-team.max_concurrent_reviewers", "must be at least 1")
	case c.Spawn.IdleTimeout <= 0:
		return bad("spawn.idle_timeout", "must be a positive duration such as \"5m\"")
	case c.Spawn.TotalTimeout <= 0:
		return bad("spawn.total_timeout", "must be a positive duration such as \"30m\"")
	case c.Spawn.ToolTimeout <= 0:
		return bad("spawn.tool_timeout", "must be a positive duration such as \"20m\"")
	case c.Spawn.MaxTurns < 0:
		return bad("spawn.max_turns", "must not be negative (0 means no limit)")
	case c.Spawn.MaxCostUSD < 0:
		return bad("spawn.max_cost_usd", "must not be negative (0 means no budget)")
	case c.Spawn.MaxAutoAnswers < 0:
		return bad("spawn.max_auto_answers", "must not be negative")
	case c.Spawn.QuestionConfidence < 0 || c.Spawn.QuestionConfidence > 1:
		return bad("spawn.question_confidence", "must be between 0 and 1, got %g", c.Spawn.QuestionConfidence)
	case !runners.PermissionModeOK(c.Permissions.Mode):
		return bad("permissions.mode", "%q is not allowed; use one of %s (spawn never bypasses permissions)",
			c.Permissions.Mode, strings.Join(runners.PermissionModes(), ", "))
	case validErr(isolation.ParseMode(string(c.Sandbox.Isolation))) != nil:
		return bad("sandbox.isolation", "%v", validErr(isolation.ParseMode(string(c.Sandbox.Isolation))))
	case validErr(isolation.ParseNetwork(string(c.Sandbox.Network))) != nil:
		return bad("sandbox.network", "%v", validErr(isolation.ParseNetwork(string(c.Sandbox.Network))))
	case validErr(isolation.ParseCache(string(c.Sandbox.Cache))) != nil:
		return bad("sandbox.cache", "%v", validErr(isolation.ParseCache(string(c.Sandbox.Cache))))
	case c.Sandbox.MaxProcesses < 0:
		return bad("sandbox.max_processes", "must not be negative (0 means no limit)")
	case c.Sandbox.MaxMemory < 0:
		return bad("sandbox.max_memory", "must not be negative (0 means no limit)")
	case c.Sandbox.MaxDisk < 0:
		return bad("sandbox.max_disk", "must not be negative (0 means no limit)")
	case c.Sandbox.Network == isolation.NetworkModelOnly && c.Sandbox.Isolation == isolation.ModeNone:
		return bad("sandbox.network", "model-only needs a sandbox; set sandbox.isolation to auto, bwrap or seatbelt")
	case strings.TrimSpace(c.GitHub.Remote) == "":
		return bad("github.remote", "must name a git remote, such as \"origin\"")
	case c.GitHub.MinWriteInterval < 0:
		return bad("github.min_write_interval", "must not be negative (0 means no spacing)")
	case slices.ContainsFunc(c.GitHub.TrustedAuthors, func(s string) bool { return strings.TrimSpace(s) == "" || strings.ContainsAny(s, " /@") }):
		return bad("github.trusted_authors", "must hold GitHub logins, such as \"octocat\"")
	}
	for _, d := range c.Team.ReviewDomains {
		if _, err := prompts.ParseDomain(d); err != nil {
			return bad("spawn-team.review_domains", "%v", err)
		}
	}
	for _, list := range []struct {
		key   string
		rules []string
	}{
		{"permissions.allowed_tools", c.Permissions.AllowedTools},
		{"permissions.escalatable", c.Permissions.Escalatable},
		{"permissions.denied_tools", c.Permissions.DeniedTools},
	} {
		for _, r := range list.rules {
			if err := runners.ValidateClaudeRule(r); err != nil {
				return bad(list.key, "%v", err)
			}
		}
	}
	for _, r := range c.Permissions.Escalatable {
		if _, err := runners.ParseRule(r); err != nil {
			return bad("permissions.escalatable", "%v", err)
		}
	}
	if _, err := watcher.NewQuestionDetector(c.Spawn.QuestionPatterns); err != nil {
		return bad("spawn.question_patterns", "%v", err)
	}
	return nil
}

// validateAgents checks the coder, the reviewers and every CLI's settings
// against the registry: a name it knows, settings its adapter accepts.
func (c Config) validateAgents() error {
	reg := runners.NewRegistry()
	if _, err := reg.Lookup(c.Team.Coder); err != nil {
		return &Error{Key: "spawn-team.coder", Msg: err.Error()}
	}
	if len(c.Team.Reviewers) == 0 && c.Team.Mode.Reviewed() {
		return &Error{Key: "spawn-team.reviewers", Msg: fmt.Sprintf("must name at least one reviewer, such as %q", reg.Names()[0])}
	}
	for _, r := range c.Team.Reviewers {
		if _, err := reg.Lookup(r); err != nil {
			return &Error{Key: "spawn-team.reviewers", Msg: err.Error()}
		}
	}
	for _, a := range reg.Adapters() {
		rs, ok := c.Runners[a.Name()]
		if !ok {
			return &Error{Key: "runners." + a.Name(), Msg: "is missing"}
		}
		switch {
		case strings.TrimSpace(rs.Command) == "":
			return &Error{Key: "runners." + a.Name() + ".command", Msg: fmt.Sprintf("must name the %s binary", a.Name())}
		case rs.MaxRetries < 0:
			return &Error{Key: "runners." + a.Name() + ".max_retries", Msg: "must not be negative"}
		}
		if err := a.Check(rs); err != nil {
			var se *runners.SettingsError
			if errors.As(err, &se) {
				return &Error{Key: "runners." + a.Name() + "." + se.Key, Msg: se.Msg}
			}
			return &Error{Key: "runners." + a.Name(), Msg: err.Error()}
		}
	}
	for name := range c.Runners {
		if a, err := reg.Lookup(name); err != nil || a.Name() != name {
			return &Error{Key: "runners." + name, Msg: fmt.Sprintf("is not an agent CLI spawn knows; use one of %s", strings.Join(reg.Names(), ", "))}
		}
	}
	return nil
}

// envVars maps SPAWN_* environment variables onto configuration keys.
var envVars = []struct {
	name, key string
	set       func(*Config, string) error
}{
	{"SPAWN_MODE", "spawn-team.mode", func(c *Config, v string) error { c.Team.Mode = observability.Mode(v); return nil }},
	{"SPAWN_MAX_ITERATIONS", "spawn-team.max_iterations", intSetter(func(c *Config) *int { return &c.Team.MaxIterations })},
	{"SPAWN_MAX_ESCALATIONS", "spawn-team.max_escalations", intSetter(func(c *Config) *int { return &c.Team.MaxEscalations })},
	{"SPAWN_IDLE_TIMEOUT", "spawn.idle_timeout", durSetter(func(c *Config) *time.Duration { return &c.Spawn.IdleTimeout })},
	{"SPAWN_TOOL_TIMEOUT", "spawn.tool_timeout", durSetter(func(c *Config) *time.Duration { return &c.Spawn.ToolTimeout })},
	{"SPAWN_TOTAL_TIMEOUT", "spawn.total_timeout", durSetter(func(c *Config) *time.Duration { return &c.Spawn.TotalTimeout })},
	{"SPAWN_MAX_TURNS", "spawn.max_turns", intSetter(func(c *Config) *int { return &c.Spawn.MaxTurns })},
	{"SPAWN_MAX_COST_USD", "spawn.max_cost_usd", func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("want a number of dollars such as 2.50")
		}
		c.Spawn.MaxCostUSD = f
		return nil
	}},
	{"SPAWN_CODER", "spawn-team.coder", func(c *Config, v string) error { c.Team.Coder = v; return nil }},
	{"SPAWN_REVIEWERS", "spawn-team.reviewers", func(c *Config, v string) error {
		c.Team.Reviewers = nil
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				c.Team.Reviewers = append(c.Team.Reviewers, r)
			}
		}
		return nil
	}},
	{"SPAWN_ISOLATION", "sandbox.isolation", func(c *Config, v string) error { c.Sandbox.Isolation = isolation.Mode(v); return nil }},
	{"SPAWN_NETWORK", "sandbox.network", func(c *Config, v string) error { c.Sandbox.Network = isolation.Network(v); return nil }},
	{"SPAWN_CACHE", "sandbox.cache", func(c *Config, v string) error { c.Sandbox.Cache = isolation.Cache(v); return nil }},
}

func intSetter(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("want a whole number")
		}
		*field(c) = n
		return nil
	}
}

func durSetter(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return errors.New("want a duration with a unit, such as 90s or 5m")
		}
		*field(c) = d
		return nil
	}
}

// runnerVars are each CLI's SPAWN_<NAME>_COMMAND and SPAWN_<NAME>_MODEL.
func runnerVars() []struct {
	name, key string
	set       func(*Config, string) error
} {
	var out []struct {
		name, key string
		set       func(*Config, string) error
	}
	for _, a := range runners.NewRegistry().Adapters() {
		n := a.Name()
		up := "SPAWN_" + strings.ToUpper(n)
		out = append(out, struct {
			name, key string
			set       func(*Config, string) error
		}{up + "_COMMAND", "runners." + n + ".command", func(c *Config, v string) error {
			rs := c.Runners.Get(n)
			rs.Command = v
			c.Runners.Set(n, rs)
			return nil
		}}, struct {
			name, key string
			set       func(*Config, string) error
		}{up + "_MODEL", "runners." + n + ".model", func(c *Config, v string) error {
			rs := c.Runners.Get(n)
			rs.Model = v
			c.Runners.Set(n, rs)
			return nil
		}})
	}
	return out
}

// applyEnv overrides cfg with the SPAWN_* variables set in env, and notes
// in set which variable set which key.
func applyEnv(cfg *Config, env []string, set map[string]string) error {
	for _, v := range append(envVars, runnerVars()...) {
		val, ok := proc.LookupEnv(env, v.name)
		if !ok {
			continue
		}
		if err := v.set(cfg, val); err != nil {
			return &Error{Key: v.name, Msg: fmt.Sprintf("cannot use %q: %v", val, err)}
		}
		set[v.key] = v.name
	}
	return nil
}

// validErr is the error of a parse whose value is not needed.
func validErr[T any](_ T, err error) error { return err }

// badToolName reports whether s cannot name a gemini tool: it is empty or
// holds a comma or a line break.
func badToolName(s string) bool {
	return strings.TrimSpace(s) == "" || strings.ContainsAny(s, ",\n")
}
