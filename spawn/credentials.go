package spawn

import (
	"os"
	"path/filepath"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// checkGeminiCredentials finds, before anything is created and before the
// coder spends anything, a reviewer that could not log in. Under spawn the
// gemini CLI's credential is a Gemini API key (GEMINI_API_KEY or
// GOOGLE_API_KEY), which the relay adds to its requests: a Google login
// would have to be shown to the agent as a file, which spawn does not do.
// It only refuses what could not work; a key it finds may still be wrong
// (that is found when the reviewer runs).
func checkGeminiCredentials(env []string) error {
	if geminiCredential(env) != nil {
		return nil
	}
	why := ""
	if home := proc.Getenv(env, "HOME"); home != "" {
		if _, err := os.Stat(filepath.Join(home, ".gemini", "oauth_creds.json")); err == nil {
			why = " (spawn does not use your Google login: it would have to show the agent your login file)"
		}
	}
	return errorf(KindAuth, nil, "the reviewer (gemini) has no credential%s: set GEMINI_API_KEY to a Gemini API key, then run again (nothing was started)", why)
}
