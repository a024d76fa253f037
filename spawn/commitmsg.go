package spawn

import (
	"fmt"
	"strings"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// subjectWidth is the longest subject line spawn writes, in runes.
const subjectWidth = 72

// commitMessage is the message of the commit spawn makes of what the coder
// left in a round: a subject naming the task (shortened at a word, never
// inside one, and without "...": git log on a merged branch shows a subject
// that reads as a sentence), a body with the rest of the task (round 1) or the findings the
// round addressed (a fix round), and the trailers Spawn-Run and
// Spawn-Round, which lead from a merged commit back to its record. It
// returns the subject and the whole message.
func commitMessage(id, task string, round int, addressed []observability.Finding) (subject, msg string) {
	task = strings.TrimSpace(task)
	first, rest, _ := strings.Cut(task, "\n")
	prefix := "spawn: "
	if round > 1 {
		prefix = fmt.Sprintf("spawn: address review round %d: ", round-1)
	}
	head, cut := cutAtWord(strings.TrimSpace(first), subjectWidth-len([]rune(prefix)))
	subject = prefix + head
	var body []string
	if round > 1 && len(addressed) > 0 {
		lines := []string{fmt.Sprintf("Addresses the findings of review round %d:", round-1)}
		for _, f := range addressed {
			lines = append(lines, fmt.Sprintf("- %s: %s (%s)", f.Severity, oneLine(f.Title), findingPlace(f)))
		}
		body = append(body, strings.Join(lines, "\n"))
	}
	if round == 1 || len(addressed) == 0 {
		if t := strings.TrimSpace(rest); t != "" || cut {
			body = append(body, "Task: "+task)
		}
	}
	body = append(body, fmt.Sprintf("Spawn-Run: %s\nSpawn-Round: %d", id, round))
	return subject, subject + "\n\n" + strings.Join(body, "\n\n") + "\n"
}

// cutAtWord shortens s to at most width runes at a word boundary; it
// reports whether it cut.
func cutAtWord(s string, width int) (string, bool) {
	r := []rune(s)
	if len(r) <= width {
		return s, false
	}
	keep := string(r[:width])
	if i := strings.LastIndexAny(keep, " \t"); i > 0 && r[width] != ' ' {
		keep = keep[:i]
	}
	return strings.TrimRight(keep, " \t,;:"), true
}

// findingPlace is a finding's file:line, its file, or "the whole change".
func findingPlace(f observability.Finding) string {
	switch {
	case f.File == "":
		return "the whole change"
	case f.Line > 0:
		return fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return f.File
}
