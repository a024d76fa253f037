package spawn

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// limitStory is a coder that writes a file, then runs a test that takes
// more than its sandbox allows.
func limitStory(attack string) modelserver.Scenario {
	return modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{
			{ID: "w", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/work.txt", "content": "work\n"}},
			{ID: "gomod", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/go.mod", "content": "module limits\n\ngo 1.21\n"}},
			{ID: "test", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/limits_test.go", "content": `package limits

import (
	"os"
	"os/exec"
	"testing"
)

var _ = os.Getpid
var _ = exec.Command

func TestGreedy(t *testing.T) {
` + attack + `
}
`}},
		}},
		{Tools: []modelserver.ToolCall{{ID: "go-test", Name: "Bash", Input: map[string]any{"command": "go test -count=1 ./...", "description": "test", "timeout": 600000}}}},
		{Text: "Done."},
	}}}}
}

// A fork bomb in the coder's test ends its turn with an outcome that says
// which limit stopped it and how to raise it; the host stays up, no
// process is left, and the work before it is on the branch.
func TestAForkBombEndsTheTurnWithItsLimit(t *testing.T) {
	requireBwrap(t)
	// The bomb's sleeps carry a duration of this test's own, so that no
	// other test's (or other checkout's) processes are taken for them.
	nap := fmt.Sprintf("%d.%06d", 60, os.Getpid()%1000000)
	r := runSolo(t, limitStory(`	for {
		exec.Command("sleep", "`+nap+`").Start()
	}`), "add work.txt", func(c *config.Config) {
		c.Sandbox.MaxProcesses = 64
	})
	require.Error(t, r.err)
	assert.Equal(t, KindBudget, KindOf(r.err))
	assert.Contains(t, r.err.Error(), "max_processes")
	assert.Equal(t, ExitTimeout, r.rec.ExitCode)
	assert.Equal(t, "work", testenv.Git(t, r.repo, "show", r.rec.Branch+":work.txt"))
	assert.Empty(t, testenv.Processes(t, func(cmd string) bool { return strings.HasPrefix(cmd, "sleep "+nap) }), "the bomb's processes died with the turn")
}

// A test that fills the disk ends the turn with its limit, long before
// the disk is full.
func TestADiskFillingWriteEndsTheTurnWithItsLimit(t *testing.T) {
	requireBwrap(t)
	r := runSolo(t, limitStory(`	f, _ := os.Create("fill.bin")
	buf := make([]byte, 1<<20)
	for i := 0; i < 4096; i++ {
		f.Write(buf)
		f.Sync()
	}`), "add work.txt", func(c *config.Config) {
		c.Sandbox.MaxDisk = 128 << 20
	})
	require.Error(t, r.err)
	assert.Equal(t, KindBudget, KindOf(r.err))
	assert.Contains(t, r.err.Error(), "max_disk")
	assert.Equal(t, "work", testenv.Git(t, r.repo, "show", r.rec.Branch+":work.txt"))
	// The limit counts what the filesystem lost, so other writers on the
	// machine may stop the test early: only a fill.bin bigger than what
	// spawn commits by itself must stay out of the branch.
	if fi, err := os.Stat(filepath.Join(r.rec.SandboxPath, "fill.bin")); err == nil && fi.Size() > 64<<20 {
		assert.NotContains(t, testenv.Git(t, r.repo, "ls-tree", "--name-only", r.rec.Branch), "fill.bin", "spawn does not commit a file that big by itself")
		assert.Contains(t, strings.Join(r.rec.Notes, "\n"), "fill.bin")
	}
}
