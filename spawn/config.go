package spawn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/infinite-improbability-drive/spawn/internal/git"
)

// ConfigFile is the name spawn looks for in the repository and in
// $XDG_CONFIG_HOME/spawn.
const ConfigFile = "spawn-team.toml"

// Config is spawn's configuration: built-in defaults, then the file, then
// SPAWN_* environment variables, then flags.
type Config struct {
	Team        Team        `toml:"spawn-team"`
	Spawn       Limits      `toml:"spawn"`
	Permissions Permissions `toml:"permissions"`
	Runners     Runners     `toml:"runners"`
}

// Team configures the orchestrator.
type Team struct {
	Mode                   string   `toml:"mode"`
	MaxIterations          int      `toml:"max_iterations"`
	PrimaryLLM             string   `toml:"primary_llm"`
	ReviewerLLM            string   `toml:"reviewer_llm"`
	MaxEscalations         int      `toml:"max_escalations"`
	ReviewDomains          []string `toml:"review_domains"`
	ParallelReviewers      bool     `toml:"parallel_reviewers"`
	MaxConcurrentReviewers int      `toml:"max_concurrent_reviewers"`
}

// Limits bounds one agent run.
type Limits struct {
	IdleTimeout    time.Duration `toml:"idle_timeout"`
	TotalTimeout   time.Duration `toml:"total_timeout"`
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
}

// Permissions is the coder's tool manifest.
type Permissions struct {
	// Mode is claude's --permission-mode. bypassPermissions is refused.
	Mode         string   `toml:"mode"`
	AllowedTools []string `toml:"allowed_tools"`
	Escalatable  []string `toml:"escalatable"`
	DeniedTools  []string `toml:"denied_tools"`
}

// Runners configures the agent CLIs.
type Runners struct {
	Claude Runner `toml:"claude"`
	Gemini Runner `toml:"gemini"`
}

// Runner configures one agent CLI.
type Runner struct {
	Command string `toml:"command"`
	Model   string `toml:"model"`
	// ApprovalMode is gemini's --approval-mode (the reviewer is read-only:
	// "default"). Unused for claude.
	ApprovalMode string `toml:"approval_mode,omitempty"`
	// MaxRetries bounds the CLI's own retries of a failed model API call
	// (claude: CLAUDE_CODE_MAX_RETRIES; gemini: general.maxAttempts-1).
	// 0 means no retries.
	MaxRetries int `toml:"max_retries"`
}

// Modes are the values of spawn-team.mode.
var modes = []string{"solo", "sequential", "pingpong", "github"}

// Domains are the review domains a reviewer can be asked to cover.
var domains = []string{"security", "technical_feasibility", "task_granularity", "dependency_completeness", "general_polish"}

var permissionModes = []string{"acceptEdits", "auto", "default", "dontAsk", "plan"}

// DefaultConfig returns the built-in configuration; spawn-team.toml at the
// root of spawn's repository documents the same values.
func DefaultConfig() Config {
	return Config{
		Team: Team{
			Mode:                   "pingpong",
			MaxIterations:          3,
			PrimaryLLM:             "claude-code",
			ReviewerLLM:            "gemini-cli",
			MaxEscalations:         5,
			ReviewDomains:          []string{"security", "technical_feasibility", "general_polish"},
			MaxConcurrentReviewers: 3,
		},
		Spawn: Limits{
			IdleTimeout:        5 * time.Minute,
			TotalTimeout:       30 * time.Minute,
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
		Runners: Runners{
			Claude: Runner{Command: "claude", MaxRetries: 2},
			Gemini: Runner{Command: "gemini", Model: "gemini-2.5-pro", ApprovalMode: "default", MaxRetries: 2},
		},
	}
}

// ConfigError is a configuration problem: a file that does not parse, an
// unknown key, a bad value. It names where the problem is.
type ConfigError struct {
	File string // the file, or "" for the environment or flags
	Line int    // 0 when unknown
	Key  string // the key, or the environment variable
	Msg  string
}

func (e *ConfigError) Error() string {
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

// FindConfig returns the configuration file to load: explicit when set
// (it must exist), else <repo>/spawn-team.toml, else
// $XDG_CONFIG_HOME/spawn/spawn-team.toml (~/.config when unset). "" means
// none exists and the defaults apply.
func FindConfig(explicit, repo string, env []string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", &ConfigError{File: explicit, Msg: "cannot read the configuration file; check the --config path"}
		}
		return explicit, nil
	}
	candidates := []string{filepath.Join(repo, ConfigFile)}
	if xdg := lookupEnv(env, "XDG_CONFIG_HOME"); xdg != "" {
		candidates = append(candidates, filepath.Join(xdg, "spawn", ConfigFile))
	} else if home := lookupEnv(env, "HOME"); home != "" {
		candidates = append(candidates, filepath.Join(home, ".config", "spawn", ConfigFile))
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", nil
}

// LoadConfigFile decodes path over base strictly: unknown keys, wrong types
// and bad durations are a *ConfigError naming the file, key and line.
func LoadConfigFile(path string, base Config) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return base, &ConfigError{File: path, Msg: fmt.Sprintf("cannot read: %v", err)}
	}
	cfg := base
	// Lists in the file replace the defaults rather than merging into them.
	cfg.Team.ReviewDomains, cfg.Permissions.AllowedTools = nil, nil
	cfg.Permissions.Escalatable, cfg.Permissions.DeniedTools = nil, nil
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&cfg)
	if err != nil {
		return base, decodeError(path, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		key := undecoded[0].String()
		return base, &ConfigError{File: path, Line: keyLine(data, key), Key: key,
			Msg: "unknown key; see spawn-team.toml in spawn's repository for the valid keys"}
	}
	for _, keep := range []struct {
		key  []string
		dst  *[]string
		from []string
	}{
		{[]string{"spawn-team", "review_domains"}, &cfg.Team.ReviewDomains, base.Team.ReviewDomains},
		{[]string{"permissions", "allowed_tools"}, &cfg.Permissions.AllowedTools, base.Permissions.AllowedTools},
		{[]string{"permissions", "escalatable"}, &cfg.Permissions.Escalatable, base.Permissions.Escalatable},
		{[]string{"permissions", "denied_tools"}, &cfg.Permissions.DeniedTools, base.Permissions.DeniedTools},
	} {
		if !md.IsDefined(keep.key...) {
			*keep.dst = keep.from
		}
	}
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File, ce.Line = path, keyLine(data, ce.Key)
		}
		return base, err
	}
	return cfg, nil
}

var tomlErrRE = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): (.*)$`)

func decodeError(path string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &ConfigError{File: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
	}
	if m := tomlErrRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ConfigError{File: path, Line: line, Key: m[2], Msg: m[3]}
	}
	return &ConfigError{File: path, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

// keyLine finds the line that sets a dotted key ("spawn.idle_timeout") in a
// TOML document, or 0. It reads table headers and key = value lines, which is
// all a spawn-team.toml holds.
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

// Validate checks values that decode but make no sense.
func (c Config) Validate() error {
	bad := func(key, format string, args ...any) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case !slices.Contains(modes, c.Team.Mode):
		return bad("spawn-team.mode", "%q is not a mode; use one of %s", c.Team.Mode, strings.Join(modes, ", "))
	case c.Team.MaxIterations < 1:
		return bad("spawn-team.max_iterations", "must be at least 1, got %d", c.Team.MaxIterations)
	case c.Team.PrimaryLLM != "claude-code":
		return bad("spawn-team.primary_llm", "%q is not supported; use \"claude-code\"", c.Team.PrimaryLLM)
	case c.Team.ReviewerLLM != "gemini-cli":
		return bad("spawn-team.reviewer_llm", "%q is not supported; use \"gemini-cli\"", c.Team.ReviewerLLM)
	case c.Team.MaxEscalations < 0:
		return bad("spawn-team.max_escalations", "must not be negative")
	case c.Team.MaxConcurrentReviewers < 1:
		return bad("spawn-team.max_concurrent_reviewers", "must be at least 1")
	case c.Spawn.IdleTimeout <= 0:
		return bad("spawn.idle_timeout", "must be a positive duration such as \"5m\"")
	case c.Spawn.TotalTimeout <= 0:
		return bad("spawn.total_timeout", "must be a positive duration such as \"30m\"")
	case c.Spawn.MaxTurns < 0:
		return bad("spawn.max_turns", "must not be negative (0 means no limit)")
	case c.Spawn.MaxCostUSD < 0:
		return bad("spawn.max_cost_usd", "must not be negative (0 means no budget)")
	case c.Spawn.MaxAutoAnswers < 0:
		return bad("spawn.max_auto_answers", "must not be negative")
	case c.Spawn.QuestionConfidence < 0 || c.Spawn.QuestionConfidence > 1:
		return bad("spawn.question_confidence", "must be between 0 and 1, got %g", c.Spawn.QuestionConfidence)
	case !slices.Contains(permissionModes, c.Permissions.Mode):
		return bad("permissions.mode", "%q is not allowed; use one of %s (spawn never bypasses permissions)",
			c.Permissions.Mode, strings.Join(permissionModes, ", "))
	case c.Runners.Claude.Command == "":
		return bad("runners.claude.command", "must name the claude binary")
	case c.Runners.Gemini.Command == "":
		return bad("runners.gemini.command", "must name the gemini binary")
	case c.Runners.Claude.MaxRetries < 0:
		return bad("runners.claude.max_retries", "must not be negative")
	case c.Runners.Gemini.MaxRetries < 0:
		return bad("runners.gemini.max_retries", "must not be negative")
	case c.Runners.Gemini.Model == "":
		return bad("runners.gemini.model", "must name a model (without one the CLI calls a router model first)")
	case !slices.Contains([]string{"default", "auto_edit", "plan"}, c.Runners.Gemini.ApprovalMode):
		return bad("runners.gemini.approval_mode", "%q is not allowed; use default, auto_edit or plan", c.Runners.Gemini.ApprovalMode)
	}
	for _, d := range c.Team.ReviewDomains {
		if !slices.Contains(domains, d) {
			return bad("spawn-team.review_domains", "%q is not a review domain; use %s", d, strings.Join(domains, ", "))
		}
	}
	return nil
}

// envVars maps SPAWN_* environment variables onto configuration keys.
var envVars = []struct {
	name string
	set  func(*Config, string) error
}{
	{"SPAWN_MODE", func(c *Config, v string) error { c.Team.Mode = v; return nil }},
	{"SPAWN_MAX_ITERATIONS", intSetter(func(c *Config) *int { return &c.Team.MaxIterations })},
	{"SPAWN_MAX_ESCALATIONS", intSetter(func(c *Config) *int { return &c.Team.MaxEscalations })},
	{"SPAWN_IDLE_TIMEOUT", durSetter(func(c *Config) *time.Duration { return &c.Spawn.IdleTimeout })},
	{"SPAWN_TOTAL_TIMEOUT", durSetter(func(c *Config) *time.Duration { return &c.Spawn.TotalTimeout })},
	{"SPAWN_MAX_TURNS", intSetter(func(c *Config) *int { return &c.Spawn.MaxTurns })},
	{"SPAWN_MAX_COST_USD", func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("want a number of dollars such as 2.50")
		}
		c.Spawn.MaxCostUSD = f
		return nil
	}},
	{"SPAWN_CLAUDE_COMMAND", func(c *Config, v string) error { c.Runners.Claude.Command = v; return nil }},
	{"SPAWN_CLAUDE_MODEL", func(c *Config, v string) error { c.Runners.Claude.Model = v; return nil }},
	{"SPAWN_GEMINI_COMMAND", func(c *Config, v string) error { c.Runners.Gemini.Command = v; return nil }},
	{"SPAWN_GEMINI_MODEL", func(c *Config, v string) error { c.Runners.Gemini.Model = v; return nil }},
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
			return errors.New("want a Go duration such as 90s or 5m")
		}
		*field(c) = d
		return nil
	}
}

// ApplyEnv overrides cfg with the SPAWN_* variables set in env.
func ApplyEnv(cfg Config, env []string) (Config, error) {
	for _, v := range envVars {
		val, ok := lookupEnvOK(env, v.name)
		if !ok {
			continue
		}
		if err := v.set(&cfg, val); err != nil {
			return cfg, &ConfigError{Key: v.name, Msg: fmt.Sprintf("cannot use %q: %v", val, err)}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("after SPAWN_* environment variables: %w", err)
	}
	return cfg, nil
}

func lookupEnv(env []string, name string) string {
	v, _ := lookupEnvOK(env, name)
	return v
}

// lookupEnvOK finds name in env; the last setting wins, as in exec.
func lookupEnvOK(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// LoadConfig assembles the configuration for a repository: built-in
// defaults, then the file FindConfig picks, then SPAWN_* variables. It
// returns the file used ("" for none).
func LoadConfig(ctx context.Context, explicit, repoDir string, env []string) (Config, string, error) {
	top := repoDir
	if repo, err := git.Open(ctx, repoDir, env); err == nil {
		top = repo.Dir
	}
	cfg := DefaultConfig()
	path, err := FindConfig(explicit, top, env)
	if err != nil {
		return cfg, "", err
	}
	if path != "" {
		if cfg, err = LoadConfigFile(path, cfg); err != nil {
			return cfg, path, err
		}
	}
	cfg, err = ApplyEnv(cfg, env)
	return cfg, path, err
}
