package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSkillNamesOnlyRealCommandsAndFlags keeps the host skill true: every
// `spawn <command> --flag` it tells a host to run exists.
func TestSkillNamesOnlyRealCommandsAndFlags(t *testing.T) {
	b, err := os.ReadFile("../../.claude/skills/spawn/SKILL.md")
	require.NoError(t, err)
	app := newApp(&deps{}, runRun, runDemo)
	uses := regexp.MustCompile(`spawn ([a-z]+)((?: [^\x60\n|#]*)?)`).FindAllStringSubmatch(string(b), -1)
	require.NotEmpty(t, uses)
	checked := 0
	for _, m := range uses {
		cmd := app.Command(m[1])
		if cmd == nil {
			continue // prose: "spawn works in...", "spawn run" is checked where it is a command
		}
		checked++
		flags := map[string]bool{}
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				flags[n] = true
			}
		}
		for _, word := range strings.Fields(m[2]) {
			if !strings.HasPrefix(word, "--") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(word, "--"), "=")
			assert.True(t, flags[name], "SKILL.md: spawn %s has no flag --%s", m[1], name)
		}
	}
	assert.GreaterOrEqual(t, checked, 8, "the skill's commands were found")
}
