package runners

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// GeminiSettings are spawn's overrides of a reviewer's gemini settings.
type GeminiSettings struct {
	// MaxRetries bounds the CLI's retries of a failed model call
	// (general.maxAttempts = MaxRetries+1).
	MaxRetries int
	// Tools, when not empty, are the only built-in tools gemini offers the
	// model (tools.core): spawn's reviewer gets read-only file tools.
	Tools []string
	// ExcludedTools are never offered (tools.exclude, added to the user's).
	ExcludedTools []string
}

// NewGeminiHome prepares a private GEMINI_CLI_HOME for one reviewer seat
// and returns its path; the caller owns the directory and removes it when
// the seat is done. <home>/.gemini links the user's own top-level files of
// ~/.gemini (logins, accounts; from env's GEMINI_CLI_HOME, else HOME) and
// holds settings.json: the user's settings with spawn's overrides of gs on
// top (the retry bound; the tools offered, tools.core replacing the
// user's and tools.exclude added to it; telemetry, usage statistics and
// auto-update are off). The
// gemini state that sessions write (projects.json, tmp/, history/) stays
// private to the seat: parallel reviewers sharing it lose their sessions,
// and spawn's reviews do not clutter the user's own history. The user's
// files are never modified. The directory is private (0700) and made under
// env's TMPDIR, outside the run directory: the user's settings may hold
// secrets.
func NewGeminiHome(env []string, gs GeminiSettings) (home string, err error) {
	src := proc.Getenv(env, "GEMINI_CLI_HOME")
	if src == "" {
		src = proc.Getenv(env, "HOME")
	}
	userDir := filepath.Join(src, ".gemini")
	settings := map[string]any{}
	if b, err := os.ReadFile(filepath.Join(userDir, "settings.json")); err == nil {
		if err := json.Unmarshal(b, &settings); err != nil {
			return "", &SettingsError{Path: filepath.Join(userDir, "settings.json"), Err: err}
		}
	}
	tools := map[string]any{}
	if len(gs.Tools) > 0 {
		tools["core"] = gs.Tools
	}
	if len(gs.ExcludedTools) > 0 {
		exclude := slices.Clone(gs.ExcludedTools)
		if t, ok := settings["tools"].(map[string]any); ok {
			if have, ok := t["exclude"].([]any); ok {
				for _, x := range have {
					if s, ok := x.(string); ok {
						exclude = append(exclude, s)
					}
				}
			}
		}
		tools["exclude"] = exclude
	}
	mergeJSON(settings, map[string]any{
		"tools": tools,
		"general": map[string]any{
			"maxAttempts":                  gs.MaxRetries + 1,
			"enableAutoUpdate":             false,
			"enableAutoUpdateNotification": false,
		},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	})
	home, err = os.MkdirTemp(proc.Getenv(env, "TMPDIR"), "spawn-gemini-")
	if err != nil {
		return "", fmt.Errorf("create gemini's home: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(home))
			home = ""
		}
	}()
	dir := filepath.Join(home, ".gemini")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return home, fmt.Errorf("create gemini's home: %w", err)
	}
	entries, err := os.ReadDir(userDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) { // none: an API-key user without ~/.gemini
		return home, fmt.Errorf("read %s: %w", userDir, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "settings.json" || e.Name() == "projects.json" {
			continue
		}
		if err := os.Symlink(filepath.Join(userDir, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return home, fmt.Errorf("prepare gemini's home: %w", err)
		}
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return home, fmt.Errorf("encode gemini's settings: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), append(b, '\n'), 0o600); err != nil {
		return home, fmt.Errorf("write gemini's settings: %w", err)
	}
	return home, nil
}

// SettingsError is a user's gemini settings.json that is not valid JSON.
type SettingsError struct {
	Path string
	Err  error
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("cannot read your gemini settings %s (%v); fix the file, then run again", e.Path, e.Err)
}

func (e *SettingsError) Unwrap() error { return e.Err }

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
