package runners

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/hook"
	"github.com/infinite-improbability-drive/spawn/internal/relay"
)

// seatDirs makes a seat's home and temporary directory (and any other
// named folders) in its directory, and returns home and tmp.
func seatDirs(s Seat, more ...string) (home, tmp string, err error) {
	home, tmp = filepath.Join(s.Dir, "home"), filepath.Join(s.Dir, "tmp")
	for _, d := range append([]string{home, tmp}, more...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", "", fmt.Errorf("runners: prepare the seat's directory: %w", err)
		}
	}
	return home, tmp, nil
}

// homeEnv is the environment every seat gets: its own HOME, TMPDIR and XDG
// folders.
func homeEnv(home, tmp string) []string {
	return []string{"HOME=" + home, "TMPDIR=" + tmp,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}
}

// keyFrom is a credential the relay adds as header name, from the first
// of names set in vars (prefix before the value); nil when none is.
func keyFrom(vars Values, name, prefix string, names ...string) func() (relay.Header, error) {
	for _, k := range names {
		if v := vars.Get(k); v != "" {
			return func() (relay.Header, error) { return relay.Header{Name: name, Value: prefix + v}, nil }
		}
	}
	return nil
}

// genericFailure reads a failed turn's result as claude's and gemini's
// report one: no result is a crash, 401 and 403 a refused credential, an
// unreachable API its own kind; a usage limit is for the caller to tell
// (the CLIs do not say when it resets: the relay does).
func genericFailure(res *Result, stderr string) Failure {
	switch {
	case res == nil:
		return Failure{Kind: FailureCrash, Message: lastLine(stderr)}
	case !res.IsError:
		return Failure{}
	}
	msg := strings.TrimSpace(res.ErrorMessage)
	if msg == "" {
		msg = strings.TrimSpace(res.Text)
	}
	lower := strings.ToLower(msg)
	f := Failure{Kind: FailureCrash, Message: msg}
	switch status := res.APIErrorStatus; {
	case status == 401 || status == 403:
		f.Kind = FailureAuth
	case strings.Contains(lower, "usage limit") || strings.Contains(lower, "exhausted your") || strings.Contains(lower, "quota"):
		f.Kind = FailureUsageLimit
	case strings.Contains(lower, "unable to connect") || strings.Contains(lower, "connection refused") || strings.Contains(lower, "fetch failed"):
		f.Kind = FailureUnreachable
	case status == 429 || status >= 500:
		f.Kind = FailureUnavailable
	}
	return f
}

// claudeAdapter is the Claude Code CLI (@anthropic-ai/claude-code).
type claudeAdapter struct{}

func (claudeAdapter) Name() string      { return "claude" }
func (claudeAdapter) Aliases() []string { return []string{"claude-code", "claude-cli"} }
func (claudeAdapter) Record() string    { return "claude-code" }
func (claudeAdapter) Family() Family    { return FamilyAnthropic }
func (claudeAdapter) Install() Install {
	return Install{Command: "claude", Package: "@anthropic-ai/claude-code", Pinned: PinnedClaude}
}

// Provider is the Anthropic Messages API; the credential is the user's
// ANTHROPIC_API_KEY, else ANTHROPIC_AUTH_TOKEN, else the token of the
// user's own claude login (read at each request from its login file, which
// the user's claude refreshes and no sandbox shows).
func (claudeAdapter) Provider() Provider {
	return Provider{Route: "anthropic", BaseVar: "ANTHROPIC_BASE_URL", Default: "https://api.anthropic.com",
		Paths: []relay.Path{{Method: http.MethodPost, Pattern: "/v1/messages"}, {Method: http.MethodPost, Pattern: "/v1/messages/count_tokens"}},
		Credential: func(vars Values) func() (relay.Header, error) {
			if c := keyFrom(vars, "x-api-key", "", "ANTHROPIC_API_KEY"); c != nil {
				return c
			}
			if c := keyFrom(vars, "Authorization", "Bearer ", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"); c != nil {
				return c
			}
			return claudeLogin(vars)
		},
		CredentialVars: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR", "HOME"},
		Missing:        "set ANTHROPIC_API_KEY, or log in once by running claude",
		Vars:           []string{"ANTHROPIC_*", "CLAUDE_*"},
	}
}

// claudeLogin is the credential of the user's claude login (in
// CLAUDE_CONFIG_DIR, else ~/.claude), nil when there is no login file.
func claudeLogin(vars Values) func() (relay.Header, error) {
	dir := vars.Get("CLAUDE_CONFIG_DIR")
	if dir == "" {
		dir = filepath.Join(vars.Get("HOME"), ".claude")
	}
	login := filepath.Join(dir, ".credentials.json")
	if _, err := os.Stat(login); err != nil {
		return nil
	}
	return func() (relay.Header, error) {
		tok, err := oauthToken(login)
		if err != nil {
			return relay.Header{}, err
		}
		return relay.Header{Name: "Authorization", Value: "Bearer " + tok}, nil
	}
}

// HookSettings are claude's --settings for spawn's hooks.
func (claudeAdapter) HookSettings(exe, when string, args ...string) ([]byte, error) {
	return hook.ClaudeSettings(exe, when, args...)
}

func (claudeAdapter) Defaults() Settings {
	return Settings{Command: "claude", MaxRetries: 2, AllowedTools: []string{"Read", "Glob", "Grep"}, ExcludedTools: []string{}}
}

// Check accepts the tools a claude reviewer is offered in claude's rule
// grammar.
func (claudeAdapter) Check(s Settings) error {
	for _, list := range []struct {
		key   string
		tools []string
	}{{"allowed_tools", s.AllowedTools}, {"excluded_tools", s.ExcludedTools}} {
		for _, r := range list.tools {
			if err := ValidateClaudeRule(r); err != nil {
				return &SettingsError{Key: list.key, Msg: err.Error()}
			}
		}
	}
	if len(s.AllowedTools) == 0 {
		return &SettingsError{Key: "allowed_tools", Msg: "must name at least one tool a reviewer may use, such as \"Read\""}
	}
	if s.ApprovalMode != "" {
		return &SettingsError{Key: "approval_mode", Msg: "is not a claude setting (a claude reviewer runs with --permission-mode default)"}
	}
	return nil
}

// claudeReviewerDenied are the tools a claude reviewer is never given.
var claudeReviewerDenied = []string{"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "WebFetch", "WebSearch", "Task"}

// Seat is a claude coder (the permissions of [permissions], spawn's hooks)
// or reviewer (--permission-mode default with only its read-only tools
// allowed: anything else is denied), with its own CLAUDE_CONFIG_DIR. A
// reviewer is offered only the built-in tools its allowed rules name
// (--tools): the definitions of the others (claude 2.1.332 offers a
// reviewer denied Write and Bash some 18 KB of them: Workflow,
// ScheduleWakeup, ListAgents...) would be sent with every request of
// every review.
func (claudeAdapter) Seat(s Seat) (Agent, error) {
	cfg := filepath.Join(s.Dir, "config")
	home, tmp, err := seatDirs(s, cfg)
	if err != nil {
		return nil, err
	}
	c := &Claude{Bin: s.Bin, Model: s.Settings.Model, MaxRetries: s.Settings.MaxRetries, AppendSystemPrompt: s.SystemPrompt,
		Environ: append(homeEnv(home, tmp), "CLAUDE_CONFIG_DIR="+cfg, "ANTHROPIC_BASE_URL="+s.RelayURL, "ANTHROPIC_API_KEY="+s.RelayKey)}
	switch s.Role {
	case RoleCoder:
		c.PermissionMode, c.AllowedTools, c.DisallowedTools, c.Settings = s.Permissions.Mode, s.Permissions.Allowed, s.Permissions.Denied, s.Hooks
	default:
		c.PermissionMode = "default"
		c.AllowedTools, c.Tools = s.Settings.AllowedTools, claudeBuiltins(s.Settings.AllowedTools)
		c.DisallowedTools = append(slices.Clone(claudeReviewerDenied), s.Settings.ExcludedTools...)
	}
	return c, nil
}

// claudeBuiltins are the built-in tools the claude rules name, each once,
// in order: the name before a rule's "(" ("Bash" for "Bash(git diff:*)").
// MCP tools (mcp__...) are not built in and are left out.
func claudeBuiltins(rules []string) []string {
	var names []string
	for _, r := range rules {
		name, _, _ := strings.Cut(strings.TrimSpace(r), "(")
		if name != "" && !strings.HasPrefix(name, "mcp__") && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// Env is the seat's environment.
func (c *Claude) Env() []string { return c.Environ }

// Sessions are claude's session transcripts, which `--resume` reads.
func (claudeAdapter) Sessions() []string { return []string{"config/projects"} }

// Parse reads a claude transcript.
func (claudeAdapter) Parse(r io.Reader, emit func(Event)) error { return (&Claude{}).Parse(r, emit) }

// Classify says why a claude turn failed.
func (c *Claude) Classify(res *Result, stderr string, _ time.Time) Failure {
	return genericFailure(res, stderr)
}

// geminiAdapter is the Gemini CLI (@google/gemini-cli).
type geminiAdapter struct{}

func (geminiAdapter) Name() string      { return "gemini" }
func (geminiAdapter) Aliases() []string { return []string{"gemini-cli"} }
func (geminiAdapter) Record() string    { return "gemini-cli" }
func (geminiAdapter) Family() Family    { return FamilyGoogle }
func (geminiAdapter) Install() Install {
	return Install{Command: "gemini", Package: "@google/gemini-cli", Pinned: PinnedGemini}
}

// Provider is the Gemini API; the credential is a Gemini API key
// (GEMINI_API_KEY, else GOOGLE_API_KEY). A Google login would have to be
// shown to the agent as a file: spawn does not use one.
func (geminiAdapter) Provider() Provider {
	return Provider{Route: "gemini", BaseVar: "GOOGLE_GEMINI_BASE_URL", Default: "https://generativelanguage.googleapis.com",
		Paths: []relay.Path{
			{Method: http.MethodPost, Pattern: "/v1beta/models/*:streamGenerateContent"},
			{Method: http.MethodPost, Pattern: "/v1beta/models/*:generateContent"},
			{Method: http.MethodPost, Pattern: "/v1beta/models/*:countTokens"},
		},
		Credential: func(vars Values) func() (relay.Header, error) {
			return keyFrom(vars, "x-goog-api-key", "", "GEMINI_API_KEY", "GOOGLE_API_KEY")
		},
		CredentialVars: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"},
		Missing:        "set GEMINI_API_KEY to a Gemini API key",
		Vars:           []string{"GEMINI_*", "GOOGLE_*"},
	}
}

func (geminiAdapter) Defaults() Settings {
	return Settings{Command: "gemini", Model: "gemini-2.5-pro", ApprovalMode: "default", MaxRetries: 2,
		AllowedTools: []string{"list_directory", "read_file", "grep_search", "glob"}, ExcludedTools: []string{}}
}

// Check needs a model (without one gemini calls a router model first), an
// approval mode that does not let a reviewer write, and tool names.
func (geminiAdapter) Check(s Settings) error {
	switch {
	case s.Model == "":
		return &SettingsError{Key: "model", Msg: "must name a model (without one the CLI calls a router model first)"}
	case !ApprovalModeOK(s.ApprovalMode):
		return &SettingsError{Key: "approval_mode", Msg: fmt.Sprintf("%q is not allowed; use one of %s", s.ApprovalMode, strings.Join(ApprovalModes(), ", "))}
	case len(s.AllowedTools) == 0:
		return &SettingsError{Key: "allowed_tools", Msg: "must name at least one tool, such as \"read_file\""}
	}
	if err := checkTools("allowed_tools", s.AllowedTools); err != nil {
		return err
	}
	return checkTools("excluded_tools", s.ExcludedTools)
}

// geminiTools are gemini's names for claude's tools, for a gemini coder
// given [permissions] in claude's grammar.
var geminiTools = map[string][]string{
	"Read": {"read_file", "read_many_files", "list_directory"}, "Glob": {"glob"}, "Grep": {"grep_search"},
	"Edit": {"replace"}, "MultiEdit": {"replace"}, "Write": {"write_file"},
	"WebFetch": {"web_fetch"}, "WebSearch": {"google_web_search"},
}

// Seat is a gemini reviewer (its read-only tools, --approval-mode default)
// or coder (claude's [permissions] in gemini's names: the file tools, and
// each allowed command as run_shell_command(CMD), with --approval-mode
// auto_edit), with a private GEMINI_CLI_HOME holding spawn's settings.
func (geminiAdapter) Seat(s Seat) (Agent, error) {
	home, tmp, err := seatDirs(s)
	if err != nil {
		return nil, err
	}
	g := &Gemini{Bin: s.Bin, Model: s.Settings.Model, Home: home,
		Environ: append(homeEnv(home, tmp), "GOOGLE_GEMINI_BASE_URL="+s.RelayURL, "GEMINI_API_KEY="+s.RelayKey)}
	gs := GeminiSettings{MaxRetries: s.Settings.MaxRetries, Tools: s.Settings.AllowedTools, ExcludedTools: s.Settings.ExcludedTools}
	g.ApprovalMode = s.Settings.ApprovalMode
	if s.Role == RoleCoder {
		g.ApprovalMode = "auto_edit"
		gs.Tools, gs.ExcludedTools, g.AllowedTools = geminiCoderTools(s.Permissions)
	}
	if err := NewGeminiHome(home, gs); err != nil {
		return nil, err
	}
	g.offered = slices.DeleteFunc(slices.Clone(gs.Tools), func(t string) bool { return slices.Contains(gs.ExcludedTools, t) })
	return g, nil
}

// geminiCoderTools translates claude's [permissions] into a gemini coder's
// core tools, excluded tools and --allowed-tools: Bash(CMD:*) and
// Bash(CMD *) become run_shell_command(CMD).
func geminiCoderTools(p Permissions) (core, excluded, allowed []string) {
	add := func(list *[]string, ts ...string) {
		for _, t := range ts {
			if !slices.Contains(*list, t) {
				*list = append(*list, t)
			}
		}
	}
	for _, r := range p.Allowed {
		if cmd, ok := strings.CutPrefix(r, "Bash("); ok {
			cmd = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(cmd, ")"), ":*"), " *")
			add(&core, "run_shell_command")
			add(&allowed, "run_shell_command("+cmd+")")
			continue
		}
		add(&core, geminiTools[r]...)
	}
	for _, r := range p.Denied {
		add(&excluded, geminiTools[r]...)
	}
	return core, excluded, allowed
}

// Env is the seat's environment.
func (g *Gemini) Env() []string { return g.Environ }

// Sessions are gemini's state in its home: its chats, which --resume
// reads (its settings, spawn's, are written anew).
func (geminiAdapter) Sessions() []string { return []string{"home/.gemini/tmp"} }

// Parse reads a gemini transcript.
func (geminiAdapter) Parse(r io.Reader, emit func(Event)) error { return (&Gemini{}).Parse(r, emit) }

// Classify says why a gemini turn failed.
func (g *Gemini) Classify(res *Result, stderr string, _ time.Time) Failure {
	return genericFailure(res, stderr)
}

// Offered are the tools the seat is offered.
func (g *Gemini) Offered() []string { return g.offered }

// codexAdapter is the Codex CLI (@openai/codex).
type codexAdapter struct{}

func (codexAdapter) Name() string      { return "codex" }
func (codexAdapter) Aliases() []string { return []string{"codex-cli", "openai-codex"} }
func (codexAdapter) Record() string    { return "codex-cli" }
func (codexAdapter) Family() Family    { return FamilyOpenAI }
func (codexAdapter) Install() Install {
	return Install{Command: "codex", Package: "@openai/codex", Pinned: PinnedCodex}
}

// Provider is the OpenAI Responses API; the credential is the user's
// OPENAI_API_KEY. A ChatGPT login would have to be shown to the agent as
// a file: spawn does not use one.
func (codexAdapter) Provider() Provider {
	return Provider{Route: "openai", BaseVar: "OPENAI_BASE_URL", Default: "https://api.openai.com/v1",
		Paths: []relay.Path{{Method: http.MethodPost, Pattern: "/responses"}},
		Credential: func(vars Values) func() (relay.Header, error) {
			return keyFrom(vars, "Authorization", "Bearer ", "OPENAI_API_KEY")
		},
		CredentialVars: []string{"OPENAI_API_KEY"},
		Missing:        "set OPENAI_API_KEY to an OpenAI API key",
		Vars:           []string{"OPENAI_*", "CODEX_*"},
	}
}

func (codexAdapter) Defaults() Settings {
	return Settings{Command: "codex", Model: "gpt-5.5", MaxRetries: 2}
}

// Check needs a model codex knows; a codex reviewer's tools are not
// chosen by name (its sandbox, or spawn's, keeps it read-only).
func (codexAdapter) Check(s Settings) error {
	switch {
	case s.Model == "":
		return &SettingsError{Key: "model", Msg: "must name a model codex knows, such as \"gpt-5.5\""}
	case len(s.AllowedTools) > 0 || len(s.ExcludedTools) > 0:
		return &SettingsError{Key: "allowed_tools", Msg: "is not a codex setting: a codex reviewer is kept read-only by its sandbox, not by tool names"}
	case s.ApprovalMode != "":
		return &SettingsError{Key: "approval_mode", Msg: "is not a codex setting (codex never asks for approval under spawn)"}
	}
	return nil
}

// Seat is a codex coder or reviewer with a private CODEX_HOME. Inside
// spawn's sandbox, codex's own sandbox is off (it cannot make the nested
// user namespace it needs there: spawn's sandbox forbids one), and spawn's
// is the boundary: a reviewer's worktree is read-only in it. Without
// spawn's sandbox, codex's own confines it: workspace-write for the
// coder, read-only for a reviewer.
func (codexAdapter) Seat(s Seat) (Agent, error) {
	codexHome := filepath.Join(s.Dir, "codex")
	home, tmp, err := seatDirs(s, codexHome)
	if err != nil {
		return nil, err
	}
	c := &Codex{Bin: s.Bin, Model: s.Settings.Model, BaseURL: s.RelayURL, Home: codexHome, Confined: s.Confined,
		MaxRetries: s.Settings.MaxRetries, Preamble: s.SystemPrompt,
		Environ: append(homeEnv(home, tmp), "OPENAI_API_KEY="+s.RelayKey)}
	switch {
	case s.Confined:
		c.Sandbox = CodexFullAccess
	case s.Role == RoleCoder:
		c.Sandbox = CodexWorkspaceWrite
	default:
		c.Sandbox = CodexReadOnly
	}
	return c, nil
}

// Env is the seat's environment.
func (c *Codex) Env() []string { return c.Environ }

// Note says, when codex's own sandbox is off inside spawn's, that spawn's
// is the boundary: codex's sandbox needs a user namespace, which spawn's
// sandbox does not let it make.
func (c *Codex) Note() string {
	if c.Sandbox != CodexFullAccess {
		return ""
	}
	return "codex runs with its own sandbox off (danger-full-access): codex's sandbox needs a user namespace, which spawn's sandbox forbids, so spawn's sandbox is the boundary; it, not [permissions], decides what codex's commands may touch"
}

// Sessions are codex's session rollouts, which `exec resume` reads.
func (codexAdapter) Sessions() []string { return []string{"codex/sessions"} }

// Parse reads a codex transcript.
func (codexAdapter) Parse(r io.Reader, emit func(Event)) error { return (&Codex{}).Parse(r, emit) }

// oauthToken is the access token of a claude login file.
func oauthToken(login string) (string, error) {
	b, err := os.ReadFile(login)
	if err != nil {
		return "", fmt.Errorf("read your claude login: %w", err)
	}
	var creds struct {
		OAuth struct {
			AccessToken string `json:"accessToken"`
		} `json:"claudeAiOauth"`
	}
	if err := json.Unmarshal(b, &creds); err != nil || creds.OAuth.AccessToken == "" {
		return "", fmt.Errorf("your claude login %s holds no token; log in with claude again", login)
	}
	return creds.OAuth.AccessToken, nil
}
