package spawn

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// stagingTest is a go test that renames README.md with git mv and leaves
// the rename staged, uncommitted, as a coder that uses git does.
const stagingTest = `package staged

import (
	"os/exec"
	"testing"
)

func TestRename(t *testing.T) {
	if out, err := exec.Command("git", "mv", "README.md", "READ-ME.md").CombinedOutput(); err != nil {
		t.Fatalf("git mv: %v: %s", err, out)
	}
}
`

// A coder that renames a file with git mv (through the go test it
// wrote, the only command the default manifest allows) and does not
// commit gets its work saved as it staged it: the run succeeds and the
// branch holds the rename.
func TestWhatTheCoderStagedWithGitLandsOnTheBranch(t *testing.T) {
	requireBwrap(t)
	r := runSolo(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{
			{ID: "gomod", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/go.mod", "content": "module staged\n\ngo 1.21\n"}},
			{ID: "test", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/rename_test.go", "content": stagingTest}},
		}},
		{Tools: []modelserver.ToolCall{{ID: "go-test", Name: "Bash", Input: map[string]any{"command": "go test -count=1 ./...", "description": "rename", "timeout": 600000}}}},
		{Text: "Renamed the README."},
	}}}}, "rename the README", nil)
	require.NoError(t, r.err)
	ran := toolOutput(r.srv, "go-test")
	require.Contains(t, ran, "ok", "the coder's go test ran: %s", ran)
	assert.Equal(t, "READ-ME.md\ngo.mod\nrename_test.go", testenv.Git(t, r.repo, "ls-tree", "--name-only", r.rec.Branch))
	assert.Len(t, r.rec.Commits, 1)
}
