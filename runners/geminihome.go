package runners

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// GeminiSettings are the settings of a reviewer's private gemini home.
type GeminiSettings struct {
	// MaxRetries bounds the CLI's retries of a failed model call
	// (general.maxAttempts = MaxRetries+1).
	MaxRetries int
	// Tools, when not empty, are the only built-in tools gemini offers the
	// model (tools.core): spawn's reviewer gets read-only file tools.
	Tools []string
	// ExcludedTools are never offered (tools.exclude).
	ExcludedTools []string
}

// NewGeminiHome prepares home (an empty directory the caller made, private
// to one reviewer seat) as that seat's GEMINI_CLI_HOME: home/.gemini holds
// settings.json with spawn's settings alone (the API key login, which the
// relay carries; the tools offered; the retry bound; telemetry, usage
// statistics and auto-update off) and nothing of the user's ~/.gemini:
// neither the user's settings (their MCP servers and the tokens in them),
// nor their login files. The gemini state that sessions write
// (projects.json, tmp/, history/) stays private to the seat: parallel
// reviewers sharing it lose their sessions.
func NewGeminiHome(home string, gs GeminiSettings) error {
	tools := map[string]any{}
	if len(gs.Tools) > 0 {
		tools["core"] = slices.Clone(gs.Tools)
	}
	if len(gs.ExcludedTools) > 0 {
		tools["exclude"] = slices.Clone(gs.ExcludedTools)
	}
	settings := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"tools":    tools,
		"general": map[string]any{
			"maxAttempts":                  gs.MaxRetries + 1,
			"enableAutoUpdate":             false,
			"enableAutoUpdateNotification": false,
		},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	}
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create gemini's home: %w", err)
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return fmt.Errorf("encode gemini's settings: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write gemini's settings: %w", err)
	}
	return nil
}
