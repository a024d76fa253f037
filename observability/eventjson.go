package observability

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends e as json.Marshal writes it to b, the same bytes,
// and returns the error json.Marshal returns. An agent's progress event,
// which comes by the thousand a second while an agent streams
// (events.ndjson, --progress=json), is written without reflection; any
// other event goes through json.Marshal.
func (e Event) AppendJSON(b []byte) ([]byte, error) {
	if out, ok := appendAgentEvent(b, &e); ok {
		return out, nil
	}
	j, err := json.Marshal(e)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendAgentEvent appends an EventAgent event as json.Marshal does; ok is
// false for another event, and for one it does not write (a value
// json.Marshal fails on).
func appendAgentEvent(b []byte, e *Event) (_ []byte, ok bool) {
	if e.Kind != EventAgent || e.Agent == nil || e.Process != nil || e.Usage != nil || e.AgentUsage != nil ||
		e.Commit != nil || e.Review != nil || e.Record != nil || e.Outcome != nil || e.GitHub != nil ||
		e.Resume != nil || e.Message != nil || e.Security != nil {
		return b, false
	}
	start := len(b)
	b = append(b, `{"time":`...)
	if b, ok = appendTime(b, e.Time); !ok {
		return b[:start], false
	}
	b = appendStringField(b, "run", e.Run, true)
	b = appendStringField(b, "kind", string(e.Kind), false)
	b = appendStringField(b, "phase", string(e.Phase), true)
	b = appendStringField(b, "role", string(e.Role), true)
	b = appendStringField(b, "llm", string(e.LLM), true)
	b = appendStringField(b, "seat", e.Seat, true)
	if e.Round != 0 {
		b = strconv.AppendInt(append(b, `,"round":`...), int64(e.Round), 10)
	}
	b = appendStringField(b, "text", e.Text, true)
	if e.RunCostUSD != 0 {
		if b, ok = appendFloat(append(b, `,"run_cost_usd":`...), e.RunCostUSD); !ok {
			return b[:start], false
		}
	}
	p := e.Agent
	b = append(b, `,"agent":{"kind":`...)
	b = AppendJSONString(b, string(p.Kind))
	b = strconv.AppendInt(append(b, `,"elapsed_ns":`...), int64(p.Elapsed), 10)
	b = strconv.AppendInt(append(b, `,"turns":`...), int64(p.Turns), 10)
	if b, ok = appendFloat(append(b, `,"cost_usd":`...), p.CostUSD); !ok {
		return b[:start], false
	}
	b = strconv.AppendInt(append(b, `,"files":`...), int64(p.Files), 10)
	b = strconv.AppendInt(append(b, `,"process":`...), int64(p.Process), 10)
	b = appendStringField(b, "tool", p.Tool, true)
	if len(p.Input) > 0 {
		if b, ok = appendRawJSON(append(b, `,"input":`...), p.Input); !ok {
			return b[:start], false
		}
	}
	b = appendStringField(b, "rule", p.Rule, true)
	b = appendStringField(b, "detail", p.Detail, true)
	if p.Confidence != 0 {
		if b, ok = appendFloat(append(b, `,"confidence":`...), p.Confidence); !ok {
			return b[:start], false
		}
	}
	return append(b, "}}"...), true
}

// appendTime appends t as json.Marshal writes a time.Time (its
// MarshalJSON); ok is false for a time that fails it.
func appendTime(b []byte, t time.Time) (_ []byte, ok bool) {
	if y := t.Year(); t.Location() != time.UTC || y < 0 || y > 9999 {
		// MarshalJSON fails on a year outside [0,9999] and on some
		// zones; a time in UTC within those years it writes as here.
		j, err := t.MarshalJSON()
		return append(b, j...), err == nil
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

// appendStringField appends `,"name":value`, or nothing for an empty
// value when omitEmpty.
func appendStringField(b []byte, name, value string, omitEmpty bool) []byte {
	if omitEmpty && value == "" {
		return b
	}
	b = append(append(append(append(b, ',', '"'), name...), '"'), ':')
	return AppendJSONString(b, value)
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string as json.Marshal writes it,
// the same bytes:
// <, > and & escaped as \u003c..., U+2028 and U+2029 escaped, each byte of
// invalid UTF-8 as \ufffd, control characters as \b, \f, \n, \r, \t or
// \u00XX.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// appendFloat appends f as json.Marshal writes a float64; ok is false for
// NaN and the infinities, which it fails on.
func appendFloat(b []byte, f float64) (_ []byte, ok bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendRawJSON appends a json.RawMessage as json.Marshal writes it:
// compacted, with <, >, &, U+2028 and U+2029 escaped; ok is false for one
// that is not JSON, which it fails on.
func appendRawJSON(b []byte, raw json.RawMessage) (_ []byte, ok bool) {
	// Compacted after b, then escaped in place when it holds anything to
	// escape (rarely).
	at := len(b)
	c := compacter{src: raw, dst: b}
	if c.value() && c.end() {
		b = c.dst
	} else {
		// Not JSON, or nested deeper than compacter goes: json.Compact
		// says which.
		buf := bytes.NewBuffer(b[:at])
		if json.Compact(buf, raw) != nil {
			return b[:at], false
		}
		b = buf.Bytes()
	}
	if !needsHTMLEscape(b[at:]) {
		return b, true
	}
	src := append([]byte(nil), b[at:]...)
	b = b[:at]
	start := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '<' || c == '>' || c == '&':
			b = append(append(b, src[start:i]...), '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			b = append(append(b, src[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
			start = i + 3
		}
	}
	return append(b, src[start:]...), true
}

// needsHTMLEscape reports whether compact JSON holds <, >, & or the
// first byte of U+2028 or U+2029, which json.Marshal escapes.
func needsHTMLEscape(src []byte) bool {
	for _, c := range src {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return true
		}
	}
	return false
}

// maxCompactDepth bounds the nesting compacter reads; a deeper value goes
// to json.Compact.
const maxCompactDepth = 256

// compacter appends src to dst without its insignificant spaces, as
// json.Compact does, when src is one JSON value (the grammar json.Compact
// takes: strings are not checked for UTF-8) nested at most
// maxCompactDepth deep: a tool call's input, on every tool event, without
// json.Compact's state machine. Its methods report false for anything
// else.
type compacter struct {
	src   []byte
	i     int
	dst   []byte
	depth int
}

func (c *compacter) ws() {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// end reports whether only spaces follow.
func (c *compacter) end() bool {
	c.ws()
	return c.i == len(c.src)
}

// next is the next byte after spaces, 0 at the end.
func (c *compacter) next() byte {
	c.ws()
	if c.i >= len(c.src) {
		return 0
	}
	return c.src[c.i]
}

// value reads one value.
func (c *compacter) value() bool {
	switch c.next() {
	case '{':
		return c.container('}', func() bool {
			if c.next() != '"' || !c.str() || c.next() != ':' {
				return false
			}
			c.dst = append(c.dst, ':')
			c.i++
			return c.value()
		})
	case '[':
		return c.container(']', c.value)
	case '"':
		return c.str()
	case 't':
		return c.literal("true")
	case 'f':
		return c.literal("false")
	case 'n':
		return c.literal("null")
	default:
		return c.number()
	}
}

// container reads an object or an array (its opening byte at c.i), each
// member with member.
func (c *compacter) container(closing byte, member func() bool) bool {
	if c.depth++; c.depth > maxCompactDepth {
		return false
	}
	c.dst = append(c.dst, c.src[c.i])
	c.i++
	if c.next() == closing {
		c.dst = append(c.dst, closing)
		c.i++
		c.depth--
		return true
	}
	for {
		if !member() {
			return false
		}
		switch c.next() {
		case ',':
			c.dst = append(c.dst, ',')
			c.i++
		case closing:
			c.dst = append(c.dst, closing)
			c.i++
			c.depth--
			return true
		default:
			return false
		}
	}
}

// str reads a string (its quote at c.i), copied as it is.
func (c *compacter) str() bool {
	start := c.i
	for i := c.i + 1; i < len(c.src); i++ {
		switch ch := c.src[i]; {
		case ch == '"':
			c.i = i + 1
			c.dst = append(c.dst, c.src[start:c.i]...)
			return true
		case ch < 0x20:
			return false
		case ch == '\\':
			if i+1 >= len(c.src) {
				return false
			}
			switch c.src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(c.src) {
					return false
				}
				for _, h := range c.src[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 5
			default:
				return false
			}
		}
	}
	return false
}

// literal reads true, false or null.
func (c *compacter) literal(word string) bool {
	if !bytes.HasPrefix(c.src[c.i:], []byte(word)) {
		return false
	}
	c.dst = append(c.dst, word...)
	c.i += len(word)
	return true
}

// number reads a number.
func (c *compacter) number() bool {
	src, i := c.src, c.i
	digits := func() bool {
		n := i
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
		return i > n
	}
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && '1' <= src[i] && src[i] <= '9':
		digits()
	default:
		return false
	}
	if i < len(src) && src[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	c.dst = append(c.dst, src[c.i:i]...)
	c.i = i
	return true
}
