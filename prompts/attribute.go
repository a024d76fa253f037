package prompts

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/observability"
)

// AttributedBy says how the coder's words were tied to a finding.
type AttributedBy string

// The ways the coder's words are tied to a finding, the surest first.
const (
	// ByContract: a reply line or JSON object of the reply contract.
	ByContract AttributedBy = "contract"
	// ByID: the finding's id appears in the coder's prose.
	ByID AttributedBy = "id"
	// ByTitle: the finding's title appears in the prose (compared as
	// words: case and punctuation do not matter).
	ByTitle AttributedBy = "title"
	// ByLocation: the finding's file:line appears in the prose (the file
	// by its path or its base name).
	ByLocation AttributedBy = "location"
)

// Attribution is what the coder's final message says about one finding.
type Attribution struct {
	FindingID string `json:"finding_id"`
	// Action is fixed or declined when the reply contract says so; "" when
	// only the coder's prose names the finding (prose is not read for a
	// decision).
	Action observability.CoderAction `json:"action"`
	// Words are the coder's own words for the finding, on one line of at
	// most 500 runes: the contract's reason, or the part of its prose that
	// names the finding.
	Words string       `json:"words"`
	By    AttributedBy `json:"by"`
}

// Attribute ties the coder's final message to the findings it was asked
// to fix. The reply contract comes first (ParseCoderReplies): a finding it
// answers gets the contract's action and reason. A finding the contract
// does not answer is looked for in the prose, sentence by sentence, by its
// id, its title or its file:line; the words attributed to it are the part
// of each sentence that names it (from its mention to the next finding's
// mention in the same sentence, a lead-in ending in ":" left out when the
// sentence names several findings), joined with "; ". The result is in the
// order of findings and holds only the findings attributed; it is pure and
// never an error.
func Attribute(text string, findings []Finding) []Attribution {
	ids := make([]string, len(findings))
	for i, f := range findings {
		ids[i] = strings.ToLower(f.ID)
	}
	contract := map[string]CoderReply{}
	for _, r := range ParseCoderReplies(text, ids) {
		contract[r.FindingID] = r
	}
	var rest []Finding
	for i, f := range findings {
		if _, ok := contract[ids[i]]; !ok {
			rest = append(rest, f)
		}
	}
	prose := proseWords(text, rest)
	var out []Attribution
	for i, f := range findings {
		if r, ok := contract[ids[i]]; ok {
			out = append(out, Attribution{FindingID: r.FindingID, Action: r.Action, Words: r.Reason, By: ByContract})
			continue
		}
		if a, ok := prose[f.ID]; ok {
			out = append(out, a)
		}
	}
	return out
}

// mention is where a sentence names a finding.
type mention struct {
	start, end int
	finding    int // index into the findings looked for
	by         AttributedBy
}

// proseWords finds the findings in the sentences of text, by finding id.
func proseWords(text string, findings []Finding) map[string]Attribution {
	out := map[string]Attribution{}
	if len(findings) == 0 {
		return out
	}
	words := make([][]string, len(findings))
	for i, f := range findings {
		for _, w := range wordSpans(f.Title) {
			words[i] = append(words[i], strings.ToLower(f.Title[w[0]:w[1]]))
		}
	}
	locs := make([]*regexp.Regexp, len(findings))
	for i, f := range findings {
		locs[i] = locationPattern(f)
	}
	for _, s := range sentences(text) {
		var ms []mention
		for i, f := range findings {
			ms = append(ms, mentions(s, i, f, words[i], locs[i])...)
		}
		if len(ms) == 0 {
			continue
		}
		for _, seg := range segments(s, ms) {
			id := findings[seg.finding].ID
			a, seen := out[id]
			if !seen {
				a = Attribution{FindingID: strings.ToLower(id), By: seg.by}
			} else if byRank(seg.by) < byRank(a.By) {
				a.By = seg.by
			}
			if a.Words == "" {
				a.Words = seg.words
			} else if !strings.Contains(a.Words, seg.words) {
				a.Words += "; " + seg.words
			}
			out[id] = a
		}
	}
	for id, a := range out {
		a.Words = cleanReason(a.Words)
		out[id] = a
	}
	return out
}

// byRank orders the ways of attributing, the surest first.
func byRank(b AttributedBy) int {
	return slices.Index([]AttributedBy{ByContract, ByID, ByTitle, ByLocation}, b)
}

// mentions are the places sentence s names finding f (index i): its id,
// its title as a run of words (a title of fewer than two words is too
// common to count), its file:line.
func mentions(s string, i int, f Finding, title []string, loc *regexp.Regexp) []mention {
	var ms []mention
	if id := idPattern(f.ID); id != nil {
		for _, m := range id.FindAllStringSubmatchIndex(s, -1) {
			ms = append(ms, mention{m[2], m[3], i, ByID})
		}
	}
	if len(title) >= 2 {
		spans := wordSpans(s)
		for k := 0; k+len(title) <= len(spans); k++ {
			match := true
			for j, w := range title {
				sp := spans[k+j]
				if strings.ToLower(s[sp[0]:sp[1]]) != w {
					match = false
					break
				}
			}
			if match {
				ms = append(ms, mention{spans[k][0], spans[k+len(title)-1][1], i, ByTitle})
			}
		}
	}
	if loc != nil {
		for _, m := range loc.FindAllStringSubmatchIndex(s, -1) {
			ms = append(ms, mention{m[2], m[3], i, ByLocation})
		}
	}
	return ms
}

// locationPattern matches f's file:line, the file by its path or its base
// name, not inside a longer path or number; nil for a finding without both.
func locationPattern(f Finding) *regexp.Regexp {
	file := cleanFile(f.File)
	if file == "" || f.Line <= 0 {
		return nil
	}
	names := []string{regexp.QuoteMeta(file)}
	if base := path.Base(file); base != file {
		names = append(names, regexp.QuoteMeta(base))
	}
	return regexp.MustCompile(`(?:^|[^\w./-])((?:` + strings.Join(names, "|") + `):` + strconv.Itoa(f.Line) + `)(?:$|\W)`)
}

// idPattern matches id as a word of its own, in any case; nil for an id
// too short to tell from other words.
func idPattern(id string) *regexp.Regexp {
	if len(id) < 8 {
		return nil
	}
	return regexp.MustCompile(`(?i)(?:^|[^0-9a-z])(` + regexp.QuoteMeta(id) + `)(?:$|[^0-9a-z])`)
}

// wordSpans are the byte spans of the words of s: runs of letters, marks
// and digits (normaliseTitle's words).
func wordSpans(s string) [][2]int {
	var spans [][2]int
	start := -1
	for i, r := range s {
		in := unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			spans = append(spans, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		spans = append(spans, [2]int{start, len(s)})
	}
	return spans
}

// sentence ends: ".", "!" or "?" followed by white space.
var sentenceEnd = lazy.MustCompile(`[.!?]\s+`)

// list markers that open a line: "- ", "* ", "1. ", "1) ".
var listMarker = lazy.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+`)

// sentences splits text into lines, and lines into sentences, without
// list markers or surrounding white space.
func sentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = listMarker.ReplaceAllString(line, "")
		from := 0
		for _, m := range sentenceEnd.FindAllStringIndex(line, -1) {
			if s := strings.TrimSpace(line[from : m[0]+1]); s != "" {
				out = append(out, s)
			}
			from = m[1]
		}
		if s := strings.TrimSpace(line[from:]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// segment is the part of a sentence about one finding.
type segment struct {
	finding int
	by      AttributedBy
	words   string
}

// clause boundaries between two findings' mentions, the last one wins.
var clauseBreak = lazy.MustCompile(`(?i)(?:[,;]\s*(?:(?:and|while|but|plus|also)\s+)?|\s+(?:and|while|but|plus|also)\s+)`)

// segments cuts sentence s at the boundaries between the mentions of
// different findings: each group of consecutive mentions of one finding
// gets the words from the clause it opens to the clause the next group
// opens.
func segments(s string, ms []mention) []segment {
	slices.SortFunc(ms, func(a, b mention) int { return a.start - b.start })
	// Consecutive mentions of one finding are one group.
	type group struct {
		start, end, finding int
		by                  AttributedBy
	}
	var gs []group
	for _, m := range ms {
		if n := len(gs); n > 0 && gs[n-1].finding == m.finding {
			gs[n-1].end = max(gs[n-1].end, m.end)
			if byRank(m.by) < byRank(gs[n-1].by) {
				gs[n-1].by = m.by
			}
			continue
		}
		gs = append(gs, group{m.start, m.end, m.finding, m.by})
	}
	starts := make([]int, len(gs))
	ends := make([]int, len(gs))
	for k, g := range gs {
		switch {
		case k == 0 && len(gs) > 1 && strings.HasSuffix(strings.TrimSpace(s[:g.start]), ":"):
			starts[k] = g.start // "Fixed both findings: a ..., and b ...": the lead-in is not a's
		case k == 0:
			starts[k] = 0
		default:
			prev := gs[k-1].end
			cut := g.start
			if prev < g.start {
				between := s[prev:g.start]
				if all := clauseBreak.FindAllStringIndex(between, -1); len(all) > 0 {
					last := all[len(all)-1]
					ends[k-1], cut = prev+last[0], prev+last[1]
				}
			}
			if ends[k-1] == 0 {
				ends[k-1] = cut
			}
			starts[k] = cut
		}
	}
	ends[len(gs)-1] = len(s)
	// Two findings named at one place share the words that follow.
	for k := len(gs) - 2; k >= 0; k-- {
		if ends[k] <= starts[k] {
			ends[k] = ends[k+1]
		}
	}
	var out []segment
	for k, g := range gs {
		w := strings.TrimSpace(s[starts[k]:max(ends[k], starts[k])])
		w = strings.TrimRight(w, " ,;:.")
		if w == "" {
			continue
		}
		out = append(out, segment{finding: g.finding, by: g.by, words: w})
	}
	return out
}
