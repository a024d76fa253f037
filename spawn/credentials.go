package spawn

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// geminiCredentialVars are the environment variables through which the
// gemini CLI finds a credential or a Google Cloud login.
var geminiCredentialVars = []string{
	"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS",
	"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_CLOUD_PROJECT",
}

// checkGeminiCredentials finds, before anything is created and before the
// coder spends anything, a reviewer that could not log in: no credential
// variable in env, no saved login in the user's ~/.gemini, and no
// configured login of a kind that needs neither. It only refuses what
// gemini itself would refuse; a credential it finds may still be wrong
// (that is found when the reviewer runs).
func checkGeminiCredentials(env []string) error {
	for _, name := range geminiCredentialVars {
		if proc.Getenv(env, name) != "" {
			return nil
		}
	}
	home := proc.Getenv(env, "GEMINI_CLI_HOME")
	if home == "" {
		home = proc.Getenv(env, "HOME")
	}
	dir := filepath.Join(home, ".gemini")
	if _, err := os.Stat(filepath.Join(dir, "oauth_creds.json")); err == nil {
		return nil
	}
	var settings struct {
		Security struct {
			Auth struct {
				SelectedType string `json:"selectedType"`
			} `json:"auth"`
		} `json:"security"`
		SelectedAuthType string `json:"selectedAuthType"` // older gemini versions
	}
	if b, err := os.ReadFile(filepath.Join(dir, "settings.json")); err == nil && json.Unmarshal(b, &settings) == nil {
		switch t := settings.Security.Auth.SelectedType + settings.SelectedAuthType; t {
		case "", "gemini-api-key", "oauth-personal":
		default: // cloud-shell, compute-default-credentials, vertex-ai...: logins spawn cannot see
			return nil
		}
	}
	return errorf(KindAuth, nil, "the reviewer (gemini) has no credential: set GEMINI_API_KEY, or log in once by running gemini, then run again (nothing was started)")
}
