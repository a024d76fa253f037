package cli

import (
	"strings"
	"testing"
	"unicode"

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

// FuzzCut: cut, which looks at no more of a line than it keeps, cuts as
// the whole line made into runes is cut (cutAllRunes).
func FuzzCut(f *testing.F) {
	for _, s := range []string{"", "short", "a line of words that is longer than the width", "héllo wörld ünïcode", "\xff\xfe bad bytes and words", strings.Repeat("x", 200)} {
		f.Add(s, uint8(10))
	}
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		width := 3 + int(n)%120
		if got, want := cut(s, width), cutAllRunes(s, width); got != want {
			t.Fatalf("cut(%q, %d) = %q, want %q", s, width, got, want)
		}
	})
}

// cutAllRunes is cut as it was written first: the whole of s in runes.
func cutAllRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	keep := r[:n-3]
	if r[n-3] != ' ' {
		if i := strings.LastIndexFunc(string(keep), unicode.IsSpace); i > 0 {
			keep = []rune(string(keep)[:i])
		}
	}
	return strings.TrimRight(string(keep), " \t,;:.") + "..."
}
