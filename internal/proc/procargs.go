package proc

import (
	"bytes"
	"encoding/binary"
)

// procArgsHas reports whether b, a process's arguments as Darwin's sysctl
// kern.procargs2 returns them, holds the environment entry kv (KEY=VALUE,
// compared whole). The layout is the argument count (a 32-bit integer in
// the machine's order, little-endian on every Mac spawn builds for), the
// executable's path and its NUL padding, then argc arguments, then the
// environment and the loader's own KEY=VALUE strings, each NUL-terminated.
// This is the environment the process was executed with: one that changed
// its own environment since still shows the one it started with, and a
// child forked without exec shows its parent's.
func procArgsHas(b []byte, kv string) bool {
	if len(b) < 4 || kv == "" {
		return false
	}
	argc := int(binary.LittleEndian.Uint32(b))
	rest := b[4:]
	// The executable's path, then its padding.
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return false
	}
	rest = rest[i:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	for n := 0; len(rest) > 0; n++ {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			i = len(rest)
		}
		s := rest[:i]
		if n >= argc && len(s) > 0 && string(s) == kv {
			return true
		}
		if i == len(rest) {
			break
		}
		rest = rest[i+1:]
	}
	return false
}
