package prompts

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
	"unicode"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// severityOf is the severity named s (lower case), and whether it is one.
func severityOf(s string) (observability.Severity, bool) {
	sev := observability.Severity(s)
	return sev, sev.Rank() > 0
}

func severityNames(sep string) string {
	var names []string
	for _, s := range observability.Severities() {
		names = append(names, string(s))
	}
	return strings.Join(names, sep)
}

// Finding is one issue a reviewer reports. In a Finding returned by
// ParseReview, Severity is one of observability.Severities(), Domain one of the
// five domains (lower case), Title and Detail are non-empty, File is
// trimmed with any leading "./" removed, Line is 0 (no line) or a 1-based
// line that comes with a File, and ID is FindingID(Domain, File, Title).
type Finding struct {
	ID         string                 `json:"id"` // stable: FindingID(domain, file, title); set by ParseReview
	Severity   observability.Severity `json:"severity"`
	Domain     string                 `json:"domain"`
	File       string                 `json:"file,omitempty"`
	Line       int                    `json:"line,omitempty"`
	Title      string                 `json:"title"`
	Detail     string                 `json:"detail"`
	Suggestion string                 `json:"suggestion"`
}

// ReviewResult is a parsed reviewer answer, as ParseReview returns it:
// Verdict is observability.ReviewApprove or ReviewRequestChanges, Summary is non-empty,
// Findings and Resolved are non-nil (possibly empty) and Findings holds no
// two findings with the same ID.
//
// (It is not named Review: the function Review builds the review prompt, as
// Fix and Repair build theirs.)
type ReviewResult struct {
	Verdict  observability.ReviewVerdict `json:"verdict"`
	Summary  string                      `json:"summary"`
	Findings []Finding                   `json:"findings"`
	// Resolved lists ids of earlier open findings the reviewer says this
	// change resolves (round 2 on), trimmed and in lower case, without
	// duplicates.
	Resolved []string `json:"resolved"`
}

// FindingID returns the stable id of a finding: the first 12 hex digits of
// the SHA-256 of its domain (trimmed, lower case), its file (trimmed,
// cleaned, leading "./" removed) and its normalised title (lower case,
// punctuation and symbols dropped as word separators, white space
// collapsed: "Missing nil-check!" reads "missing nil check"). The same
// finding therefore keeps its id across rounds when the reviewer changes
// only the case, spacing or punctuation of its title; a different domain,
// file or wording gives a different id.
func FindingID(domain, file, title string) string {
	h := sha256.New()
	h.Write([]byte(strings.ToLower(strings.TrimSpace(domain))))
	h.Write([]byte{0})
	h.Write([]byte(cleanFile(file)))
	h.Write([]byte{0})
	h.Write([]byte(normaliseTitle(title)))
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// cleanFile trims file, cleans it as a slash-separated path and removes a
// leading "./"; an empty or "." path is "".
func cleanFile(file string) string {
	f := strings.TrimSpace(file)
	if f == "" {
		return ""
	}
	f = path.Clean(f)
	f = strings.TrimPrefix(f, "./")
	if f == "." {
		return ""
	}
	return f
}

// normaliseTitle lower-cases title and keeps its words: runs of letters,
// marks and digits, joined by single spaces. Punctuation, symbols and white
// space are dropped; they only separate words ("user-lookup" and
// "user lookup" are the same title, "`foo()`" and "foo" too).
func normaliseTitle(title string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(title) {
		if unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r) {
			if gap && b.Len() > 0 {
				b.WriteByte(' ')
			}
			gap = false
			b.WriteRune(r)
		} else {
			gap = true
		}
	}
	return b.String()
}
