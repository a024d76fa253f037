package watcher

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDetect checks QuestionDetector.Detect on any text: a confidence in
// [0, 1] in hundredths, zero exactly when there is no question; a question
// of at most 300 runes on one line without surrounding space, valid UTF-8
// when the text is; and nothing found in a text that is all code.
func FuzzDetect(f *testing.F) {
	for _, s := range []string{
		"Should I proceed with the migration?",
		"I implemented the parser and all tests pass.\n\nShould I migrate it as well? (y/n)",
		"Here is the plan:\n\n```js\nconst v = ok ? a : b\n```\n\nDo you want me to apply it?",
		"Done. All tests pass.",
		"**Question:** should the API return 404 or 410?**",
		"The fix is at https://x.org/p?tab=1. Should I vendor it?",
		strings.Repeat("Which option? ", 40),
		"\xff?", "?", "", "``` ?",
	} {
		f.Add(s)
	}
	d, err := NewQuestionDetector([]string{`\bblocked on\b`})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, conf := d.Detect(text)
		// In hundredths: 0.55 is 55.00000000000001 hundredths in floating point.
		if conf < 0 || conf > 1 || math.Abs(math.Round(conf*100)-conf*100) > 1e-9 {
			t.Fatalf("confidence %v", conf)
		}
		if (q == "") != (conf == 0) {
			t.Fatalf("question %q with confidence %v", q, conf)
		}
		if utf8.RuneCountInString(q) > maxQuestionRunes {
			t.Fatalf("question of %d runes", utf8.RuneCountInString(q))
		}
		if strings.ContainsAny(q, "\n\r") || q != strings.TrimSpace(q) {
			t.Fatalf("question %q", q)
		}
		if utf8.ValidString(text) && !utf8.ValidString(q) {
			t.Fatalf("question %q is not valid UTF-8", q)
		}
		for line := range strings.Lines(strings.ReplaceAll(text, "\r\n", "\n")) {
			if codeFence.MatchString(line) {
				return
			}
		}
		if q, conf := d.Detect("```\n" + text + "\n```"); q != "" || conf != 0 {
			t.Fatalf("code block read as question %q (%v)", q, conf)
		}
	})
}
