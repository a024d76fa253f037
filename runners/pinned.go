package runners

// The agent CLI versions spawn is tested with: agents/package.json pins
// them, and `spawn doctor` compares the installed ones against them.
const (
	PinnedClaude = "2.1.332"
	PinnedGemini = "0.61.0"
)
