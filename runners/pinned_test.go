package runners

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The versions doctor checks against are the ones agents/package.json pins.
func TestPinnedVersionsAreThePackageJSONs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "agents", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if got := pkg.Dependencies["@anthropic-ai/claude-code"]; got != PinnedClaude {
		t.Errorf("agents/package.json pins claude %s, runners.PinnedClaude is %s", got, PinnedClaude)
	}
	if got := pkg.Dependencies["@google/gemini-cli"]; got != PinnedGemini {
		t.Errorf("agents/package.json pins gemini %s, runners.PinnedGemini is %s", got, PinnedGemini)
	}
}
