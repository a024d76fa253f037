package runners

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A reviewer seat's gemini home holds spawn's settings alone: the tools it
// is offered, the retry bound, the API key login the relay carries, and no
// phone-home.
func TestTheReviewersGeminiHomeHoldsSpawnsSettingsAlone(t *testing.T) {
	home := t.TempDir()
	excluded := []string{"glob"}
	require.NoError(t, NewGeminiHome(home, GeminiSettings{MaxRetries: 1, Tools: []string{"read_file", "glob"}, ExcludedTools: excluded}))
	entries, err := os.ReadDir(filepath.Join(home, ".gemini"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no login file, nothing of the user's")
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	require.NoError(t, err)
	var got struct {
		Security struct {
			Auth struct {
				SelectedType string `json:"selectedType"`
			} `json:"auth"`
		} `json:"security"`
		Tools struct {
			Core    []string `json:"core"`
			Exclude []string `json:"exclude"`
		} `json:"tools"`
		General struct {
			MaxAttempts int `json:"maxAttempts"`
		} `json:"general"`
		Telemetry struct {
			Enabled bool `json:"enabled"`
		} `json:"telemetry"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, "gemini-api-key", got.Security.Auth.SelectedType)
	assert.Equal(t, []string{"read_file", "glob"}, got.Tools.Core)
	assert.Equal(t, []string{"glob"}, got.Tools.Exclude)
	assert.Equal(t, 2, got.General.MaxAttempts)
	assert.False(t, got.Telemetry.Enabled)
}
