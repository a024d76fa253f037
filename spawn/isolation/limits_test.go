package isolation

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// caged runs script under sh in cage c, asks Check every 50 ms until it
// reports a limit or the script ends, and returns what Check said.
func caged(t *testing.T, c *Cage, script string) (Exceeded, string) {
	t.Helper()
	c.Mark()
	var out bytes.Buffer
	p, err := proc.Start(proc.Cmd{Path: "sh", Args: []string{"-c", script}, Env: []string{"PATH=/usr/bin:/bin"}, Stdout: &out, Stderr: &out, Cage: c.Proc()})
	require.NoError(t, err)
	defer func() {
		p.Kill()
		_, err := p.Wait()
		require.NoError(t, err)
	}()
	deadline := time.After(30 * time.Second)
	for {
		if what, detail := c.Check(); what != "" {
			return what, detail
		}
		select {
		case <-p.Done():
			return c.Check()
		case <-deadline:
			t.Fatalf("no limit reached; the script said: %s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// requireCgroups fails under CI, and skips elsewhere, where spawn cannot
// make cgroups (not root, no delegation).
func requireCgroups(t *testing.T, c *Cage) {
	t.Helper()
	if c.Enforced() == EnforcedRlimit {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root: spawn must be able to make cgroups there")
		}
		t.Skip("spawn cannot make cgroups here (not root, no delegated cgroup)")
	}
}

// A fork bomb in an agent's tree hits the cage's process limit, and the
// cage says so; the host is not touched (the limit here is 20 processes).
func TestAForkBombReachesTheProcessLimit(t *testing.T) {
	c := NewCage("test-"+t.Name(), Limits{Processes: 20}, nil)
	defer func() { require.NoError(t, c.Close()) }()
	requireCgroups(t, c)
	what, detail := caged(t, c, "for i in $(seq 100); do sleep 30 & done; wait")
	assert.Equal(t, ExceededProcesses, what)
	assert.Contains(t, detail, "more than 20 processes")
}

// A process that takes more memory than the cage allows is killed, and
// the cage says so (the limit here is 64 MiB).
func TestAMemoryHogReachesTheMemoryLimit(t *testing.T) {
	c := NewCage("test-"+t.Name(), Limits{Memory: 64 << 20}, nil)
	defer func() { require.NoError(t, c.Close()) }()
	requireCgroups(t, c)
	// tail keeps a line whole: 512 MiB of zeros and no line end.
	what, detail := caged(t, c, "head -c 536870912 /dev/zero | tail -n 1 > /dev/null")
	assert.Equal(t, ExceededMemory, what)
	assert.Contains(t, detail, "64MiB")
}

// A process that fills its filesystem past the cage's disk limit is seen
// (the limit here is 16 MiB; the process writes 64 MiB).
func TestADiskFillReachesTheDiskLimit(t *testing.T) {
	dir := t.TempDir()
	c := NewCage("test-"+t.Name(), Limits{Disk: 16 << 20}, []string{dir})
	defer func() { require.NoError(t, c.Close()) }()
	what, detail := caged(t, c, "dd if=/dev/zero of="+filepath.Join(dir, "big")+" bs=1M count=64 conv=fsync 2>/dev/null; sleep 5")
	assert.Equal(t, ExceededDisk, what)
	assert.Contains(t, detail, "16MiB")
}

func TestSizesReadAndWriteInBinaryUnits(t *testing.T) {
	for in, want := range map[string]int64{"8GiB": 8 << 30, "512MiB": 512 << 20, "1024": 1024, "1.5GiB": 3 << 29, "2GB": 2e9} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "-1GiB", "8 parsecs", "GiB"} {
		_, err := ParseSize(bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, "8GiB", Size(8<<30))
	assert.Equal(t, "1000B", Size(1000))
}
