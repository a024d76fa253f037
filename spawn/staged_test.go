package spawn

import (
	"path/filepath"
	"strings"
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

// forgingTest is a go test that commits forged.txt with git, then
// replaces the commit's blob in its own store with another, well-formed
// object under the same name: the pack spawn's git helper sends holds
// data that does not hash to the names the commit gives.
const forgingTest = `package forged

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, args ...string) string {
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestForge(t *testing.T) {
	if err := os.WriteFile("forged.txt", []byte("what the commit says\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, "add", "forged.txt")
	git(t, "commit", "-q", "-m", "forged")
	blob := git(t, "rev-parse", "HEAD:forged.txt")
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	body := "something else\n"
	fmt.Fprintf(w, "blob %d\x00%s", len(body), body)
	w.Close()
	p := filepath.Join(".git", "objects", blob[:2], blob[2:])
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	t.Log("FORGED " + blob)
}
`

// A coder that forges an object in its own git store (through the go
// test it wrote) gets nothing published: the pack streams into your git's
// verified import, which refuses it; the run's branch stays at the base,
// the forged commit is not in your repository, the run says why on the
// record, and the worktree still holds the work.
func TestAForgedObjectInTheCodersStoreIsRefused(t *testing.T) {
	requireBwrap(t)
	r := runSolo(t, modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{
			{ID: "gomod", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/go.mod", "content": "module forged\n\ngo 1.21\n"}},
			{ID: "test", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/forge_test.go", "content": forgingTest}},
		}},
		{Tools: []modelserver.ToolCall{{ID: "go-test", Name: "Bash", Input: map[string]any{"command": "go test -count=1 -v ./...", "description": "forge", "timeout": 600000}}}},
		{Text: "Done."},
	}}}}, "forge an object", nil)
	ran := toolOutput(r.srv, "go-test")
	require.Contains(t, ran, "FORGED", "the coder's go test ran: %s", ran)
	require.Error(t, r.err)
	assert.Contains(t, r.err.Error(), "could not be verified")
	assert.Equal(t, r.rec.Base, testenv.Git(t, r.repo, "rev-parse", r.rec.Branch), "the branch stays at the base")
	assert.Empty(t, testenv.Git(t, r.repo, "log", "--all", "--format=%s", "--grep=forged"), "the forged commit is not in your repository")
	var said []string
	for _, f := range r.rec.SecurityFindings {
		said = append(said, f.Description)
	}
	assert.Contains(t, strings.Join(said, "\n"), "could not save the coder's work", "the record says why nothing was published")
	assert.FileExists(t, filepath.Join(r.rec.SandboxPath, "forged.txt"), "the work stays in the worktree")
}
