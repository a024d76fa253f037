package watcher

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDetectQuestions(t *testing.T) {
	cases := []struct {
		name, text, question string
	}{
		{"plain", "Should I proceed with the migration?", "Should I proceed with the migration?"},
		{"yes/no marker", "Would you like me to add tests? (y/n)", "Would you like me to add tests? (y/n)"},
		{"after a statement", "I've drafted the change. Do you want me to also update the README?",
			"Do you want me to also update the README?"},
		{"short", "Ready to proceed?", "Ready to proceed?"},
		{"multi-paragraph report",
			"I implemented the parser and all tests pass.\n\nThe config loader still reads the old format, though.\n\nShould I migrate it as well?",
			"Should I migrate it as well?"},
		{"options list",
			"There are two ways to fix the race:\n\n1. Add a mutex around the cache.\n2. Make the cache per request.\n\nWhich option do you prefer?",
			"Which option do you prefer?"},
		{"how would you like", "The tests need a database. How would you like me to provide it?",
			"How would you like me to provide it?"},
		{"shall I", "Shall I also delete the old config file?", "Shall I also delete the old config file?"},
		{"bold question", "**Question:** should the API return 404 or 410 for deleted items?**",
			"Question: should the API return 404 or 410 for deleted items?"},
		{"inline code in question", "Should I rename `foo?` to `bar`?", "Should I rename code to code?"},
		{"question after code block",
			"Here is the plan:\n\n```js\nconst v = ok ? a : b\n```\n\nDo you want me to apply it?", "Do you want me to apply it?"},
		{"question before code block",
			"Should I apply this patch?\n\n```diff\n-a\n+b\n```", "Should I apply this patch?"},
		{"open question", "I could not find the deployment config. Where should it live?", "Where should it live?"},
		{"yes/no without question mark", "The branch has diverged from main. Do you want me to rebase it (yes/no)",
			"Do you want me to rebase it (yes/no)"},
		{"question with URL", "The upstream fix is at https://github.com/x/y/pull/1?tab=files. Should I vendor it?",
			"Should I vendor it?"},
		{"question then a short note", "Should I drop the legacy table? It holds no rows in staging.",
			"Should I drop the legacy table?"},
	}
	d, err := NewQuestionDetector(nil)
	require.NoError(t, err)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, conf := d.Detect(c.text)
			if c.name == "question then a short note" {
				// Not at the end of the text: it is above the 0.6 threshold
				// without being a clear question.
				assert.GreaterOrEqual(t, conf, 0.6)
			} else {
				assert.GreaterOrEqual(t, conf, 0.7)
			}
			assert.LessOrEqual(t, conf, 1.0)
			assert.Equal(t, c.question, q)
		})
	}
}

func TestDetectNonQuestions(t *testing.T) {
	cases := []struct{ name, text string }{
		{"empty", ""},
		{"blank", " \n\n\t\n"},
		{"completion", "Done. All tests pass."},
		{"I have added", "I have added the --json flag and updated the docs."},
		{"final marker", "FINAL: committed."},
		{"regex in code block",
			"I added the validation:\n\n```go\nre := regexp.MustCompile(`a?b`)\n```\n\nThe tests are green."},
		{"ternary ending the text in code",
			"Implemented the fallback:\n\n```js\nconst v = ok ? a : b ?\n```"},
		{"inline code", "Use `x ?? y` for defaults and `a?.b` for optional access; I updated `cfg.go`."},
		{"inline code at end", "The pattern now reads `colou?r?`"},
		{"indented code", "The usage text is:\n\n    spawn run --help?\n"},
		{"rhetorical then answer", "What changed? I fixed X, Y and Z. All tests pass."},
		{"URL with query", "The results are at https://example.com/search?q=1"},
		{"URL with query mid-sentence", "See https://example.com/a?b=c for the spec, which I followed."},
		{"courtesy closing", "I fixed the bug. Let me know if you need anything else."},
		{"should I inside a word", "I was unsure whether I should inline the helper, so I kept it separate. All tests pass."},
		{"long report with rhetorical questions",
			"## Summary\n\nWhy did the test fail? The fixture was stale, so I regenerated it.\n\n" +
				"Did this affect other packages? No: only the watcher uses it.\n\nThe change is committed on the branch."},
		{"rhetorical in last paragraph", "Why was CI red? The cache key ignored GOFLAGS. I changed the key and the pipeline is green now."},
	}
	d, err := NewQuestionDetector(nil)
	require.NoError(t, err)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, conf := d.Detect(c.text)
			assert.LessOrEqual(t, conf, 0.3, "question %q", q)
			assert.GreaterOrEqual(t, conf, 0.0)
			if conf == 0 {
				assert.Empty(t, q)
			}
		})
	}
}

func TestDetectExtraPattern(t *testing.T) {
	text := "The plan is in PLAN.md. AWAITING your approval."
	plain, err := NewQuestionDetector(nil)
	require.NoError(t, err)
	q, conf := plain.Detect(text)
	assert.Zero(t, conf)
	assert.Empty(t, q)

	d, err := NewQuestionDetector([]string{`awaiting (your )?approval`})
	require.NoError(t, err)
	q, conf = d.Detect(text)
	assert.InDelta(t, 0.4, conf, 1e-9)
	assert.Equal(t, "AWAITING your approval.", q)

	// Combined with a question mark it is a clear question.
	q, conf = d.Detect("The plan is in PLAN.md. Awaiting your approval: go ahead?")
	assert.GreaterOrEqual(t, conf, 0.7)
	assert.Equal(t, "Awaiting your approval: go ahead?", q)
}

func TestNewQuestionDetectorRejectsInvalidPatterns(t *testing.T) {
	_, err := NewQuestionDetector([]string{"fine", "unclosed (group"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unclosed (group")

	_, err = NewQuestionDetector([]string{"  "})
	assert.Error(t, err)
}

func TestDetectTruncatesLongQuestions(t *testing.T) {
	long := "Should I " + strings.Repeat("really ", 80) + "proceed?"
	d, err := NewQuestionDetector(nil)
	require.NoError(t, err)
	q, conf := d.Detect(long)
	assert.GreaterOrEqual(t, conf, 0.7)
	assert.Equal(t, 300, utf8.RuneCountInString(q))
	assert.True(t, strings.HasPrefix(q, "Should I really"))
	assert.True(t, strings.HasSuffix(q, "…"))
}

func TestDetectOnNilDetector(t *testing.T) {
	var d *QuestionDetector
	q, conf := d.Detect("Shall I continue?")
	assert.GreaterOrEqual(t, conf, 0.7)
	assert.Equal(t, "Shall I continue?", q)
}

// BenchmarkDetectLongSession: the text of a session of 20,000 model turns
// (codex's and gemini's Result.Text holds every turn's messages), its last
// one a question.
func BenchmarkDetectLongSession(b *testing.B) {
	var text strings.Builder
	for range 20000 {
		text.WriteString("Let me look around.\n\nAdded hello.txt and ran `go test ./...` on https://example.com/x.\n\n")
	}
	text.WriteString("Should I also update the README?")
	d, err := NewQuestionDetector(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(text.Len()))
	for range b.N {
		if q, _ := d.Detect(text.String()); q == "" {
			b.Fatal("no question")
		}
	}
}

// byLineSeeds hold every asking phrase and completion word, in other
// cases, at line ends, inside words, with the letters that fold onto s
// and k from outside ASCII, and yes/no markers at the end and elsewhere.
var byLineSeeds = []string{
	"How would you like it?\nDo you want tests?\nSHOULD I go on\nshall i?\nMay I\ncan i\n",
	"ready to proceed\nOK to continue\nokay to GO AHEAD\nlet me know if\nLet Me Know whether it works",
	"please confirm\ncan you clarify\ncould you ADVISE\nplease decide\nwhich option\nWhich approach\nwhich one",
	"before I proceed\nbefore i start\nhow should I\nhowshould i\nwould you\nlike\ndo\nyou want",
	"Done.\ncompleted\ncomplete\nFINISHED\nall the tests now passed\ntests pass\nsuccessfully\n",
	"I added\nI've created\ni have fixed\nI updated, implemented, removed, written, wrote, refactored\nI committed made changed renamed moved replaced regenerated",
	"ſhould i\nſhall I\nwhich option\nlet me \u212anow if\nall teſts paſs\nſucceſſfully",
	"abandoned\nundone\nprefixed\nsuffixdone\nxshould iy\nshould\ni\n",
	"Added hello.txt.\nFINAL: committed.\nI  added\nI\tadded\nhi added\nI've  added\nI have\nadded\nI HAVE MADE\nI'VE WROTE\nthey have moved",
	"```\nshould i\n```\n  ~~~\n**should** i\n__do you__ want",
	"text (y/n)", "text [yes/no]?", "text ( y/n ) :", "(y/n) then more", "a (b) [c] (y/n/q)\n\n", "((y/n)", "[y/n])", "(yes/no)\n?\n", "\n(\ny/n\n)\n",
	"", "\n", "\n\n", "should i\n", "\nshould i", "x\r\nshould i\r\n",
}

// FuzzDetectByLine: the cheap reading of a long text (foldedText,
// yesNoAtEnd) answers as the expressions do over the whole text.
func FuzzDetectByLine(f *testing.F) {
	for _, s := range byLineSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkByLine(t, text)
	})
}

// TestDetectByLine: FuzzDetectByLine's check on its seeds, and on them
// all as one text.
func TestDetectByLine(t *testing.T) {
	for _, s := range byLineSeeds {
		checkByLine(t, s)
	}
	checkByLine(t, strings.Join(byLineSeeds, "\n\n"))
}

func checkByLine(t *testing.T, text string) {
	t.Helper()
	folded := foldText(text)
	for i, p := range askingPhrases {
		if got, want := folded.match(p, askingHints[i]), p.MatchString(text); got != want {
			t.Fatalf("asking phrase %s on %q: %v, want %v", p.Regexp(), text, got, want)
		}
	}
	if got, want := folded.match(completionReport, completionHints), completionReport.MatchString(text); got != want {
		t.Fatalf("completion report on %q: %v, want %v", text, got, want)
	}
	i := yesNoAtEnd(text)
	if want := yesNoMarkerAtEnd.MatchString(text); (i >= 0) != want {
		t.Fatalf("yes/no marker at the end of %q: at %d, want %v", text, i, want)
	}
	unmarked := text
	if i >= 0 {
		unmarked = text[:i]
	}
	if want := yesNoMarkerAtEnd.ReplaceAllString(text, ""); unmarked != want {
		t.Fatalf("%q without its yes/no marker: %q, want %q", text, unmarked, want)
	}
}

// FuzzParagraphs: the paragraphs Detect reads (lines of the text, slices
// of its lines, joined back in one copy; the whole text as the earlier
// paragraphs and the last joined) are those of the first, simple way of
// making them, copies and all (paragraphsOfLines, joinedParagraphs).
func FuzzParagraphs(f *testing.F) {
	for _, s := range []string{"", "a", "a\n\nb\nc\n\n\nd", "\n\n", "Done.\n\n```\nx\n```\nShould I?", "A\r\nB\n\n  c  "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lines := proseLines(text)
		paras := splitParagraphs(lines)
		want := paragraphsOfLines(lines)
		if len(paras) != len(want) {
			t.Fatalf("%d paragraphs, want %d", len(paras), len(want))
		}
		for i := range want {
			if strings.Join(paras[i], "\x00") != strings.Join(want[i], "\x00") {
				t.Fatalf("paragraph %d: %q, want %q", i, paras[i], want[i])
			}
		}
		if got, want := joinParagraphs(paras), joinedParagraphs(want); got != want {
			t.Fatalf("joined: %q, want %q", got, want)
		}
		if len(paras) > 0 {
			last, earlier := strings.Join(paras[len(paras)-1], "\n"), paras[:len(paras)-1]
			all := last
			if len(earlier) > 0 {
				all = joinParagraphs(earlier) + "\n\n" + last
			}
			if want := joinedParagraphs(want); all != want {
				t.Fatalf("all: %q, want %q", all, want)
			}
		}
		lower := []byte(text)
		for i, c := range lower {
			if 'A' <= c && c <= 'Z' {
				lower[i] = c + 'a' - 'A'
			}
		}
		if f := foldText(text); !f.whole && f.lower != string(lower) {
			t.Fatalf("folded %q: %q, want %q", text, f.lower, lower)
		}
	})
}

// paragraphsOfLines is splitParagraphs as first written: a copy of each.
func paragraphsOfLines(lines []string) [][]string {
	var out [][]string
	var cur []string
	for _, l := range lines {
		if l == "" {
			if cur != nil {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, l)
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out
}

// joinedParagraphs is joinParagraphs as first written.
func joinedParagraphs(paras [][]string) string {
	parts := make([]string, len(paras))
	for i, p := range paras {
		parts[i] = strings.Join(p, "\n")
	}
	return strings.Join(parts, "\n\n")
}
