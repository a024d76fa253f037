package watcher

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// The agent's output file is private and has no name: nothing of it is
// left on disk, whatever happens to spawn.
func TestOutputFileIsPrivateAndNameless(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	o, err := newOutputFile("stdout")
	require.NoError(t, err)
	fi, err := o.w.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	left, err := os.ReadDir(os.Getenv("TMPDIR"))
	require.NoError(t, err)
	assert.Empty(t, left, "neither the file nor its directory has a name")
	require.NoError(t, o.close())
}

// The follower hands out what the agent wrote as it is written, and ends
// only once the agent has exited and the whole file is read.
func TestFollowerReadsUntilExitAndTheEnd(t *testing.T) {
	o, err := newOutputFile("stdout")
	require.NoError(t, err)
	defer func() { require.NoError(t, o.close()) }()
	exited := make(chan struct{})
	var touched atomic.Int64
	r := o.follow(exited, func() { touched.Add(1) })
	buf := make([]byte, 64)

	write := func(s string) {
		_, err := o.w.WriteString(s)
		require.NoError(t, err)
	}
	write("first\n")
	n, err := r.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "first\n", string(buf[:n]))

	// A read at the end waits for the next write.
	got := make(chan string)
	go func() {
		n, err := r.Read(buf)
		assert.NoError(t, err)
		got <- string(buf[:n])
	}()
	write("second\n")
	assert.Equal(t, "second\n", <-got)

	// Written before the exit, read after it: still there; then EOF.
	write("last, no newline")
	close(exited)
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "last, no newline", string(rest))
	n, err = r.Read(buf)
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, int64(3), touched.Load(), "every read with data counts as activity")
}

// A transcript that fails to write is left alone after its first error,
// which is kept; the stream still reaches the parser and the stderr tail.
func TestTranscriptWriteErrorsAreKept(t *testing.T) {
	boom := errors.New("disk full")
	tee := &lineTee{w: failingWriter{boom}, red: observability.NewRedactor(nil)}
	_, err := tee.Write([]byte("a\nb\n"))
	require.NoError(t, err, "the stream goes on")
	_, err = tee.Write([]byte("c\nd"))
	require.NoError(t, err, "the stream goes on")
	tee.flush()
	assert.ErrorIs(t, tee.err, boom)

	last, err := copyLines(strings.NewReader("one\ntwo\n   at frame\n"), failingWriter{boom}, nil)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, "two", last)

	var buf bytes.Buffer
	last, err = copyLines(strings.NewReader("x\ny"), &buf, nil)
	assert.NoError(t, err)
	assert.Equal(t, "y", last)
	assert.Equal(t, "x\ny", buf.String())
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
