package proc

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A spawn-shim is run only when it is the one built with spawn: its Go
// build ID, where Go's linker writes it, is the one stamped into spawn.
func TestOnlyTheShimBuiltWithSpawnRuns(t *testing.T) {
	const id = "aaaaaaaaaaaaaaaaaaaa/bbbbbbbbbbbbbbbbbbbb/cccccccccccccccccccc/dddddddddddddddddddd"
	elfNote := func(id string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, 4)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(id)))
		b = binary.LittleEndian.AppendUint32(b, 4)
		return append(append(b, "Go\x00\x00"...), id...)
	}
	at := func(offset int, b []byte) []byte {
		return append(make([]byte, offset), append(b, make([]byte, 64)...)...)
	}
	cases := []struct {
		name  string
		shim  []byte // nil: no shim
		mode  os.FileMode
		stamp string
		want  bool
	}{
		{name: "the ELF note of the shim built with spawn", shim: at(3976, elfNote(id)), mode: 0o755, stamp: id, want: true},
		{name: "the Mach-O string of the shim built with spawn", shim: at(4096, []byte("\xff Go build ID: \""+id+"\"\n \xff")), mode: 0o755, stamp: id, want: true},
		{name: "spawn built alone (go install): no stamp", shim: at(3976, elfNote(id)), mode: 0o755, stamp: ""},
		{name: "no shim beside spawn", stamp: id},
		{name: "a shim of another build", shim: at(3976, elfNote("x"+id[1:])), mode: 0o755, stamp: id},
		{name: "the ID, not in a note", shim: at(3976, []byte(id)), mode: 0o755, stamp: id},
		{name: "the ID past where the linker writes it", shim: at(buildIDSpan, elfNote(id)), mode: 0o755, stamp: id},
		{name: "a shim that cannot be run", shim: at(3976, elfNote(id)), mode: 0o644, stamp: id},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "spawn")
			require.NoError(t, os.WriteFile(exe, []byte("spawn"), 0o755))
			if c.shim != nil {
				require.NoError(t, os.WriteFile(filepath.Join(dir, ShimName), c.shim, c.mode))
			}
			shim, ok := shimBeside(exe, c.stamp)
			assert.Equal(t, filepath.Join(dir, ShimName), shim)
			assert.Equal(t, c.want, ok)
		})
	}
	t.Run("a folder named spawn-shim", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(dir, ShimName), 0o755))
		_, ok := shimBeside(filepath.Join(dir, "spawn"), id)
		assert.False(t, ok)
	})
}
