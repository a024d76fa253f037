package runners

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The fast path of Claude.Parse. Tool calls and their results are most of
// the bytes of a coding session (whole files, test output), and decoding
// their lines with encoding/json cost most of spawn's CPU when reading a
// stream. A user or assistant line is parsed here instead, in one pass over
// its bytes that validates the line as encoding/json's scanner does and
// decodes only what its events need. The rule that keeps the two paths
// equal: the fast path decides a line only when its result is certain to be
// the one the full decoder gives; anything unusual (another event type, a
// key that differs from a field name only in case or holds an escape or a
// non-ASCII byte, a repeated key, a value of an unexpected type, a count
// that is not an integer, deep nesting) makes it decline, and the line goes
// to encoding/json as before. TestClaudeFastPath* and FuzzClaudeFastPath
// hold the two paths to the same events.

// fastMaxDepth bounds the nesting the fast path follows; deeper lines go to
// encoding/json, which has its own limit.
const fastMaxDepth = 256

// jsonScanner walks one JSON text. Its methods validate as they go (the
// grammar encoding/json accepts) and report false on the first error.
type jsonScanner struct {
	b     []byte
	i     int
	depth int
	// floats has every number checked to be one a float64 holds, as a
	// decode into an any needs (encoding/json fails on 1e999 there).
	floats bool
	// plainKey says the key object hands its member holds no escape and
	// no byte outside ASCII.
	plainKey bool
	// scratch, when set, is the buffer strValue decodes a string with
	// escapes in, kept from one value and one line to the next; nil: a
	// buffer of its own for each.
	scratch *[]byte
}

// ws skips JSON whitespace. The usual case, none, is inlined.
func (s *jsonScanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	s.skipSpace()
}

// skipSpace is ws's loop.
func (s *jsonScanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace, 0 at the end. The usual case,
// no whitespace, is inlined.
func (s *jsonScanner) peek() byte {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return s.b[s.i]
	}
	s.skipSpace()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// Bytes repeated in each byte of a word, for asciiRun.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// asciiRun returns the index of the first byte of b at or after i that is
// not printable ASCII standing for itself in a JSON string (a control
// character, a quote, a backslash or a byte outside ASCII), len(b) if none.
// It looks at eight bytes at a time: in a word x, (x - lsbs*n) &^ x & msbs
// marks the bytes below n, and the lowest mark is exact.
func asciiRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		m := ((x-lsbs*0x20)|((x^lsbs*'"')-lsbs)|((x^lsbs*'\\')-lsbs))&^x&msbs | x&msbs
		if m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// str reads the string at s.i (its opening quote) and returns it with its
// quotes, and whether it holds an escape or a byte outside ASCII (then it
// must be unquoted to be compared or kept).
func (s *jsonScanner) str() (raw []byte, plain, ok bool) {
	raw, plain, _, ok = s.strEscapes()
	return raw, plain, ok
}

// strEscapes is str, and reports too whether the string holds a \u escape
// of a character other than a control character (see Output.Searchable).
func (s *jsonScanner) strEscapes() (raw []byte, plain, uEscape, ok bool) {
	start := s.i
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false, false
	}
	plain = true
	b := s.b
	i := asciiRun(b, s.i+1)
	for {
		for i < len(b) && b[i] >= utf8.RuneSelf {
			plain = false
			i = asciiRun(b, i+1)
		}
		if i >= len(b) {
			s.i = i
			return nil, false, false, false
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return b[start:s.i], plain, uEscape, true
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				s.i = i
				return nil, false, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r := u4(b, i)
				if r < 0 {
					s.i = i
					return nil, false, false, false
				}
				uEscape = uEscape || r >= 0x20
				i += 6
			default:
				s.i = i
				return nil, false, false, false
			}
		default: // a control character
			s.i = i
			return nil, false, false, false
		}
		// The next run: escapes are dense in source code and test output,
		// so a short run is read a byte at a time, a long one by asciiRun.
		for j := i; i < len(b) && plainBytes[b[i]] == '1'; {
			if i++; i-j == 8 {
				i = asciiRun(b, i)
				break
			}
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads a JSON number.
func (s *jsonScanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if s.floats {
		if _, err := strconv.ParseFloat(string(b[s.i:i]), 64); err != nil {
			return false
		}
	}
	s.i = i
	return true
}

// literal reads true, false or null.
func (s *jsonScanner) literal(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// skip reads one value of any kind.
func (s *jsonScanner) skip() bool {
	switch s.peek() {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{':
		return s.object(func(key []byte) bool { return s.skip() })
	case '[':
		return s.array(func() bool { return s.skip() })
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

// object reads an object, calling member with each key (its raw bytes
// between the quotes) with s.i at the value, which member must read.
func (s *jsonScanner) object(member func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	if s.depth++; s.depth > fastMaxDepth {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		s.depth--
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		raw, plain, ok := s.str()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		s.plainKey = plain
		if !member(raw[1 : len(raw)-1]) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// array reads an array, calling elem with s.i at each element, which elem
// must read.
func (s *jsonScanner) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	if s.depth++; s.depth > fastMaxDepth {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// keyIs classifies an object key against a field name as encoding/json
// matches it: exact is an exact match; decline is a key the fast path does
// not judge (one that differs from name only in ASCII case, or holds an
// escape or a byte outside ASCII, which encoding/json may fold onto name).
func keyIs(key []byte, name string) (exact, decline bool) {
	if string(key) == name {
		return true, false
	}
	if len(key) != len(name) {
		// An escape or a multi-byte letter may still fold onto name.
		return false, hasEscapeOrNonASCII(key)
	}
	for i := range len(key) {
		c := key[i]
		if c == '\\' || c >= utf8.RuneSelf {
			return false, true
		}
		if lower(c) != lower(name[i]) {
			return false, false
		}
	}
	return false, true
}

// equalFoldASCII reports whether key and name, of the same length, differ
// only in ASCII case.
func equalFoldASCII(key []byte, name string) bool {
	for i := range len(key) {
		if lower(key[i]) != lower(name[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func hasEscapeOrNonASCII(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// hex4 is the value of four hex digits, already validated.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r*16 + rune(c)
	}
	return r
}

// matchKey matches the key object handed its member against the field
// names of a struct as encoding/json does: i is the index of the name key
// is exactly, -1 for none. decline reports a key the fast path does not
// judge: one that differs from a name only in ASCII case, or that holds an
// escape or a byte outside ASCII (encoding/json may fold it onto a name).
func (s *jsonScanner) matchKey(key []byte, names ...string) (i int, decline bool) {
	if s.plainKey {
		// Most keys: only a name of the same length can match, or fold.
		for i, name := range names {
			switch {
			case len(key) != len(name):
			case string(key) == name:
				return i, false
			case equalFoldASCII(key, name):
				return -1, true
			}
		}
		return -1, false
	}
	for i, name := range names {
		exact, decline := keyIs(key, name)
		if decline {
			return -1, true
		}
		if exact {
			return i, false
		}
	}
	return -1, false
}

// fields reads an object as encoding/json decodes it into a struct whose
// fields' JSON names are names (at most 32): field reads the value of the
// field names[i], with s.i at it; an unknown key's value is skipped. A key
// repeated, or one matchKey declines, declines the object: it goes to the
// full decoder.
func (s *jsonScanner) fields(names []string, field func(i int) bool) bool {
	var seen uint32
	return s.object(func(key []byte) bool {
		i, decline := s.matchKey(key, names...)
		switch {
		case decline || i >= 0 && seen&(1<<i) != 0:
			return false
		case i < 0:
			return s.skip()
		}
		seen |= 1 << i
		return field(i)
	})
}

// stringField reads a string value into *dst; any other value declines.
func (s *jsonScanner) stringField(dst *string) bool {
	if s.peek() != '"' {
		return false
	}
	v, ok := s.strValue()
	*dst = v
	return ok
}

// stringOrNull reads a string value into *dst, or null, which leaves *dst
// as it is (as encoding/json does); any other value declines.
func (s *jsonScanner) stringOrNull(dst *string) bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	return s.stringField(dst)
}

// strValue reads the string at s.i and returns what encoding/json decodes
// it into, validating and decoding in one pass (a tool result's text is
// most of a stream's bytes): as encoding/json does, a lone or broken surrogate
// and each byte of malformed UTF-8 become U+FFFD. A string with escapes is
// decoded into s.scratch, then copied into a string of its exact size.
func (s *jsonScanner) strValue() (string, bool) {
	b := s.b
	start := s.i + 1
	j := asciiRun(b, start)
	if j < len(b) && b[j] == '"' {
		s.i = j + 1
		return string(b[start:j]), true
	}
	var out []byte
	if s.scratch != nil {
		out = (*s.scratch)[:0]
	} else {
		// Room for a typical tool result; a longer value grows.
		out = make([]byte, 0, min(len(b)-start, 8<<10))
	}
	for i := start; ; {
		if j >= len(b) {
			return "", false
		}
		out = append(out, b[i:j]...)
		switch c := b[j]; {
		case c == '"':
			s.i = j + 1
			if s.scratch != nil && cap(out) <= maxScratch {
				*s.scratch = out
			}
			return string(out), true
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[j:])
			out = utf8.AppendRune(out, r)
			i = j + size
		default: // a backslash
			if j+1 >= len(b) {
				return "", false
			}
			i = j + 2
			switch b[j+1] {
			case '"', '\\', '/':
				out = append(out, b[j+1])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := u4(b, j)
				if r < 0 {
					return "", false
				}
				i = j + 6
				if utf16.IsSurrogate(r) {
					if lo := u4(b, i); lo >= 0 {
						if dec := utf16.DecodeRune(r, lo); dec != unicode.ReplacementChar {
							r = dec
							i += 6
						}
					}
				}
				if utf16.IsSurrogate(r) {
					r = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", false
			}
		}
		// The next run: escapes are dense in source code and test output,
		// so a short run is read a byte at a time, a long one by asciiRun.
		for j = i; j < len(b) && plainBytes[b[j]] == '1'; {
			if j++; j-i == 8 {
				j = asciiRun(b, j)
				break
			}
		}
	}
}

// maxScratch bounds the buffer strValue keeps from one value to the next:
// a huge value's is dropped.
const maxScratch = 256 << 10

// plainBytes marks with a 1 each byte that stands for itself in a JSON
// string: printable ASCII but the quote and the backslash. A table is
// faster than the comparisons on the short runs between escapes.
const plainBytes = "" +
	"0000000000000000" + // 00-0f
	"0000000000000000" + // 10-1f
	"1101111111111111" + // 20-2f
	"1111111111111111" + // 30-3f
	"1111111111111111" + // 40-4f
	"1111111111110111" + // 50-5f
	"1111111111111111" + // 60-6f
	"1111111111111111" + // 70-7f
	"0000000000000000" + // 80-8f
	"0000000000000000" + // 90-9f
	"0000000000000000" + // a0-af
	"0000000000000000" + // b0-bf
	"0000000000000000" + // c0-cf
	"0000000000000000" + // d0-df
	"0000000000000000" + // e0-ef
	"0000000000000000" // f0-ff

// u4 is the value of the escape \uXXXX at b[i:], -1 if there is none.
func u4(b []byte, i int) rune {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return -1
	}
	for _, h := range b[i+2 : i+6] {
		if !isHex(h) {
			return -1
		}
	}
	return hex4(b[i+2 : i+6])
}

// claudeFastLine parses a claude stream-json line on the fast path. It
// reports handled false when the line must go to the full decoder: it is
// neither a user nor an assistant line nor a system notice (a system line
// other than init and api_retry, which has no event), or not one the fast
// path is sure to read as encoding/json does. When handled, events holds the line's events
// in order (it is buf, reused), which may be none; the line was valid JSON.
//
// The message is read in the same pass whether the type comes before it or
// after (claude writes the type first; a re-encoded stream may sort the
// keys): every field a user or an assistant message may need is read, and
// the type picks the events at the end. The text of a tool_result whose
// call skip names is not read (see Claude.Parse).
func claudeFastLine(line []byte, buf []Event, skip func(id string) bool, scratch *[]byte) (events []Event, handled bool) {
	s := jsonScanner{b: line, scratch: scratch}
	var kind string // "user", "assistant" or "system" once the type is read
	var subtype string
	msg := fastMessage{skip: skip, scratch: scratch}
	ok := s.fields([]string{"type", "message", "subtype"}, func(i int) bool {
		switch {
		case i == 0:
			if s.peek() != '"' {
				return false
			}
			typ, plain, ok := s.str()
			switch {
			case ok && plain && string(typ) == `"user"`:
				kind = "user"
			case ok && plain && string(typ) == `"assistant"`:
				kind = "assistant"
			case ok && plain && string(typ) == `"system"`:
				kind = "system"
			default:
				// Another type goes to the full decoder: stop here.
				return false
			}
			return true
		case i == 2:
			return s.stringOrNull(&subtype)
		}
		switch s.peek() {
		case 'n':
			return s.literal("null")
		case '{':
			return s.message(&msg)
		default:
			return false
		}
	})
	if s.ws(); !ok || s.i != len(s.b) || kind == "" {
		return buf[:0], false
	}
	if kind == "system" {
		// A system line other than init and api_retry (a notice such as
		// vcs_state_changed) has no event; those two go to the full
		// decoder.
		return buf[:0], subtype != "init" && subtype != "api_retry"
	}
	return msg.events(kind, buf[:0], skip)
}

// fastMessage is what the events of a user or assistant line need of its
// message.
type fastMessage struct {
	id     string
	usage  *Usage
	blocks []fastBlock
	// skip is Claude.Parse's: the calls whose result text is not read.
	skip func(id string) bool
	// scratch is the line's scanner's (see jsonScanner).
	scratch *[]byte
}

// fastBlock is one content block of a message: the fields of claudeBlock.
type fastBlock struct {
	typ, text string
	toolUse   ToolUse
	result    ToolResult
	// content is a tool_result's content as the line holds it, JSON,
	// read into result.Content by events when it is wanted, or by
	// block already (decoded true): a string content whose call's id came
	// before it, and whose call skip does not name.
	content []byte
	decoded bool
}

// events appends the events of a line of kind ("user" or "assistant") to
// events, as Parse makes them from claudeLine, reading the text of each
// tool_result whose call skip does not name, or that failed. handled is false when a
// text must go to the full decoder.
func (m *fastMessage) events(kind string, events []Event, skip func(id string) bool) (_ []Event, handled bool) {
	for i := range m.blocks {
		b := &m.blocks[i]
		switch {
		case kind == "user" && b.typ == "tool_result":
			if b.content != nil && !b.decoded && (!skip(b.result.ToolUseID) || b.result.IsError) {
				sub := jsonScanner{b: b.content, scratch: m.scratch}
				text, ok := sub.toolResultText()
				if !ok || sub.i != len(sub.b) {
					return events[:0], false
				}
				b.result.Content = text
			}
			events = append(events, Event{Kind: KindToolResult, ToolResult: &b.result})
		case kind == "assistant" && b.typ == "text":
			events = append(events, Event{Kind: KindText, Message: m.id, Usage: m.usage, Text: b.text})
		case kind == "assistant" && b.typ == "tool_use":
			b.toolUse.Kind = claudeToolKinds[b.toolUse.Name]
			events = append(events, Event{Kind: KindToolUse, Message: m.id, Usage: m.usage, ToolUse: &b.toolUse})
		}
	}
	return events, true
}

// message reads a message object into m.
func (s *jsonScanner) message(m *fastMessage) bool {
	return s.fields([]string{"id", "content", "usage"}, func(i int) bool {
		switch i {
		case 0:
			return s.stringField(&m.id)
		case 1:
			switch s.peek() {
			case '[':
				return s.array(func() bool {
					m.blocks = append(m.blocks, fastBlock{})
					return s.block(&m.blocks[len(m.blocks)-1], m.skip)
				})
			case '"':
				// A replayed prompt: a type mismatch that leaves no blocks.
				_, _, ok := s.str()
				return ok
			case 'n':
				return s.literal("null")
			default:
				return false
			}
		default:
			switch s.peek() {
			case '{':
				var ok bool
				m.usage, ok = s.usage()
				return ok
			case 'n':
				return s.literal("null")
			default:
				return false
			}
		}
	})
}

// block reads one content block into b.
func (s *jsonScanner) block(b *fastBlock, skip func(id string) bool) bool {
	if s.peek() != '{' {
		return false
	}
	haveID := false // the tool_use_id came before the content
	return s.fields([]string{"type", "text", "id", "name", "input", "tool_use_id", "is_error", "content"}, func(i int) bool {
		switch i {
		case 0:
			return s.stringField(&b.typ)
		case 1:
			return s.stringField(&b.text)
		case 2:
			return s.stringField(&b.toolUse.ID)
		case 3:
			return s.stringField(&b.toolUse.Name)
		case 4:
			return s.raw(&b.toolUse.Input)
		case 5:
			haveID = true
			return s.stringField(&b.result.ToolUseID)
		case 6:
			switch s.peek() {
			case 't':
				b.result.IsError = true
				return s.literal("true")
			case 'f':
				return s.literal("false")
			default:
				return false
			}
		default:
			start := s.i
			if haveID && s.peek() == '"' && !skip(b.result.ToolUseID) {
				// Wanted whatever else the block says (see events):
				// checked and kept.
				if !s.keepString(&b.result.Content) {
					return false
				}
				b.content, b.decoded = s.b[start:s.i], true
				return true
			}
			// Checked as JSON now, read only if wanted (events).
			if !s.skip() {
				return false
			}
			b.content = s.b[start:s.i]
			return true
		}
	})
}

// toolResultText reads a tool_result's content as claudeToolResultText
// reads it: a string, kept as it is, or the text blocks of an array
// joined with newlines; any other value has no text.
func (s *jsonScanner) toolResultText() (Output, bool) {
	switch s.peek() {
	case '"':
		var out Output
		return out, s.keepString(&out)
	case '[':
		var texts []string
		ok := s.array(func() bool {
			if s.peek() != '{' {
				return s.skip()
			}
			// A map: keys are unquoted and looked up exactly, then with
			// strings.EqualFold; matchKey declines any key that could fold.
			var typ, text string
			ok := s.fields([]string{"type", "text"}, func(i int) bool {
				switch {
				case s.peek() != '"':
					// Not a string: no type, or an empty text.
					return s.skip()
				case i == 0:
					return s.stringField(&typ)
				default:
					return s.stringField(&text)
				}
			})
			if ok && typ == "text" {
				texts = append(texts, text)
			}
			return ok
		})
		return OutputOf(strings.Join(texts, "\n")), ok
	default:
		return Output{}, s.skip()
	}
}

// usage reads a message's usage object as claudeUsage, summed as Parse
// sums it. A count that is not an integer declines.
func (s *jsonScanner) usage() (*Usage, bool) {
	var in, create, read, out int64
	ok := s.fields([]string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}, func(i int) bool {
		start := s.i
		if !s.number() {
			return false
		}
		n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
		if err != nil {
			return false
		}
		*[...]*int64{&in, &create, &read, &out}[i] = n
		return true
	})
	return &Usage{InputTokens: in + create + read, OutputTokens: out}, ok
}
