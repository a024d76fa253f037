package watcher

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
)

// QuestionDetector scores a final answer for being a question addressed to
// the user: an unattended coder that stopped to ask instead of finishing.
// The zero value (and a nil *QuestionDetector) uses the built-in signals only.
// A QuestionDetector is safe for concurrent use once built.
type QuestionDetector struct {
	// Patterns are extra patterns that signal a question, from config. They
	// are matched against the prose of the answer (code removed) as they are;
	// NewQuestionDetector compiles them case-insensitive.
	Patterns []*regexp.Regexp
}

// NewQuestionDetector compiles extra patterns (config strings, RE2 syntax)
// case-insensitive. An empty or invalid pattern is an error naming it.
func NewQuestionDetector(extra []string) (*QuestionDetector, error) {
	d := &QuestionDetector{}
	for _, p := range extra {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("question pattern %q: empty", p)
		}
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, fmt.Errorf("question pattern %q: %w", p, err)
		}
		d.Patterns = append(d.Patterns, re)
	}
	return d, nil
}

// Score weights used by Detect (see its doc comment).
const (
	scoreEndsWithQuestion = 0.5
	scoreQuestionInLast   = 0.2
	scorePhraseInQuestion = 0.4
	scorePhraseInLast     = 0.3
	scorePhraseElsewhere  = 0.15
	scoreYesNoAtEnd       = 0.4
	scoreYesNoInLast      = 0.2
	scoreExtraInLast      = 0.4
	scoreExtraElsewhere   = 0.2
	penaltyCompletion     = 0.3
)

// Limits on the question Detect returns.
const (
	maxQuestionRunes       = 300
	questionTruncationMark = "…"
)

// Detect returns the question asked by text and a confidence in [0,1]; it
// returns "" and 0 when text is not a question. The question is the last
// sentence (or line) of the prose carrying a question signal, trimmed of
// Markdown decoration, cut to at most 300 characters (runes, ending in "…"
// when cut).
//
// Only prose counts: fenced code blocks (``` or ~~~), indented code lines
// (a tab or four spaces), inline code spans and URLs are removed first. The
// last paragraph is the last run of prose lines not separated by a blank
// line or a code block. The score is the sum of:
//
//   - +0.5 when the prose ends with "?" (after closing quotes, brackets,
//     emphasis, and a yes/no marker);
//   - +0.2 when a sentence of the last paragraph ends with "?";
//   - for each asking phrase ("would you like", "should I", "do you want",
//     "shall I", "ready to proceed", "let me know if", "please confirm",
//     "which option", "how would you like", ...): +0.4 when it is in a
//     sentence ending with "?" in the last paragraph, +0.3 elsewhere in the
//     last paragraph, +0.15 in earlier paragraphs;
//   - +0.4 for "(y/n)", "[y/n]" or "(yes/no)" at the very end, +0.2 for one
//     elsewhere in the last paragraph;
//   - for each configured pattern: +0.4 when it matches the last paragraph,
//     +0.2 when it matches only earlier prose;
//   - -0.3 when the prose reports completion ("done", "completed", "all
//     tests pass", "I have added/created/fixed", "successfully", ...) and
//     does not end with "?" or a yes/no marker;
//
// clamped to [0,1]. A clear question scores 0.7 or more; a completion
// report whose questions are rhetorical and followed by a statement scores
// 0.3 or less. A configured pattern alone gives 0.4.
func (d *QuestionDetector) Detect(text string) (question string, confidence float64) {
	lines := proseLines(text)
	paras := splitParagraphs(lines)
	if len(paras) == 0 {
		return "", 0
	}
	last := paras[len(paras)-1]
	earlier := paras[:len(paras)-1]
	lastText := strings.Join(last, "\n")
	earlierText := joinParagraphs(earlier)
	all := lastText // joinParagraphs(paras), without joining the earlier ones again
	if len(earlier) > 0 {
		all = earlierText + "\n\n" + lastText
	}
	all = strings.TrimSpace(all)

	var extra []*regexp.Regexp
	if d != nil {
		extra = d.Patterns
	}

	score := 0.0
	// A long session's text is read the cheap way (see foldedText).
	earlierFolded := foldText(earlierText)
	endsYesNo := false
	unmarked := all // the prose without the yes/no marker it ends with
	if i := yesNoAtEnd(all); i >= 0 {
		endsYesNo, unmarked = true, all[:i]
	}
	endsQ := strings.HasSuffix(strings.TrimRight(unmarked, trailingDecoration), "?")
	if endsQ {
		score += scoreEndsWithQuestion
	}
	lastSentences := splitSentences(lastText)
	if questionMark.MatchString(lastText) {
		score += scoreQuestionInLast
	}
	for i, p := range askingPhrases {
		switch {
		case phraseInQuestion(p.Regexp(), lastSentences):
			score += scorePhraseInQuestion
		case p.MatchString(lastText):
			score += scorePhraseInLast
		case earlierFolded.match(p, askingHints[i]):
			score += scorePhraseElsewhere
		}
	}
	switch {
	case endsYesNo:
		score += scoreYesNoAtEnd
	case yesNoMarker.MatchString(lastText):
		score += scoreYesNoInLast
	}
	for _, p := range extra {
		switch {
		case p.MatchString(lastText):
			score += scoreExtraInLast
		case p.MatchString(earlierText):
			score += scoreExtraElsewhere
		}
	}
	if !endsQ && !endsYesNo && foldText(all).match(completionReport, completionHints) {
		score -= penaltyCompletion
	}
	// Rounded to hundredths so that sums such as 0.2+0.4 compare as
	// written against a threshold.
	score = math.Round(min(max(score, 0), 1)*100) / 100
	if score == 0 {
		return "", 0
	}
	q := findQuestion(paras, extra)
	if q == "" {
		return "", 0
	}
	return truncateRunes(q, maxQuestionRunes), score
}

// trailingDecoration is what may follow the final "?" of a question:
// closing quotes and brackets, emphasis and spaces.
const trailingDecoration = " \t\n*_)]}\"'»”’"

var (
	// questionMark is a "?" that ends a sentence (not "a?b" or "?q=1").
	questionMark = lazy.MustCompile(`\?+(?:$|[\s*_)\]}"'»”’])`)
	// yesNoMarker is a yes/no answer marker.
	yesNoMarker = lazy.MustCompile(`(?i)[(\[]\s*(?:y/n|yes/no|y/n/q)\s*[)\]]`)
	// yesNoMarkerAtEnd is a yes/no marker ending the text (maybe after ":" or "?").
	yesNoMarkerAtEnd = lazy.MustCompile(`(?i)[(\[]\s*(?:y/n|yes/no|y/n/q)\s*[)\]][\s?:.*_]*$`)
	// yesNoOnly is a sentence that is only a yes/no marker.
	yesNoOnly = lazy.MustCompile(`(?i)^[(\[]\s*(?:y/n|yes/no|y/n/q)\s*[)\]][\s?:.*_]*$`)
	// completionReport reports finished work.
	completionReport = lazy.MustCompile(`(?i)\b(?:done|completed?|finished|all (?:the )?tests (?:now )?pass(?:ed)?|tests (?:now )?pass|successfully|i(?:'ve| have)? (?:added|created|fixed|updated|implemented|removed|written|wrote|refactored|committed|made|changed|renamed|moved|replaced|regenerated))\b`)
	// askingPhrases address the user and ask for a decision; one pattern per
	// concept so that overlapping phrases do not add up.
	askingPhrases = []*lazy.Regexp{
		lazy.MustCompile(`(?i)\b(?:how )?would you (?:like|prefer)\b`),
		lazy.MustCompile(`(?i)\bdo you (?:want|prefer|agree)\b`),
		lazy.MustCompile(`(?i)\b(?:should|shall|may|can) i\b`),
		lazy.MustCompile(`(?i)\b(?:ready|ok|okay) to (?:proceed|continue|go ahead)\b`),
		lazy.MustCompile(`(?i)\blet me know (?:if|whether|which|how|what)\b`),
		lazy.MustCompile(`(?i)\b(?:please|can you|could you) (?:confirm|clarify|advise|decide)\b`),
		lazy.MustCompile(`(?i)\bwhich (?:option|approach|one)\b`),
		lazy.MustCompile(`(?i)\bbefore i (?:proceed|continue|start|go ahead)\b`),
		lazy.MustCompile(`(?i)\bhow should i\b`),
	}
	// askingHints are, for each of askingPhrases, the words (lowercase)
	// one of which every text it matches holds, in some case: the hints of
	// foldedText.match. The phrases never match a line break.
	askingHints = [][]hint{
		{{word: "would you "}},
		{{word: "do you "}},
		{{word: "should i"}, {word: "shall i"}, {word: "may i"}, {word: "can i"}},
		{{word: "proceed"}, {word: "continue"}, {word: "go ahead"}},
		{{word: "let me know "}},
		{{word: "confirm"}, {word: "clarify"}, {word: "advise"}, {word: "decide"}},
		{{word: "which "}},
		{{word: "before i "}},
		{{word: "how should i"}},
	}
	// completionHints are completionReport's hints, as askingHints: its
	// words, and its verbs after "i ", "i've " or "i have ".
	completionHints = append([]hint{{word: "done"}, {word: "complete"}, {word: "finished"}, {word: "tests"}, {word: "successfully"}},
		verbHints("added", "created", "fixed", "updated", "implemented", "removed", "written", "wrote", "refactored",
			"committed", "made", "changed", "renamed", "moved", "replaced", "regenerated")...)
	// codeFence opens or closes a fenced code block.
	codeFence = lazy.MustCompile("^\\s*(?:```|~~~)")
	// inlineCodeSpan is a code span.
	inlineCodeSpan = lazy.MustCompile("``[^\\n]*?``|`[^`\\n]*`")
	// proseURL is a URL, without punctuation that ends the sentence after it.
	proseURL = lazy.MustCompile(`(?i)\b(?:https?|ftp|file)://[^\s<>"'` + "`" + `]*[^\s<>"'.,;:!?)\]` + "`" + `]|\bwww\.[^\s<>"'` + "`" + `]*[^\s<>"'.,;:!?)\]` + "`" + `]`)
	// markdownLead is list, heading, quote and emphasis decoration at the
	// start of a line.
	markdownLead = lazy.MustCompile(`^(?:[#>*_\-+]+\s*|\d+[.)]\s+)+`)
)

// proseLines returns the lines of text with code and URLs removed; removed
// blocks become blank lines so that they separate paragraphs.
func proseLines(text string) []string {
	// A long session's text has many lines: the slice is made once.
	out := make([]string, 0, strings.Count(text, "\n")+1)
	inFence := false
	for line := range strings.Lines(strings.ReplaceAll(text, "\r\n", "\n")) {
		line = strings.TrimRight(line, "\r\n")
		if (strings.Contains(line, "```") || strings.Contains(line, "~~~")) && codeFence.MatchString(line) {
			inFence = !inFence
			out = append(out, "")
			continue
		}
		if inFence || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "    ") {
			out = append(out, "")
			continue
		}
		// The expressions run only on a line that may hold what they
		// match: a code span holds a backquote, a URL "://" or "www."
		// (in any case: no other letter folds onto w).
		if strings.IndexByte(line, '`') >= 0 {
			line = inlineCodeSpan.ReplaceAllString(line, "code")
		}
		if strings.Contains(line, "**") || strings.Contains(line, "__") {
			line = emphasis.Replace(line)
		}
		if strings.Contains(line, "://") || hasWWW(line) {
			line = proseURL.ReplaceAllString(line, "URL")
		}
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

// emphasis removes bold and underline markers.
var emphasis = strings.NewReplacer("**", "", "__", "")

// hasWWW reports whether s holds "www." in any case.
func hasWWW(s string) bool {
	for i := 0; i+4 <= len(s); i++ {
		if s[i]|0x20 == 'w' && s[i+1]|0x20 == 'w' && s[i+2]|0x20 == 'w' && s[i+3] == '.' {
			return true
		}
	}
	return false
}

// yesNoAtEnd is where the yes/no marker that ends text starts
// (yesNoMarkerAtEnd), -1 when text ends with none. A match holds no
// opening bracket but its first, and reaches the end: it starts at the
// last opening bracket, and only what follows it is read.
func yesNoAtEnd(text string) int {
	i := strings.LastIndexAny(text, "([")
	if i < 0 {
		return -1
	}
	if loc := yesNoMarkerAtEnd.FindStringIndex(text[i:]); loc != nil {
		return i + loc[0]
	}
	return -1
}

// hint is a word (lowercase ASCII) an expression's match holds; after,
// when set, are what comes just before it in such a match, one of them.
type hint struct {
	word  string
	after []string
}

// verbHints are the hints of completionReport's verbs.
func verbHints(verbs ...string) []hint {
	out := make([]hint, len(verbs))
	for i, v := range verbs {
		out[i] = hint{word: v, after: []string{"i ", "'ve ", "have "}}
	}
	return out
}

// foldedText is a text to match expressions against that never match a
// line break, such as askingPhrases, with hints: words one of which a
// text must hold, in some case, for the expression to match it. A long
// session's text (codex's and gemini's results hold every turn's
// messages, megabytes) is not run through the expression whole: only its
// lines that hold a hint are, which gives the same answer (an expression
// that never matches a line break matches a text exactly when it matches
// one of its lines, whose ends are word boundaries as the breaks are).
type foldedText struct {
	text  string
	lower string // text with ASCII letters in lower case, byte for byte
	// whole says the hints cannot be searched for in lower: (?i) matches
	// 'ſ' (U+017F) for s and 'K' (U+212A, Kelvin) for k, the only
	// letters outside ASCII that fold onto ASCII ones.
	whole bool
}

func foldText(text string) foldedText {
	if strings.Contains(text, "\u017f") || strings.Contains(text, "\u212a") {
		return foldedText{text: text, whole: true}
	}
	// Byte for byte (lower's offsets are text's), in one copy.
	var lower strings.Builder
	lower.Grow(len(text))
	for i := range len(text) {
		c := text[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower.WriteByte(c)
	}
	return foldedText{text: text, lower: lower.String()}
}

// match reports whether re matches the text; hints are re's (see
// foldedText).
func (f foldedText) match(re *lazy.Regexp, hints []hint) bool {
	if f.whole {
		return re.MatchString(f.text)
	}
	for _, h := range hints {
		for from := 0; from < len(f.text); {
			i := strings.Index(f.lower[from:], h.word)
			if i < 0 {
				break
			}
			i += from
			if !endsWithAny(f.lower[:i], h.after) {
				from = i + 1
				continue
			}
			start := strings.LastIndexByte(f.text[:i], '\n') + 1
			end := len(f.text)
			if j := strings.IndexByte(f.text[i:], '\n'); j >= 0 {
				end = i + j
			}
			if re.MatchString(f.text[start:end]) {
				return true
			}
			from = end + 1
		}
	}
	return false
}

// endsWithAny reports whether s ends with one of ends; true for none.
func endsWithAny(s string, ends []string) bool {
	for _, e := range ends {
		if strings.HasSuffix(s, e) {
			return true
		}
	}
	return len(ends) == 0
}

// splitParagraphs groups non-empty lines separated by blank lines. A
// paragraph is a slice of lines, not a copy: neither may be changed.
func splitParagraphs(lines []string) [][]string {
	var out [][]string
	start := -1 // where the paragraph being read starts
	for i, l := range lines {
		switch {
		case l != "" && start < 0:
			start = i
		case l == "" && start >= 0:
			out = append(out, lines[start:i:i])
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, lines[start:len(lines):len(lines)])
	}
	return out
}

// joinParagraphs joins paragraphs back into text.
func joinParagraphs(paras [][]string) string {
	n := 0
	for _, p := range paras {
		for _, l := range p {
			n += len(l) + 2
		}
	}
	var b strings.Builder
	b.Grow(n)
	for i, p := range paras {
		if i > 0 {
			b.WriteString("\n\n")
		}
		for j, l := range p {
			if j > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(l)
		}
	}
	return b.String()
}

// sentenceEnd ends a sentence: terminators, closing decoration, then space
// or the end of the text.
var sentenceEnd = lazy.MustCompile(`[.!?]+[*_)\]}"'»”’]*(?:\s+|$)|\n+`)

// splitSentences splits text into trimmed sentences (a line break also ends one).
// A sentence that is only a yes/no marker joins the sentence before it.
func splitSentences(text string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
		case len(out) > 0 && yesNoOnly.MatchString(s):
			out[len(out)-1] += " " + s
		default:
			out = append(out, s)
		}
	}
	start := 0
	for _, loc := range sentenceEnd.FindAllStringIndex(text, -1) {
		add(text[start:loc[1]])
		start = loc[1]
	}
	add(text[start:])
	return out
}

// phraseInQuestion reports whether p matches a sentence that ends with "?".
func phraseInQuestion(p *regexp.Regexp, sents []string) bool {
	for _, s := range sents {
		if questionMark.MatchString(s) && p.MatchString(s) {
			return true
		}
	}
	return false
}

// findQuestion returns the last sentence of the prose that carries a
// question signal, cleaned of Markdown decoration.
func findQuestion(paras [][]string, extra []*regexp.Regexp) string {
	for i := len(paras) - 1; i >= 0; i-- {
		sents := splitSentences(strings.Join(paras[i], "\n"))
		for j := len(sents) - 1; j >= 0; j-- {
			if hasQuestionSignal(sents[j], extra) {
				return cleanQuestion(sents[j])
			}
		}
	}
	return ""
}

// hasQuestionSignal reports whether a sentence carries any positive signal.
func hasQuestionSignal(s string, extra []*regexp.Regexp) bool {
	if questionMark.MatchString(s) || yesNoMarker.MatchString(s) {
		return true
	}
	for _, p := range askingPhrases {
		if p.MatchString(s) {
			return true
		}
	}
	for _, p := range extra {
		if p.MatchString(s) {
			return true
		}
	}
	return false
}

// cleanQuestion removes Markdown decoration around a sentence.
func cleanQuestion(s string) string {
	s = strings.TrimSpace(markdownLead.ReplaceAllString(strings.TrimSpace(s), ""))
	s = strings.TrimRight(s, " \t*_")
	return strings.Join(strings.Fields(s), " ")
}

// truncateRunes cuts s to at most n runes, ending in "…" when cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-utf8.RuneCountInString(questionTruncationMark)])) + questionTruncationMark
}
