package cli

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Progress lines and colour go to stderr only when it is a terminal:
// /dev/null is a character device but no terminal, a pipe or a buffer is
// none either, and a pseudo-terminal is one.
func TestOnlyATerminalIsATerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, null.Close()) })
	assert.False(t, isTerminal(null), "/dev/null is not a terminal")

	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()); assert.NoError(t, w.Close()) })
	assert.False(t, isTerminal(w), "a pipe is not a terminal")
	assert.False(t, isTerminal(&bytes.Buffer{}), "a buffer is not a terminal")

	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err, "this test needs a pseudo-terminal")
	t.Cleanup(func() { assert.NoError(t, pty.Close()) })
	assert.True(t, isTerminal(pty), "a pseudo-terminal is a terminal")
}
