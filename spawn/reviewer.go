package spawn

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// geminiHome prepares the private GEMINI_CLI_HOME of one reviewer seat for
// this run, once per seat: <home>/.gemini links the user's own top-level
// files of ~/.gemini (logins, accounts) and holds settings.json, the user's
// settings with spawn's overrides on top: general.maxAttempts bounds the
// CLI's retries of a failed model call, and telemetry, usage statistics and
// auto-update are off. The gemini state that sessions write (projects.json,
// tmp/, history/) stays private to the seat: parallel reviewers sharing it
// lose their sessions (a concurrent first run of two gemini processes in one
// project left one of them unable to --resume), and spawn's reviews do not
// clutter the user's own history. The user's files are never modified. The
// directory is private (0700), outside the run directory (the user's
// settings may hold secrets), and removed when the run finishes.
func (r *Run) geminiHome(seat string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if home, ok := r.geminiHomes[seat]; ok {
		return home, nil
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
		if !e.Type().IsRegular() || e.Name() == "settings.json" || e.Name() == "projects.json" {
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
	if r.geminiHomes == nil {
		r.geminiHomes = map[string]string{}
	}
	r.geminiHomes[seat] = home
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
	return agentBinary("gemini", cfg.Runners.Gemini.Command, "@google/gemini-cli", env)
}

// Gemini returns the runner of one reviewer seat (a name such as a review
// domain; each seat keeps its own gemini sessions).
func (r *Run) Gemini(seat string) (*runners.Gemini, error) {
	cfg := r.opts.Config.Runners.Gemini
	bin, err := geminiBinary(r.opts.Config, r.opts.Env)
	if err != nil {
		return nil, err
	}
	home, err := r.geminiHome(seat)
	if err != nil {
		return nil, err
	}
	return &runners.Gemini{Bin: bin, Model: cfg.Model, ApprovalMode: cfg.ApprovalMode, Home: home}, nil
}

// ReviewerTurn runs a reviewer seat once in the sandbox (resuming its
// session when resume is set), read-only: a denied tool is recorded, never
// granted. Seats may run concurrently. The error is an *Error classifying a
// failure (auth, rate limit, unavailable model, crash, timeout, interrupt).
func (r *Run) ReviewerTurn(ctx context.Context, seat string, iteration int, prompt, resume string) (*watcher.Session, error) {
	gemini, err := r.Gemini(seat)
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
