// Package suggest finds the name a user most likely meant: the nearest
// command, flag or configuration key to one that does not exist.
package suggest

import "strings"

// Nearest returns the candidate closest to word by edit distance, ignoring
// case, when it is fewer than limit edits away; "" when none is. Of equally
// close candidates the first wins, so the answer does not depend on map
// order when candidates is sorted.
func Nearest(word string, candidates []string, limit int) string {
	best, bestDist := "", limit
	w := strings.ToLower(word)
	for _, c := range candidates {
		if d := Distance(w, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
