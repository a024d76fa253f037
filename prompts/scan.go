package prompts

import "strings"

// span is a byte range [start, end) of a text.
type span struct{ start, end int }

// objects is what scanObjects finds in a text.
type objects struct {
	// objects are the maximal balanced {...} spans, in order: spans not
	// inside another balanced span. Spans inside an object that is never
	// closed count as maximal.
	objects []span
	// unclosed are the offsets of the '{' that are never closed, outermost
	// first.
	unclosed []int
}

// jsonString follows whether a JSON text is inside a string literal, byte
// by byte, escapes included.
type jsonString struct{ in, escape bool }

// step takes the next byte and reports whether it belongs to a string
// literal (its quotes included).
func (js *jsonString) step(c byte) bool {
	switch {
	case !js.in:
		js.in = c == '"'
		return js.in
	case js.escape:
		js.escape = false
	case c == '\\':
		js.escape = true
	case c == '"':
		js.in = false
	}
	return true
}

// scanObjects finds the balanced {...} objects of s in one pass, in linear
// time. Outside objects everything is prose and ignored (quotes included);
// inside, JSON strings and their escapes are respected, so braces in
// strings do not count. Brackets are not matched: decoding checks them.
func scanObjects(s string) objects {
	type level struct {
		open int // the offset of its '{'
		kids int // where its closed spans start in closed
	}
	var (
		res objects
		// As deep as the braces may go, at once: growing it a level at
		// a time copied an answer of a million open braces' levels
		// again and again.
		stack = make([]level, 0, strings.Count(s, "{"))
		// closed are the maximal closed spans inside the open levels, the
		// lowest level's first: a level's spans all closed before the
		// next level opened.
		closed []span
		str    jsonString
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if len(stack) == 0 {
			if c == '{' {
				stack = append(stack, level{i, len(closed)})
			}
			continue
		}
		if str.step(c) {
			continue
		}
		switch c {
		case '{':
			stack = append(stack, level{i, len(closed)})
		case '}':
			top := stack[len(stack)-1]
			sp := span{top.open, i + 1}
			stack, closed = stack[:len(stack)-1], closed[:top.kids]
			if len(stack) == 0 {
				res.objects = append(res.objects, sp)
			} else {
				closed = append(closed, sp)
			}
		}
	}
	// Objects closed inside a never-closed one, in order.
	res.objects = append(res.objects, closed...)
	res.unclosed = make([]int, len(stack))
	for i, l := range stack {
		res.unclosed[i] = l.open
	}
	return res
}

// stripTrailingCommas replaces with a space every comma of s (outside JSON
// strings) that is followed, after white space, by '}' or ']' and preceded
// by a value. Offsets are kept, so decoding errors point at the right byte.
// It returns s itself when there is nothing to replace.
func stripTrailingCommas(s string) string {
	var (
		out  []byte
		str  jsonString
		prev byte // last byte outside strings that is not white space (a string counts as '"')
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if str.step(c) {
			prev = '"'
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case ',':
			if prev != 0 && prev != '{' && prev != '[' && prev != ',' {
				j := i + 1
				for j < len(s) && isJSONSpace(s[j]) {
					j++
				}
				if j < len(s) && (s[j] == '}' || s[j] == ']') {
					if out == nil {
						out = []byte(s)
					}
					out[i] = ' '
				}
			}
		}
		prev = c
	}
	if out == nil {
		return s
	}
	return string(out)
}

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// jsonFences returns the contents of the ```json fences of text (the info
// string "json" in any case), in order. A fence line is a line that starts,
// after white space, with three backticks; a fence closes at the next line
// of backticks only. A fence left open runs to the end of text.
func jsonFences(text string) []span {
	var (
		out     []span
		open    bool
		isJSON  bool
		content int
	)
	for i := 0; i < len(text); {
		end := len(text)
		if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
			end = i + j
		}
		next := min(end+1, len(text))
		line := strings.TrimSpace(text[i:end])
		if strings.HasPrefix(line, "```") {
			rest := strings.TrimSpace(strings.TrimLeft(line, "`"))
			switch {
			case !open:
				open, isJSON, content = true, strings.EqualFold(rest, "json"), next
			case rest == "":
				if isJSON {
					out = append(out, span{content, i})
				}
				open = false
			}
		}
		i = next
	}
	if open && isJSON {
		out = append(out, span{content, len(text)})
	}
	return out
}

// regions splits text into the parts ParseReview scans for objects one by
// one: the contents of each ```json fence, and the text between them (fence
// lines included), in order. Together they cover text; none overlap.
func regions(text string) []span {
	var out []span
	prev := 0
	for _, f := range jsonFences(text) {
		if f.start > prev {
			out = append(out, span{prev, f.start})
		}
		out = append(out, f)
		prev = f.end
	}
	if prev < len(text) {
		out = append(out, span{prev, len(text)})
	}
	return out
}
