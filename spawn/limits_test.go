package spawn

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

// limitStory is a coder that writes a file, then runs a test that takes
// more than its sandbox allows: the turn ends there, so the script holds
// no answer after the test.
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
	assert.Equal(t, fault.KindBudget, KindOf(r.err))
	assert.Contains(t, r.err.Error(), "max_processes")
	assert.Equal(t, fault.ExitTimeout, r.rec.ExitCode)
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
	assert.Equal(t, fault.KindBudget, KindOf(r.err))
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

// The toolchain caches spawn keeps for a repository outlive a run: the
// second run's first `go test` builds with the cache the first run
// filled, which is spawn's (never the user's own GOCACHE).
func TestTheSecondRunOfARepositoryFindsItsCacheWarm(t *testing.T) {
	requireBwrap(t)
	t.Parallel() // its first go test builds from a cold cache
	cacheRoot := t.TempDir()
	userCache := t.TempDir()
	story := func(id string) modelserver.Scenario {
		return modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
			{Tools: []modelserver.ToolCall{
				{ID: id + "-mod", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/go.mod", "content": "module warm\n\ngo 1.21\n"}},
				{ID: id + "-test", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/warm_test.go", "content": "package warm\n\nimport \"testing\"\n\nfunc TestWarm(t *testing.T) {}\n"}},
			}},
			{Tools: []modelserver.ToolCall{{ID: id + "-go", Name: "Bash", Input: map[string]any{"command": "go env GOCACHE && go test ./...", "description": "test", "timeout": 600000}}}},
			{Text: "Done."},
		}}}}
	}
	env := []string{"SPAWN_CACHE=repository", "SPAWN_CACHE_DIR=" + cacheRoot, "GOCACHE=" + userCache}
	first := runSolo(t, story("a"), "add a test", func(c *config.Config) {
		c.Permissions.AllowedTools = append(c.Permissions.AllowedTools, "Bash(go env:*)")
	}, env...)
	require.NoError(t, first.err)
	// The coder's `go env GOCACHE`, as its transcript holds the output.
	cacheLine := regexp.MustCompile(regexp.QuoteMeta(cacheRoot) + `[^"\\]*`)
	gocache := func(transcript string) string {
		m := cacheLine.FindString(transcript)
		if m == "" {
			t.Fatalf("no GOCACHE under %s in the coder's transcript", cacheRoot)
		}
		return m
	}
	firstCache := gocache(coderTests(t, first))
	entries, err := os.ReadDir(firstCache)
	require.NoError(t, err)
	assert.NotEmpty(t, entries, "the first run filled the repository's cache")

	// A second run of the same repository: the same cache, already full.
	second := runSoloIn(t, first.repo, story("b"), "add another test", func(c *config.Config) {
		c.Permissions.AllowedTools = append(c.Permissions.AllowedTools, "Bash(go env:*)")
	}, env...)
	require.NoError(t, second.err)
	assert.Equal(t, firstCache, gocache(coderTests(t, second)), "the second run builds with the cache the first one filled")
	t.Logf("the coder's turn with its go test: %d ms from a cold cache, %d ms from the warm one",
		first.rec.CommandLines[0].DurationMS, second.rec.CommandLines[0].DurationMS)
	user, err := os.ReadDir(userCache)
	require.NoError(t, err)
	assert.Empty(t, user, "the user's own GOCACHE is never the coder's")
}

// coderTests is what the coder's processes of r printed (their
// transcripts), where its commands' output is.
func coderTests(t *testing.T, r *soloRun) string {
	t.Helper()
	var b strings.Builder
	for _, cl := range r.rec.CommandLines {
		out, err := os.ReadFile(filepath.Join(r.repo, ".spawn", "runs", r.rec.ID, cl.Stdout))
		require.NoError(t, err)
		b.Write(out)
	}
	return b.String()
}
