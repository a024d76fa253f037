package forge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// Words an agent chose reach GitHub as data: they ping no one and start
// no slash-command, and otherwise read as written.
func TestAnAgentsWordsPingNoOneAndStartNoCommand(t *testing.T) {
	for in, want := range map[string]string{
		"fixed, thanks":                       "fixed, thanks",
		"cc @octocat and @org/security":       "cc @\u200boctocat and @\u200borg/security",
		"/approve\nfixed":                     "\u200b/approve\nfixed",
		"done\n  /merge now\n> /lgtm":         "done\n\u200b  /merge now\n\u200b> /lgtm",
		"a path: internal/x/y.go stays as is": "a path: internal/x/y.go stays as is",
	} {
		assert.Equal(t, want, asData(in), "%q", in)
	}
}

// A change that touches CI configuration is named, whatever else changed.
func TestCIChangesAreNamed(t *testing.T) {
	repo := testenv.Repo(t)
	base := testenv.Git(t, repo, "rev-parse", "HEAD")
	for _, p := range []string{".github/workflows/x.yml", ".gitlab-ci.yml", "src/main.go", ".github/ISSUE_TEMPLATE/bug.md", "Jenkinsfile"} {
		require.NoError(t, os.MkdirAll(filepath.Join(repo, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, p), []byte("x\n"), 0o644))
	}
	testenv.Git(t, repo, "add", "-A")
	testenv.Git(t, repo, "commit", "-q", "-m", "ci")
	ci, err := ciChanges(t.Context(), git.Repo{Dir: repo, Env: testenv.Env(t)}, base, "HEAD")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{".github/workflows/x.yml", ".gitlab-ci.yml", "Jenkinsfile"}, ci)
}
