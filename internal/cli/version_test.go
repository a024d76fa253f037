package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// What make build stamps is what spawn version prints: the tag and the
// commit, or devel and the commit without a tag.
func TestVersionSaysWhatTheBuildStamped(t *testing.T) {
	v, c := buildVersion, buildCommit
	t.Cleanup(func() { buildVersion, buildCommit = v, c })

	buildVersion, buildCommit = "", "0123456789ab-dirty"
	assert.Equal(t, "spawn devel (commit 0123456789ab-dirty)", versionLine())
	assert.Equal(t, "devel-0123456789ab-dirty", version(), "one word for the MCP handshake")

	buildVersion, buildCommit = "v1.2.0", "0123456789ab"
	assert.Equal(t, "spawn v1.2.0 (commit 0123456789ab)", versionLine())
	assert.Equal(t, "v1.2.0", version())

	buildVersion, buildCommit = "v1.2.0-3-g0123456", "0123456789ab"
	assert.Equal(t, "spawn v1.2.0-3-g0123456", versionLine(), "git describe names the commit already")

	m := pseudoVersionRE.FindStringSubmatch("v0.0.0-20261126213000-0123456789ab")
	require.Len(t, m, 2)
	assert.Equal(t, "0123456789ab", m[1], "go install of a commit: its pseudo-version names it")
}

// make build's linker flags name variables that exist: the built binary
// prints the checkout's commit (go build ignores -X for a name that does
// not exist, so only building proves it).
func TestMakeBuildStampsTheCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds spawn")
	}
	root := testenv.Root(t)
	env := os.Environ()
	ctx := context.Background()
	flags, err := proc.Run(ctx, proc.Cmd{Path: "make", Args: []string{"-s", "--no-print-directory", "ldflags"}, Dir: root, Env: env})
	require.NoError(t, err)
	commit, err := proc.Run(ctx, proc.Cmd{Path: "git", Args: []string{"rev-parse", "--short=12", "HEAD"}, Dir: root, Env: env})
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "spawn")
	_, err = proc.Run(ctx, proc.Cmd{Path: "go", Args: []string{"build", "-ldflags", strings.TrimSpace(string(flags)), "-o", bin, "./cmd/spawn"}, Dir: root, Env: env})
	require.NoError(t, err)
	out, err := proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{"version"}, Env: env})
	require.NoError(t, err)
	assert.Regexp(t, `^spawn \S+( \(commit `+strings.TrimSpace(string(commit))+`(-dirty)?\))?\n$`, string(out))
	assert.Contains(t, string(out), strings.TrimSpace(string(commit)), "the commit is there, in the version or beside it")
}
