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
	all := strings.TrimSpace(joinParagraphs(paras))

	var extra []*regexp.Regexp
	if d != nil {
		extra = d.Patterns
	}

	score := 0.0
	endsYesNo := yesNoMarkerAtEnd.MatchString(all)
	endsQ := strings.HasSuffix(strings.TrimRight(yesNoMarkerAtEnd.ReplaceAllString(all, ""), trailingDecoration), "?")
	if endsQ {
		score += scoreEndsWithQuestion
	}
	lastSentences := splitSentences(lastText)
	if questionMark.MatchString(lastText) {
		score += scoreQuestionInLast
	}
	for _, p := range askingPhrases {
		switch {
		case phraseInQuestion(p.Regexp(), lastSentences):
			score += scorePhraseInQuestion
		case p.MatchString(lastText):
			score += scorePhraseInLast
		case p.MatchString(earlierText):
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
	if !endsQ && !endsYesNo && completionReport.MatchString(all) {
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
	var out []string
	inFence := false
	for line := range strings.Lines(strings.ReplaceAll(text, "\r\n", "\n")) {
		line = strings.TrimRight(line, "\r\n")
		if codeFence.MatchString(line) {
			inFence = !inFence
			out = append(out, "")
			continue
		}
		if inFence || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "    ") {
			out = append(out, "")
			continue
		}
		line = inlineCodeSpan.ReplaceAllString(line, "code")
		line = strings.NewReplacer("**", "", "__", "").Replace(line)
		line = proseURL.ReplaceAllString(line, "URL")
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

// splitParagraphs groups non-empty lines separated by blank lines.
func splitParagraphs(lines []string) [][]string {
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

// joinParagraphs joins paragraphs back into text.
func joinParagraphs(paras [][]string) string {
	parts := make([]string, len(paras))
	for i, p := range paras {
		parts[i] = strings.Join(p, "\n")
	}
	return strings.Join(parts, "\n\n")
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
