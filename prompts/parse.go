package prompts

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// MaxAnswerSize is the largest reviewer answer ParseReview accepts, in
// bytes (1 MiB). A larger answer is a *ParseError ("answer too large")
// before any of it is scanned.
const MaxAnswerSize = 1 << 20

// ParseError is the error ParseReview returns for an answer it cannot use.
// Reason says why in one short sentence, without the "unusable review"
// prefix of Error; it is written to be shown to the reviewer in a Repair
// prompt.
type ParseError struct {
	Reason string
}

// Error returns "unusable review: " followed by the reason.
func (e *ParseError) Error() string {
	return "unusable review: " + e.Reason
}

func parseErrorf(format string, args ...any) *ParseError {
	return &ParseError{Reason: fmt.Sprintf(format, args...)}
}

// ParseReview parses a reviewer's answer strictly against the reviewer
// output contract. Every error is a *ParseError, and an answer that yields
// an error has no verdict: it must never count as an approval.
//
// Where the object is found: the answer may be the JSON object bare, inside
// a ```json (or plain ```) fence, or with prose before and after it. The
// contract object is a top-level balanced {...} object (one not inside
// another object) that decodes and has a "verdict" key; objects are looked
// for inside each ```json fence and, separately, in the text around the
// fences, so that a stray brace in prose does not hide a fenced answer.
// The answer must hold exactly one contract object: two or more (say, the
// reviewer's own and one echoed from the diff, fenced or bare, in either
// order) are an error, never a choice between them. So is a "verdict" key
// (the literal "verdict" followed by a colon) anywhere outside the contract
// object, such as in a second object that does not decode: it is most
// likely a second answer. A JSON example inside a string of the object (a
// finding's detail) is part of that string, not a second object. An answer
// that ends inside an unclosed object mentioning "verdict" after the
// contract object (or anywhere, when there is none) is an error (it looks
// cut off). The only leniency is that trailing commas before } or ] are
// ignored; comments, single quotes and other JSON5 forms are errors, and
// so is a key given twice in one object. The key must be spelt "verdict"
// literally (not with \u escapes).
//
// What is checked: "verdict" is approve or request_changes; "summary" is a
// non-empty string; "findings" is an array (missing or null is an error, []
// is fine, also with request_changes); each finding has a severity from
// Severities, a domain from Domains, a non-empty title and detail, an
// optional file (trimmed, leading "./" removed), an optional line that is a
// whole number >= 0 (a string such as "42" is an error) and needs a file
// when it is > 0, and an optional suggestion; "resolved" is an optional
// array of non-empty strings. Verdict, severity and domain are matched
// case-insensitively and returned in lower case. Unknown keys are ignored.
// Policy (such as approving with a high finding open) is the caller's.
//
// Each finding's ID is set with FindingID; findings with the same ID are
// merged into the first, which takes the highest severity among them.
// Answers larger than MaxAnswerSize are rejected; the work is linear in
// the size of the answer.
func ParseReview(text string) (ReviewResult, error) {
	if len(text) > MaxAnswerSize {
		return ReviewResult{}, parseErrorf("answer too large: %d bytes, the limit is %d (1 MiB)", len(text), MaxAnswerSize)
	}
	obj, err := selectObject(text)
	if err != nil {
		return ReviewResult{}, err
	}
	return decodeReview(obj)
}

// selectObject finds the one contract object of the answer, as ParseReview
// describes.
func selectObject(text string) (map[string]json.RawMessage, error) {
	var (
		found    []span // contract objects, in order
		chosen   map[string]json.RawMessage
		badErr   error // the first object mentioning "verdict" that does not decode
		unclosed []int // offsets of never-closed '{', in order
	)
	for _, region := range regions(text) {
		sc := scanObjects(text[region.start:region.end])
		for _, o := range sc.objects {
			o := span{region.start + o.start, region.start + o.end}
			obj := text[o.start:o.end]
			if !strings.Contains(obj, `"verdict"`) {
				continue // cannot have the key; spares decoding prose and findings
			}
			m, err := decodeObject(obj)
			if err != nil {
				if badErr == nil {
					badErr = syntaxError(text, o.start, err)
				}
				continue
			}
			if m["verdict"] != nil {
				found = append(found, o)
				chosen = m
			}
		}
		for i := range sc.unclosed {
			sc.unclosed[i] += region.start
		}
		unclosed = append(unclosed, sc.unclosed...)
	}
	if len(found) > 1 {
		return nil, tooManyObjects(text, found[0].start, found[1].start)
	}

	// An object left open after the contract object (or anywhere, when
	// there is none) that mentions "verdict" is most likely the real
	// answer, cut off. Offsets in unclosed increase, so the first one after
	// the object covers all the text the others do.
	end := -1
	if len(found) == 1 {
		end = found[0].end
	}
	for _, u := range unclosed {
		if u < end {
			continue
		}
		if strings.Contains(text[u:], `"verdict"`) {
			return nil, parseErrorf("the answer ends inside a JSON object that starts on line %d and is never closed; it looks cut off", lineOf(text, u))
		}
		break
	}
	if len(found) == 0 {
		if badErr != nil {
			return nil, badErr
		}
		return nil, parseErrorf(`no JSON object with a "verdict" key found`)
	}

	// A "verdict" key outside the object belongs to another answer that the
	// scan could not see as one (it does not decode, or prose around it
	// confused the scan): still two answers.
	o := found[0]
	if i := verdictKey(text[:o.start]); i >= 0 {
		return nil, tooManyObjects(text, i, o.start)
	}
	if i := verdictKey(text[o.end:]); i >= 0 {
		return nil, tooManyObjects(text, o.start, o.end+i)
	}
	if err := checkDuplicateKeys(text, o); err != nil {
		return nil, err
	}
	return chosen, nil
}

// tooManyObjects is the error for an answer with a second contract object;
// a and b are the offsets of two of them, in order.
func tooManyObjects(text string, a, b int) *ParseError {
	return parseErrorf(`the answer holds more than one JSON object with a "verdict" key (lines %d and %d); it must hold exactly one`, lineOf(text, a), lineOf(text, b))
}

// verdictKey returns the offset in s of the first "verdict" followed, after
// optional JSON white space, by a colon: a "verdict" key, or -1. Inside a
// JSON string the quotes would be escaped, so a key found here is not
// part of a string of a valid object.
func verdictKey(s string) int {
	const key = `"verdict"`
	for off := 0; ; {
		i := strings.Index(s[off:], key)
		if i < 0 {
			return -1
		}
		j := off + i + len(key)
		for j < len(s) && isJSONSpace(s[j]) {
			j++
		}
		if j < len(s) && s[j] == ':' {
			return off + i
		}
		off += i + len(key)
	}
}

// checkDuplicateKeys reports a key given twice in one object of the span o
// of text, which decodes: encoding/json would silently keep the last one
// (a second "verdict" or "findings" inside the one object). It also
// reports a top-level "verdict" key spelt with escapes, which the checks
// for a second answer, looking for the literal key, would not see.
func checkDuplicateKeys(text string, o span) error {
	dec := json.NewDecoder(strings.NewReader(stripTrailingCommas(text[o.start:o.end])))
	var walk func(depth int) error
	walk = func(depth int) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				// The offset is where the previous value ended: the key
				// starts after the comma and white space.
				at := o.start + int(dec.InputOffset())
				for at < o.end && (text[at] == ',' || isJSONSpace(text[at])) {
					at++
				}
				keyTok, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := keyTok.(string)
				if seen[key] {
					return parseErrorf("the key %q appears twice in one object on line %d", truncate(key), lineOf(text, at))
				}
				if depth == 0 && key == "verdict" && !strings.HasPrefix(text[at:], `"verdict"`) {
					return parseErrorf(`the "verdict" key on line %d is written with escapes; write it plainly`, lineOf(text, at))
				}
				seen[key] = true
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token() // '}'
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token() // ']'
			return err
		}
		return nil
	}
	if err := walk(0); err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return pe
		}
		// The span decoded once already; a failure here is a bug, and
		// still no verdict.
		return parseErrorf("invalid JSON in the object on line %d: %s", lineOf(text, o.start), err.Error())
	}
	return nil
}

// decodeObject decodes s, a balanced {...} span, ignoring trailing commas.
func decodeObject(s string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stripTrailingCommas(s)), &m); err != nil {
		return nil, err
	}
	return m, nil
}

// syntaxError describes err, from decoding the object at offset start of
// text, with the line it happened on.
func syntaxError(text string, start int, err error) *ParseError {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// stripTrailingCommas keeps offsets, so se.Offset is in the span.
		off := start + int(se.Offset) - 1
		off = max(start, min(off, len(text)))
		return parseErrorf("invalid JSON on line %d: %s", lineOf(text, off), se.Error())
	}
	return parseErrorf("invalid JSON in the object on line %d: %s", lineOf(text, start), err.Error())
}

// lineOf returns the 1-based line of byte offset off in text.
func lineOf(text string, off int) int {
	return 1 + strings.Count(text[:off], "\n")
}

// decodeReview checks the contract on the chosen object.
func decodeReview(m map[string]json.RawMessage) (ReviewResult, error) {
	var r ReviewResult
	verdict, err := requiredString(m, "verdict", "")
	if err != nil {
		return ReviewResult{}, err
	}
	switch v := strings.ToLower(verdict); v {
	case string(observability.ReviewApprove), string(observability.ReviewRequestChanges):
		r.Verdict = observability.ReviewVerdict(v)
	default:
		return ReviewResult{}, parseErrorf("verdict %q is not one of %s, %s", truncate(verdict), observability.ReviewApprove, observability.ReviewRequestChanges)
	}
	if r.Summary, err = requiredString(m, "summary", ""); err != nil {
		return ReviewResult{}, err
	}

	raw, ok := m["findings"]
	switch {
	case !ok:
		return ReviewResult{}, parseErrorf(`missing "findings" (use [] when there are none)`)
	case kind(raw) != "array":
		return ReviewResult{}, parseErrorf(`"findings" must be an array, not %s`, withArticle(kind(raw)))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return ReviewResult{}, parseErrorf(`"findings": %s`, err.Error())
	}
	r.Findings = make([]Finding, 0, len(items))
	index := make(map[string]int, len(items))
	for i, item := range items {
		f, err := decodeFinding(item, fmt.Sprintf("finding %d: ", i+1))
		if err != nil {
			return ReviewResult{}, err
		}
		if j, dup := index[f.ID]; dup {
			if f.Severity.Rank() > r.Findings[j].Severity.Rank() {
				r.Findings[j].Severity = f.Severity
			}
			continue
		}
		index[f.ID] = len(r.Findings)
		r.Findings = append(r.Findings, f)
	}

	if r.Resolved, err = decodeResolved(m["resolved"]); err != nil {
		return ReviewResult{}, err
	}
	return r, nil
}

// decodeFinding checks one finding; prefix ("finding 2: ") starts its errors.
func decodeFinding(raw json.RawMessage, prefix string) (Finding, error) {
	if k := kind(raw); k != "object" {
		return Finding{}, parseErrorf("%smust be an object, not %s", prefix, withArticle(k))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return Finding{}, parseErrorf("%s%s", prefix, err.Error())
	}
	var f Finding
	severity, err := requiredString(m, "severity", prefix)
	if err != nil {
		return Finding{}, err
	}
	sev, ok := severityOf(strings.ToLower(severity))
	if !ok {
		return Finding{}, parseErrorf("%sseverity %q is not one of %s", prefix, truncate(severity), severityNames(", "))
	}
	f.Severity = sev
	domain, err := requiredString(m, "domain", prefix)
	if err != nil {
		return Finding{}, err
	}
	f.Domain = strings.ToLower(domain)
	if !Domain(f.Domain).valid() {
		return Finding{}, parseErrorf("%sdomain %q is not one of %s", prefix, truncate(domain), joinDomains(", "))
	}
	if f.Title, err = requiredString(m, "title", prefix); err != nil {
		return Finding{}, err
	}
	if f.Detail, err = requiredString(m, "detail", prefix); err != nil {
		return Finding{}, err
	}
	file, err := optionalString(m, "file", prefix)
	if err != nil {
		return Finding{}, err
	}
	for strings.HasPrefix(file, "./") {
		file = file[2:]
	}
	f.File = file
	if f.Line, err = optionalLine(m, prefix); err != nil {
		return Finding{}, err
	}
	if f.Line > 0 && f.File == "" {
		return Finding{}, parseErrorf("%sline %d given without a file", prefix, f.Line)
	}
	if f.Suggestion, err = optionalString(m, "suggestion", prefix); err != nil {
		return Finding{}, err
	}
	f.ID = FindingID(f.Domain, f.File, f.Title)
	return f, nil
}

// decodeResolved checks the optional "resolved" array.
func decodeResolved(raw json.RawMessage) ([]string, error) {
	out := []string{}
	if raw == nil || kind(raw) == "null" {
		return out, nil
	}
	if k := kind(raw); k != "array" {
		return nil, parseErrorf(`"resolved" must be an array of strings, not %s`, withArticle(k))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, parseErrorf(`"resolved": %s`, err.Error())
	}
	seen := make(map[string]bool, len(items))
	for i, item := range items {
		if k := kind(item); k != "string" {
			return nil, parseErrorf(`"resolved" item %d must be a string, not %s`, i+1, withArticle(k))
		}
		var id string
		if err := json.Unmarshal(item, &id); err != nil {
			return nil, parseErrorf(`"resolved" item %d: %s`, i+1, err.Error())
		}
		id = strings.ToLower(strings.TrimSpace(id))
		if id == "" {
			return nil, parseErrorf(`"resolved" item %d is empty`, i+1)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// requiredString returns the trimmed, non-empty string value of key.
func requiredString(m map[string]json.RawMessage, key, prefix string) (string, error) {
	raw, ok := m[key]
	if !ok {
		return "", parseErrorf("%smissing %q", prefix, key)
	}
	if k := kind(raw); k != "string" {
		return "", parseErrorf("%s%q must be a string, not %s", prefix, key, withArticle(k))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", parseErrorf("%s%q: %s", prefix, key, err.Error())
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", parseErrorf("%s%q is empty", prefix, key)
	}
	return s, nil
}

// optionalString returns the trimmed string value of key; missing or null
// is "".
func optionalString(m map[string]json.RawMessage, key, prefix string) (string, error) {
	raw, ok := m[key]
	if !ok || kind(raw) == "null" {
		return "", nil
	}
	if k := kind(raw); k != "string" {
		return "", parseErrorf("%s%q must be a string, not %s", prefix, key, withArticle(k))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", parseErrorf("%s%q: %s", prefix, key, err.Error())
	}
	return strings.TrimSpace(s), nil
}

// optionalLine returns the value of "line": a JSON integer >= 0; missing or
// null is 0.
func optionalLine(m map[string]json.RawMessage, prefix string) (int, error) {
	raw, ok := m["line"]
	if !ok || kind(raw) == "null" {
		return 0, nil
	}
	if k := kind(raw); k != "number" {
		return 0, parseErrorf(`%s"line" must be a number, not %s`, prefix, withArticle(k))
	}
	s := string(raw)
	n, err := strconv.Atoi(s)
	switch {
	case err == nil && n < 0:
		return 0, parseErrorf("%sline %d is negative", prefix, n)
	case err == nil:
		return n, nil
	case strings.ContainsAny(s, ".eE"):
		return 0, parseErrorf("%sline %s is not a whole number", prefix, truncate(s))
	default:
		return 0, parseErrorf("%sline %s is out of range", prefix, truncate(s))
	}
}

// kind names the JSON type of a decoded value by its first byte.
func kind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// withArticle names a kind for a message: "a string", "an array", "null".
func withArticle(k string) string {
	switch k {
	case "null", "empty":
		return k
	case "object", "array":
		return "an " + k
	}
	return "a " + k
}

// truncate shortens s for quoting in an error: at most 40 runes.
func truncate(s string) string {
	const limit = 40
	n := 0
	for i := range s {
		if n == limit {
			return s[:i] + "..."
		}
		n++
	}
	return s
}
