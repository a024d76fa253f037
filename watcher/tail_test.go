package watcher

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTail: tail keeps the last n lines and at most max bytes, marking a
// cut with "[...]", and ends with one newline.
func TestTail(t *testing.T) {
	for _, c := range []struct {
		s      string
		n, max int
		want   string
	}{
		{"", 2, 100, "\n"},
		{"a", 2, 100, "a\n"},
		{"a\nb\n\n\n", 2, 100, "a\nb\n"},
		{"a\nb\nc", 2, 100, "[...]\nb\nc\n"},
		{"a\nb\nc\n", 3, 100, "a\nb\nc\n"},
		{"a\nb\nc\nd", 1, 100, "[...]\nd\n"},
		{"\n\nx", 2, 100, "[...]\n\nx\n"},
		{"line one\nline two", 2, 5, "[...]e two\n"},
		{"é" + strings.Repeat("x", 4), 9, 5, "[...]xxxx\n"},
	} {
		assert.Equal(t, c.want, tail(c.s, c.n, c.max), "tail(%q, %d, %d)", c.s, c.n, c.max)
	}
}
