package proc

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
)

// ShimName is the file name of spawn-shim, spawn's second binary, which
// make build puts beside spawn: it runs spawn's own processes (an agent's
// reaper, claude's hooks, the model bridge, the git helper) and nothing
// else, a quarter of spawn's size, and starts in about half the time.
const ShimName = "spawn-shim"

// shimID is the Go build ID of the spawn-shim built with this binary,
// stamped by make build (-ldflags -X); "" for a binary built alone (go
// install), whose own processes run this binary.
var shimID string

// Own returns the binary that runs spawn's own processes: the spawn-shim
// beside this binary when it is the one built with it (its build ID is
// the one stamped here), else this binary. A shim from another build (an
// older install, a binary rebuilt alone) is never run: its processes
// might not speak this binary's protocol.
func Own() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if shim, ok := shimBeside(exe, shimID); ok {
		return shim, nil
	}
	return exe, nil
}

// IsShim reports whether path, which Own returned, is spawn-shim's.
func IsShim(path string) bool { return filepath.Base(path) == ShimName }

// shimBeside returns the spawn-shim in exe's folder, and whether it is
// there with the build ID id ("" is no ID: never).
func shimBeside(exe, id string) (string, bool) {
	shim := filepath.Join(filepath.Dir(exe), ShimName)
	return shim, id != "" && hasBuildID(shim, id)
}

// buildIDSpan is how far into a Go binary its build ID is looked for: the
// start of the file, where the linker writes it (cmd/internal/buildid
// reads as far).
const buildIDSpan = 32 << 10

// hasBuildID reports whether the file at path is a regular file holding
// the Go build ID id where Go's linker writes it: in its .note.go.buildid
// note (ELF), or as the string at the start of its text (Mach-O).
func hasBuildID(path, id string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close() // read only: nothing to lose
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return false
	}
	head := make([]byte, buildIDSpan)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return false
	}
	head = head[:n]
	// The ELF note: name size 4, the ID's size, type 4 (the Go build ID),
	// the name "Go" padded to 4 bytes, then the ID.
	note := binary.LittleEndian.AppendUint32(nil, 4)
	note = binary.LittleEndian.AppendUint32(note, uint32(len(id)))
	note = binary.LittleEndian.AppendUint32(note, 4)
	note = append(append(note, "Go\x00\x00"...), id...)
	return bytes.Contains(head, note) || bytes.Contains(head, []byte("\xff Go build ID: \""+id+"\"\n \xff"))
}
