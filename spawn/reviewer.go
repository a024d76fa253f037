package spawn

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// geminiHome prepares the reviewer's private GEMINI_CLI_HOME for this run,
// once: <home>/.gemini holds every entry of the user's own ~/.gemini as a
// symlink (logins, accounts, sessions), except settings.json, which is the
// user's settings with spawn's overrides on top: general.maxAttempts bounds
// the CLI's retries of a failed model call, and telemetry, usage statistics
// and auto-update are off. The user's files are never modified. The
// directory is private (0700), outside the run directory (the user's
// settings may hold secrets), and removed when the run finishes.
func (r *Run) geminiHome() (string, error) {
	if r.geminiHomeDir != "" {
		return r.geminiHomeDir, nil
	}
	src := lookupEnv(r.opts.Env, "GEMINI_CLI_HOME")
	if src == "" {
		src = lookupEnv(r.opts.Env, "HOME")
	}
	userDir := filepath.Join(src, ".gemini")
	settings := map[string]any{}
	if b, err := os.ReadFile(filepath.Join(userDir, "settings.json")); err == nil {
		if err := json.Unmarshal(b, &settings); err != nil {
			return "", errorf(KindConfig, err, "cannot read your gemini settings %s (%v); fix the file, then run again", filepath.Join(userDir, "settings.json"), err)
		}
	}
	mergeJSON(settings, map[string]any{
		"general": map[string]any{
			"maxAttempts":                  r.opts.Config.Runners.Gemini.MaxRetries + 1,
			"enableAutoUpdate":             false,
			"enableAutoUpdateNotification": false,
		},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	})
	home, err := os.MkdirTemp(lookupEnv(r.opts.Env, "TMPDIR"), "spawn-gemini-")
	if err != nil {
		return "", errorf(KindInternal, err, "cannot create gemini's home: %v", err)
	}
	r.cleanups = append(r.cleanups, func() error { return os.RemoveAll(home) })
	dir := filepath.Join(home, ".gemini")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", errorf(KindInternal, err, "cannot create gemini's home: %v", err)
	}
	entries, _ := os.ReadDir(userDir) // none: an API-key user without ~/.gemini
	for _, e := range entries {
		if e.Name() == "settings.json" {
			continue
		}
		if err := os.Symlink(filepath.Join(userDir, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return "", errorf(KindInternal, err, "cannot prepare gemini's home: %v", err)
		}
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return "", errorf(KindInternal, err, "cannot write gemini's settings: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), append(b, '\n'), 0o600); err != nil {
		return "", errorf(KindInternal, err, "cannot write gemini's settings: %v", err)
	}
	r.geminiHomeDir = home
	return home, nil
}

// mergeJSON copies src into dst, recursing into objects present in both.
func mergeJSON(dst, src map[string]any) {
	for k, v := range src {
		sub, isMap := v.(map[string]any)
		have, haveMap := dst[k].(map[string]any)
		if isMap && haveMap {
			mergeJSON(have, sub)
			continue
		}
		dst[k] = v
	}
}

// geminiBinary finds the configured gemini CLI in the PATH of env.
func geminiBinary(cfg Config, env []string) (string, error) {
	name := cfg.Runners.Gemini.Command
	bin, err := proc.LookPath(name, env)
	if err != nil {
		return "", errorf(KindMissingCLI, err, "the gemini CLI (%s) was not found; install it with `npm install -g @google/gemini-cli` or set runners.gemini.command", name)
	}
	return bin, nil
}

// Gemini returns the reviewer runner the configuration describes.
func (r *Run) Gemini() (*runners.Gemini, error) {
	cfg := r.opts.Config.Runners.Gemini
	bin, err := geminiBinary(r.opts.Config, r.opts.Env)
	if err != nil {
		return nil, err
	}
	home, err := r.geminiHome()
	if err != nil {
		return nil, err
	}
	return &runners.Gemini{Bin: bin, Model: cfg.Model, ApprovalMode: cfg.ApprovalMode, Home: home}, nil
}

// ReviewerTurn runs the reviewer once in the sandbox, read-only: a denied
// tool is recorded, never granted. The error is an *Error classifying a
// failure (auth, rate limit, unavailable model, crash, timeout, interrupt).
func (r *Run) ReviewerTurn(ctx context.Context, iteration int, prompt, resume string) (*watcher.Session, error) {
	gemini, err := r.Gemini()
	if err != nil {
		return nil, err
	}
	cfg := r.opts.Config.Spawn
	policy := watcher.Policy{IdleTimeout: cfg.IdleTimeout, TotalTimeout: cfg.TotalTimeout, Grace: r.opts.Grace}
	sess, err := r.supervise(ctx, gemini, LLMGemini, "reviewer", iteration, runners.Turn{Prompt: prompt, Dir: r.Sandbox.Path, Resume: resume}, policy)
	if err != nil {
		return sess, err
	}
	return sess, classify(sess, "gemini", r.transcriptHint())
}
