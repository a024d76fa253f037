package config

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeFile feeds the strict decoder and its line finder arbitrary
// files: they never panic, a file that decodes without error validates or
// fails with an *Error, and a line number is always one of the file's.
func FuzzDecodeFile(f *testing.F) {
	doc, err := os.ReadFile(filepath.Join("..", "..", File))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(doc, "spawn.idle_timeout")
	f.Add([]byte("[spawn]\nidle_timeout = \"1m\"\nmax_trns = 3\n"), "spawn.max_trns")
	f.Add([]byte("[permissions]\nallowed_tools = [\"Bash(unclosed\"]\n"), "permissions.allowed_tools")
	f.Add([]byte("[spawn]\nidle_timeout = 300\n"), "spawn.idle_timeout")
	f.Add([]byte("[\"spawn\"]\n\"idle_timeout\" = \"5m\" # comment\n"), "spawn.idle_timeout")
	f.Add([]byte("a = [\n"), "a")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		cfg, _, err := decodeFile("f.toml", data, Default())
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				if _, ok := verr.(*Error); !ok {
					t.Fatalf("Validate returned %T, want *Error", verr)
				}
			}
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		if n := keyLine(data, key); n < 0 || n > lines {
			t.Fatalf("keyLine = %d, the file has %d lines", n, lines)
		}
	})
}
