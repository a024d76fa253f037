package cli

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A terminal or pipe that is gone (the reader closed it) makes spawn's
// writes fail; it never kills spawn with SIGPIPE before it has saved the
// work and written the record.
func TestWritingToAClosedPipeDoesNotKillSpawn(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close()) // the reader is gone
	cmd := exec.Command(os.Args[0], "version")
	cmd.Env = append(os.Environ(), "SPAWN_TEST_BE_SPAWN=1")
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	require.NoError(t, w.Close())
	require.NoError(t, err, "spawn died writing to a closed pipe")
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())
}
