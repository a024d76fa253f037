// Package text holds the few ways spawn words what it reports: a count
// with its noun, a commit's short id, a message's first line.
package text

import (
	"fmt"
	"strings"
)

// Plural is n and noun, with an s unless n is 1: "1 commit", "2 commits".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ShortSHA is a commit id cut to 12 characters.
func ShortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// FirstLine is s's first line, cut to 72 characters ("..." ends a cut
// one).
func FirstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > 72 {
		line = string(r[:69]) + "..."
	}
	return line
}
