package spawn

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

// A coder that writes a workflow in github mode does not get it pushed:
// the push is refused with what to do, the pull request's branch on
// GitHub does not have it, and the work stays on the local branch.
func TestGitHubModeDoesNotPushAWorkflowTheCoderWrote(t *testing.T) {
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{
			{ID: "w", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/calc.go", "content": calcSource}},
			{ID: "ci", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/.github/workflows/exfiltrate.yml", "content": "on: push\njobs: {}\n"}},
		}},
		{Text: "Added Total."},
	}}}}
	r := runGitHub(t, sc, nil, nil)
	require.Error(t, r.err)
	assert.Equal(t, fault.KindGitHub, KindOf(r.err))
	assert.Contains(t, r.err.Error(), ".github/workflows/exfiltrate.yml")
	assert.Contains(t, r.err.Error(), "allow_ci_changes")
	assert.Contains(t, testenv.Git(t, r.repo, "ls-tree", "-r", "--name-only", r.rec.Branch), ".github/workflows/exfiltrate.yml", "the work is on the local branch")
	assert.NotContains(t, testenv.Git(t, r.repo, "ls-remote", "origin"), strings.TrimPrefix(r.rec.Branch, "refs/heads/"), "nothing was pushed")
}
