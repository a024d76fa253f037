package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Text too long for a terminal line is cut at a word, with "...": never
// inside a word, unless one word is longer than the line.
func TestCutEndsAtAWord(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short enough", 20, "short enough"},
		{"the summary has to cut this particular sentence", 30, "the summary has to cut this..."},
		{"cut right after a word boundary here", 14, "cut right..."},
		{"cut, at punctuation. too", 16, "cut, at..."},
		{"supercalifragilisticexpialidocious", 10, "superca..."},
		{"héllo wörld ünïcode", 12, "héllo..."},
	} {
		got := cut(tt.s, tt.n)
		assert.Equal(t, tt.want, got, "cut(%q, %d)", tt.s, tt.n)
		assert.LessOrEqual(t, len([]rune(got)), tt.n)
	}
}
