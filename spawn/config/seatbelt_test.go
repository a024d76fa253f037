package config

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
)

// isolation = "seatbelt" in the user's own file: a repository's file that
// asks for less (auto, none, the other system's bwrap) does not get it.
func TestARepositoryCannotLowerSeatbelt(t *testing.T) {
	for _, asked := range []string{"none", "auto", "bwrap"} {
		t.Run(asked, func(t *testing.T) {
			repo, xdg := t.TempDir(), t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(xdg, "spawn"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(xdg, "spawn", File), []byte("[sandbox]\nisolation = \"seatbelt\"\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(repo, File), []byte("[sandbox]\nisolation = \""+asked+"\"\n"), 0o644))
			loaded, err := Load(context.Background(), Source{RepoDir: repo, Env: []string{"PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + xdg}})
			require.NoError(t, err)
			assert.Equal(t, isolation.ModeSeatbelt, loaded.Config.Sandbox.Isolation)
			require.Len(t, loaded.Notes, 1)
			assert.Contains(t, loaded.Notes[0], "sandbox.isolation = \""+asked+"\", which would lower the agents' isolation")
		})
	}
}
