package runners

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheReviewersToolSettingsOverrideTheUsersAndAddToItsExclusions(t *testing.T) {
	user := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(user, ".gemini"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(user, ".gemini", "settings.json"),
		[]byte(`{"tools":{"core":["run_shell_command"],"exclude":["web_fetch"],"sandbox":false}}`), 0o600))
	excluded := []string{"glob"}
	home, err := NewGeminiHome([]string{"HOME=" + user, "TMPDIR=" + t.TempDir()},
		GeminiSettings{MaxRetries: 1, Tools: []string{"read_file", "glob"}, ExcludedTools: excluded})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, os.RemoveAll(home)) })
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	require.NoError(t, err)
	var got struct {
		Tools struct {
			Core    []string `json:"core"`
			Exclude []string `json:"exclude"`
			Sandbox *bool    `json:"sandbox"`
		} `json:"tools"`
		General struct {
			MaxAttempts int `json:"maxAttempts"`
		} `json:"general"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, []string{"read_file", "glob"}, got.Tools.Core, "spawn's allowlist replaces the user's")
	assert.Equal(t, []string{"glob", "web_fetch"}, got.Tools.Exclude, "spawn's exclusions are added to the user's")
	assert.NotNil(t, got.Tools.Sandbox, "the user's other tool settings stay")
	assert.Equal(t, 2, got.General.MaxAttempts)
	assert.Equal(t, []string{"glob"}, excluded, "the caller's list is not changed")
}
