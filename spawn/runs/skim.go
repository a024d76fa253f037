package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// A record is several KB of JSON, mostly what the agents and reviewers
// said. Decoding a whole 8 KB record with encoding/json takes about 150 µs
// on a small machine: 150 ms to list a thousand runs. Listing needs a dozen
// members, so the scanner below walks the record's structure (strings,
// brackets, commas) without decoding what it skips, and Summary.set decodes
// the members a Summary holds: about 8 times faster
// (BenchmarkDecodeRecord); TestSummaryIsWhatTheWholeRecordSays checks it
// against encoding/json.

var errSkim = errors.New("malformed JSON")

// scanner walks JSON in one pass, decoding nothing it is not asked for.
// It checks the structure it walks (objects of "key": value members,
// arrays, balanced brackets, terminated strings), not the contents of the
// strings and literals it skips.
type scanner struct {
	data []byte
	i    int // the offset of the next byte to read
}

// object reads the object at the cursor. For each member it calls member
// with the key and the cursor on the value, which member must consume
// (skip, raw, object or array). The key is only valid during the call.
func (s *scanner) object(member func(key []byte) error) error {
	if !s.next('{') {
		return s.errorf("expected an object")
	}
	if s.next('}') {
		return nil
	}
	for {
		s.space()
		start := s.i
		if err := s.skipString(); err != nil {
			return err
		}
		quoted := s.data[start:s.i]
		key := quoted[1 : len(quoted)-1]
		if bytes.IndexByte(quoted, '\\') >= 0 {
			var unquoted string
			if err := json.Unmarshal(quoted, &unquoted); err != nil {
				return fmt.Errorf("%w: %w", errSkim, err)
			}
			key = []byte(unquoted)
		}
		if !s.next(':') {
			return s.errorf("expected ':'")
		}
		s.space()
		if err := member(key); err != nil {
			return err
		}
		if s.next('}') {
			return nil
		}
		if !s.next(',') {
			return s.errorf("expected ',' or '}'")
		}
	}
}

// array reads the array at the cursor, calling elem with the cursor on
// each element, which elem must consume.
func (s *scanner) array(elem func() error) error {
	if !s.next('[') {
		return s.errorf("expected an array")
	}
	if s.next(']') {
		return nil
	}
	for {
		s.space()
		if err := elem(); err != nil {
			return err
		}
		if s.next(']') {
			return nil
		}
		if !s.next(',') {
			return s.errorf("expected ',' or ']'")
		}
	}
}

// raw returns the value at the cursor as it is written, and moves past it.
func (s *scanner) raw() ([]byte, error) {
	s.space()
	start := s.i
	if err := s.skip(); err != nil {
		return nil, err
	}
	return s.data[start:s.i], nil
}

// end checks that nothing but space follows the cursor.
func (s *scanner) end() error {
	if s.space(); s.i != len(s.data) {
		return s.errorf("data after the value")
	}
	return nil
}

// next moves past c, after space, and reports whether it was there.
func (s *scanner) next(c byte) bool {
	if s.space(); s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) space() {
	for s.i < len(s.data) && isSpace[s.data[s.i]] {
		s.i++
	}
}

func (s *scanner) errorf(what string) error {
	if s.i >= len(s.data) {
		return fmt.Errorf("%w: %s, found the end", errSkim, what)
	}
	return fmt.Errorf("%w: %s at offset %d, found %q", errSkim, what, s.i, s.data[s.i])
}

// skip moves past the value at the cursor.
func (s *scanner) skip() error {
	s.space()
	if s.i >= len(s.data) {
		return s.errorf("expected a value")
	}
	switch s.data[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		return s.skipNested()
	}
	start := s.i
	for s.i < len(s.data) && !ends[s.data[s.i]] {
		s.i++
	}
	if s.i == start {
		return s.errorf("expected a value")
	}
	return nil
}

// skipString moves past the string at the cursor.
func (s *scanner) skipString() error {
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return s.errorf("expected a string")
	}
	start := s.i
	j := s.i + 1
	for {
		k := bytes.IndexByte(s.data[j:], '"')
		if k < 0 {
			return fmt.Errorf("%w: unterminated string at offset %d", errSkim, start)
		}
		j += k
		backslashes := 0
		for p := j - 1; p > start && s.data[p] == '\\'; p-- {
			backslashes++
		}
		j++
		if backslashes%2 == 0 {
			s.i = j
			return nil
		}
	}
}

// skipNested moves past the object or array at the cursor.
func (s *scanner) skipNested() error {
	var stack []byte // the closing brackets expected
	for s.i < len(s.data) {
		switch c := s.data[s.i]; c {
		case '"':
			if err := s.skipString(); err != nil {
				return err
			}
			continue
		case '{', '[':
			stack = append(stack, c+2) // '{'+2 == '}', '['+2 == ']'
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return s.errorf("unbalanced brackets")
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				s.i++
				return nil
			}
		}
		s.i++
		for s.i < len(s.data) && !structural[s.data[s.i]] {
			s.i++
		}
	}
	return s.errorf("unbalanced brackets")
}

// Byte classes, as tables: the loops above run over every byte of a record.
var isSpace, ends, structural [256]bool

func init() {
	for _, c := range []byte(" \t\r\n") {
		isSpace[c] = true
		ends[c] = true
	}
	for _, c := range []byte(",:]}\"{[") {
		ends[c] = true
	}
	for _, c := range []byte("\"{}[]") {
		structural[c] = true
	}
}

// decodeSummary reads a Summary from a record.json in one pass, decoding
// only the members a Summary holds.
func decodeSummary(data []byte) (*Summary, error) {
	var sum Summary
	s := &scanner{data: data}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "usage":
			return s.object(func(key []byte) error {
				if string(key) != "cost_usd" {
					return s.skip()
				}
				v, err := s.raw()
				if err != nil {
					return err
				}
				if sum.CostUSD, err = strconv.ParseFloat(string(v), 64); err != nil {
					return fmt.Errorf("usage.cost_usd: %w", err)
				}
				return nil
			})
		case "review_feedback":
			return s.array(func() error {
				return s.object(func(key []byte) error {
					if string(key) != "iteration" {
						return s.skip()
					}
					v, err := s.raw()
					if err != nil {
						return err
					}
					n, err := strconv.Atoi(string(v))
					if err != nil {
						return fmt.Errorf("review_feedback.iteration: %w", err)
					}
					sum.Rounds = max(sum.Rounds, n)
					return nil
				})
			})
		}
		v, err := s.raw()
		if err != nil {
			return err
		}
		if err := sum.set(string(key), v); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return nil, err
	}
	return &sum, nil
}

// set decodes the record member key, raw, into the summary; it ignores
// members a Summary does not hold. It decodes as encoding/json would, and
// faster: without reflection, and with no copy of a string that needs no
// unescaping.
func (sum *Summary) set(key string, raw []byte) error {
	null := string(raw) == "null"
	switch key {
	case "id":
		return decodeString(raw, &sum.ID)
	case "task":
		return decodeString(raw, &sum.Task)
	case "mode":
		return decodeString(raw, &sum.Mode)
	case "status":
		return decodeString(raw, &sum.Status)
	case "verdict":
		return decodeString(raw, &sum.Verdict)
	case "branch":
		return decodeString(raw, &sum.Branch)
	case "exit_code":
		return json.Unmarshal(raw, &sum.ExitCode)
	case "started_at":
		return sum.StartedAt.UnmarshalJSON(raw)
	case "finished_at":
		if null {
			sum.FinishedAt = nil
			return nil
		}
		sum.FinishedAt = new(time.Time)
		return sum.FinishedAt.UnmarshalJSON(raw)
	case "pr_url":
		if null {
			sum.PRURL = nil
			return nil
		}
		sum.PRURL = new(string)
		return decodeString(raw, sum.PRURL)
	case "error":
		return json.Unmarshal(raw, &sum.Error)
	}
	return nil
}

// decodeString decodes a JSON string into dst as encoding/json would,
// taking the bytes as they are when they need no unescaping.
func decodeString[T ~string](raw []byte, dst *T) error {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		body := raw[1 : len(raw)-1]
		plain := utf8.Valid(body)
		for _, c := range body {
			if c < 0x20 || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain {
			*dst = T(body)
			return nil
		}
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	*dst = T(v)
	return nil
}
