package runners

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// readerBufferSize is the initial buffer of the line reader. Longer lines are
// still read whole: bufio.Reader.ReadBytes grows its result as needed.
const readerBufferSize = 64 << 10

// readJSONLines calls fn with every line of r that looks like a JSON object,
// without its line ending, until r is exhausted. A last line without a
// trailing newline is still passed on. Lines are not length-limited: one tool
// result can be many megabytes. The line fn gets is valid only during the
// call (it is the reader's buffer, or one reused for long lines): fn must
// copy what it keeps. The error is r's, wrapped; io.EOF is not an error.
func readJSONLines(r io.Reader, fn func(line []byte)) error {
	br := bufio.NewReaderSize(r, readerBufferSize)
	var long []byte // a line longer than the reader's buffer, reused
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] == '{' {
			fn(trimmed)
		}
		if cap(long) > 4*readerBufferSize {
			long = nil // a rare huge line: its buffer is not kept
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("runners: reading agent output: %w", err)
		}
	}
}

// decode unmarshals line into v. A field of an unexpected JSON type does not
// spoil the rest of the line: encoding/json keeps decoding after a type
// mismatch, so such a line still counts as decoded. It reports false only for
// a line that is not JSON at all.
func decode(line []byte, v any) bool {
	err := json.Unmarshal(line, v)
	if err == nil {
		return true
	}
	var typeErr *json.UnmarshalTypeError
	return errors.As(err, &typeErr)
}

// rawString returns raw as a string when it is a JSON string, its JSON text
// otherwise, and "" for an absent value or null.
func rawString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// joinRules joins tool rules into the single comma-separated argument both
// CLIs accept, so that a variadic flag has exactly one value to take. A rule
// that is empty, starts with "-" (it would be read as a flag) or contains a
// comma or a line break (gemini would split it; claude would keep a comma
// inside parentheses as part of the rule) is an error.
func joinRules(flag string, rules ...[]string) (string, error) {
	var all []string
	for _, list := range rules {
		for _, rule := range list {
			rule = strings.TrimSpace(rule)
			switch {
			case rule == "":
				return "", fmt.Errorf("runners: %s: empty tool rule", flag)
			case strings.HasPrefix(rule, "-"):
				return "", fmt.Errorf("runners: %s: tool rule %q starts with '-'", flag, rule)
			case strings.ContainsAny(rule, ",\r\n"):
				return "", fmt.Errorf("runners: %s: tool rule %q contains a comma or a line break", flag, rule)
			}
			all = append(all, rule)
		}
	}
	return strings.Join(all, ","), nil
}

// maxSessionText is how much of an agent's text a Result keeps: a review
// answer of a few MiB stays whole.
const maxSessionText = 4 << 20

// sessionText is an agent's text over a session, as a Result's Text: the
// chunks of a model turn together, a blank line between turns, and at most
// the last maxSessionText bytes of it, so that a long session's memory
// stays flat (its events carried every chunk as it came).
type sessionText struct {
	b    []byte
	turn int  // the model turn the text so far ends in
	cut  bool // the text's start was dropped
}

// add appends a chunk of model turn turn.
func (t *sessionText) add(turn int, chunk string) {
	if len(t.b) > 0 && t.turn != turn {
		t.b = append(t.b, "\n\n"...)
	}
	t.b, t.turn = append(t.b, chunk...), turn
	if len(t.b) > 2*maxSessionText {
		t.b, t.cut = append(t.b[:0], tail(t.b, maxSessionText)...), true
	}
}

func (t *sessionText) String() string {
	if !t.cut && len(t.b) <= maxSessionText {
		return string(t.b)
	}
	return "[spawn: the start of the agent's text is cut here]\n" + string(tail(t.b, maxSessionText))
}

// tail is the last n bytes of b at most, starting on a UTF-8 character.
func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[len(b)-n:]
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
