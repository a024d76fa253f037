package runners

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// The fast paths of Codex.Parse and Gemini.Parse. A line of their streams
// is read into the struct encoding/json would decode it into (codexLine,
// geminiLine), in one pass over its bytes, and the stream's own code
// makes the events from that struct as before: the two paths differ only
// in how the struct is filled. The rule is claudeFastLine's (see scan.go):
// the fast path fills it only when it is sure to fill it as encoding/json
// does, and declines anything unusual (a key that differs from a field
// name only in case, or holds an escape or a byte outside ASCII; a
// repeated key; a value of an unexpected type; a count that is not an
// integer; invalid JSON), which then goes to encoding/json.
// TestCodexFastPath*, TestGeminiFastPath* and their fuzz targets hold the
// two paths to the same events.

// codexFields are codexLine's JSON names, in the order codexFastLine
// numbers them.
var codexFields = [...]string{"type", "thread_id", "item", "message", "usage", "error"}

// codexItemFields are codexItem's JSON names.
var codexItemFields = [...]string{"id", "type", "text", "command", "aggregated_output", "exit_code", "status",
	"changes", "server", "tool", "arguments", "result", "message", "query"}

// codexFastLine reads a line of `codex exec --json` into l, which must be
// the zero value, as decode does, and reports whether it did; false leaves
// l partly filled, for the caller to reset. It reads every line but
// turn.completed and turn.failed (usage, error), which are few. The
// caller's buffers are reused from line to line: item is where l.Item
// points when the line has an item (it is zeroed first), scratch is the
// buffer strings are decoded in (see jsonScanner).
func codexFastLine(line []byte, l *codexLine, item *codexItem, scratch *[]byte) bool {
	s := jsonScanner{b: line, scratch: scratch}
	ok := s.fields(codexFields[:], func(i int) bool {
		switch i {
		case 0:
			return s.knownOrNull(&l.Type, "item.started", "item.completed", "item.updated", "turn.started", "turn.completed")
		case 1:
			return s.stringOrNull(&l.ThreadID)
		case 2:
			switch s.peek() {
			case 'n':
				return s.literal("null")
			case '{':
				*item = codexItem{}
				l.Item = item
				return s.codexItem(item)
			}
			return false
		case 3:
			return s.stringOrNull(&l.Message)
		default:
			return false // usage, error: encoding/json's
		}
	})
	s.ws()
	return ok && s.i == len(s.b)
}

// codexItem reads an item object into it.
func (s *jsonScanner) codexItem(it *codexItem) bool {
	return s.fields(codexItemFields[:], func(i int) bool {
		switch i {
		case 1:
			return s.knownOrNull(&it.Type, CodexToolCommand, CodexToolFileChange, "agent_message", "reasoning")
		case 4:
			return s.keepString(&it.AggregatedOutput)
		case 5:
			return s.intPtr(&it.ExitCode)
		case 6:
			return s.knownOrNull(&it.Status, "in_progress", "completed", "failed")
		case 7:
			return s.raw(&it.Changes)
		case 10:
			return s.raw(&it.Arguments)
		case 11:
			return s.raw(&it.Result)
		}
		return s.stringOrNull([...]*string{0: &it.ID, 2: &it.Text, 3: &it.Command,
			8: &it.Server, 9: &it.Tool, 12: &it.Message, 13: &it.Query}[i])
	})
}

// geminiFields are geminiLine's JSON names.
var geminiFields = [...]string{"type", "session_id", "model", "role", "content", "tool_name", "tool_id",
	"parameters", "status", "output", "error", "severity", "message", "stats"}

// geminiErrorFields are geminiError's JSON names.
var geminiErrorFields = [...]string{"type", "message", "code"}

// geminiStatsFields are the JSON names of geminiLine's Stats.
var geminiStatsFields = [...]string{"input_tokens", "cached", "output_tokens"}

// geminiFastLine reads a line of gemini's stream-json into l, which must
// be the zero value, as decode does, and reports whether it did; false
// leaves l partly filled, for the caller to reset. scratch is as
// codexFastLine's.
func geminiFastLine(line []byte, l *geminiLine, scratch *[]byte) bool {
	s := jsonScanner{b: line, scratch: scratch}
	ok := s.fields(geminiFields[:], func(i int) bool {
		switch i {
		case 0:
			return s.knownOrNull(&l.Type, "message", "tool_use", "tool_result", "init", "result")
		case 3:
			return s.knownOrNull(&l.Role, "assistant", "user")
		case 7:
			return s.raw(&l.Parameters)
		case 8:
			return s.knownOrNull(&l.Status, "success", "error")
		case 9:
			return s.keepString(&l.Output)
		case 10:
			switch s.peek() {
			case 'n':
				return s.literal("null")
			case '{':
				l.Error = &geminiError{}
				return s.geminiError(l.Error)
			}
			return false
		case 13:
			switch s.peek() {
			case 'n':
				return s.literal("null")
			case '{':
				l.Stats = &geminiStats{}
				return s.geminiStats(l.Stats)
			}
			return false
		}
		return s.stringOrNull([...]*string{1: &l.SessionID, 2: &l.Model, 4: &l.Content,
			5: &l.ToolName, 6: &l.ToolID, 11: &l.Severity, 12: &l.Message}[i])
	})
	s.ws()
	return ok && s.i == len(s.b)
}

// geminiError reads the error object of a tool_result or result line.
func (s *jsonScanner) geminiError(e *geminiError) bool {
	return s.fields(geminiErrorFields[:], func(i int) bool {
		switch {
		case i == 0:
			return s.stringOrNull(&e.Type)
		case i == 1:
			return s.stringOrNull(&e.Message)
		default:
			return s.raw(&e.Code)
		}
	})
}

// geminiStats reads the stats of a result line.
func (s *jsonScanner) geminiStats(st *geminiStats) bool {
	return s.fields(geminiStatsFields[:], func(i int) bool {
		return s.int64OrNull([...]*int64{&st.InputTokens, &st.Cached, &st.OutputTokens}[i])
	})
}

// knownOrNull is stringOrNull for a field whose value is usually one of
// known (a line's type, a status): a value that is one, without escapes,
// is that string, not a new one (a stream holds thousands of lines).
func (s *jsonScanner) knownOrNull(dst *string, known ...string) bool {
	if s.peek() == '"' {
		start := s.i
		if raw, plain, ok := s.str(); ok && plain {
			for _, k := range known {
				if string(raw[1:len(raw)-1]) == k {
					*dst = k
					return true
				}
			}
		}
		s.i = start
	}
	return s.stringOrNull(dst)
}

// raw reads any value into *dst as a json.RawMessage takes it: its bytes,
// copied.
func (s *jsonScanner) raw(dst *json.RawMessage) bool {
	start := s.i
	if !s.skip() {
		return false
	}
	*dst = append(json.RawMessage(nil), s.b[start:s.i]...)
	return true
}

// integer reads a JSON number that is an integer an int64 holds.
func (s *jsonScanner) integer() (int64, bool) {
	start := s.i
	if !s.number() {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return n, err == nil
}

// int64OrNull reads an integer into *dst, or null, which leaves it as it
// is; any other value declines.
func (s *jsonScanner) int64OrNull(dst *int64) bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	n, ok := s.integer()
	*dst = n
	return ok
}

// intPtr reads an integer into a new *dst, or null, which leaves *dst nil
// (*dst must be nil); any other value declines.
func (s *jsonScanner) intPtr(dst **int) bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	n, ok := s.integer()
	if !ok || int64(int(n)) != n {
		return false
	}
	v := int(n)
	*dst = &v
	return true
}

// toolInputFields are toolInput's JSON names.
var toolInputFields = [...]string{"command", "file_path", "notebook_path", "path", "changes"}

// toolInputOf decodes a tool call's input as json.Unmarshal does; ok is
// false when Unmarshal fails. Every tool result of a session asks (see
// ToolUse.Command): the usual input is read by a fast path.
func toolInputOf(raw json.RawMessage) (in toolInput, ok bool) {
	if fastToolInput(raw, &in) {
		return in, true
	}
	in = toolInput{}
	return in, json.Unmarshal(raw, &in) == nil
}

// fastToolInput reads raw into in, which must be the zero value, and
// reports whether it did as json.Unmarshal does without error; false
// leaves in partly filled.
func fastToolInput(raw []byte, in *toolInput) bool {
	s := jsonScanner{b: raw}
	ok := s.fields(toolInputFields[:], func(i int) bool {
		switch {
		case i < 4:
			return s.stringOrNull([...]*string{&in.Command, &in.FilePath, &in.NotebookPath, &in.Path}[i])
		}
		switch s.peek() {
		case 'n':
			return s.literal("null")
		case '[':
		default:
			return false
		}
		// An empty array is an empty slice, not nil, as encoding/json has it.
		in.Changes = []toolChange{}
		return s.array(func() bool {
			var c toolChange
			switch s.peek() {
			case 'n':
				if !s.literal("null") {
					return false
				}
			case '{':
				if !s.fields([]string{"path"}, func(i int) bool {
					return s.stringOrNull(&c.Path)
				}) {
					return false
				}
			default:
				return false
			}
			in.Changes = append(in.Changes, c)
			return true
		})
	})
	s.ws()
	return ok && s.i == len(s.b)
}

// summaryKeys are the keys of a tool call's input InputSummary tells, in
// the order it looks for them.
var summaryKeys = [...]string{"command", "file_path", "path", "pattern", "url", "query"}

// InputSummary is the telling part of a tool call's input (a JSON
// object), for a person: the value of the first of its command, file_path,
// path, pattern, url and query that is a string (isValue true); else the
// paths of the changes of several files it lists, joined by spaces (as
// codex's file_change has them); else "". An input that is not JSON has
// none. The narration asks for every tool call: the usual input is read by
// a fast path.
func InputSummary(input json.RawMessage) (summary string, isValue bool) {
	if summary, isValue, ok := fastInputSummary(input); ok {
		return summary, isValue
	}
	return inputSummary(input)
}

// inputSummary is InputSummary through a map[string]any, the reference
// of the fast path.
func inputSummary(input json.RawMessage) (string, bool) {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return "", false
	}
	for _, k := range summaryKeys {
		if v, ok := m[k].(string); ok {
			return v, true
		}
	}
	var paths []string
	if changes, ok := m["changes"].([]any); ok {
		for _, c := range changes {
			change, _ := c.(map[string]any) // not an object: no path
			if p, ok := change["path"].(string); ok {
				paths = append(paths, p)
			}
		}
	}
	return strings.Join(paths, " "), false
}

// fastInputSummary is InputSummary when ok; ok is false for an input it
// does not read as inputSummary does (one with a key that holds an
// escape, or that is not JSON). A map holds the last value of a key.
func fastInputSummary(input []byte) (summary string, isValue, ok bool) {
	s := jsonScanner{b: input, floats: true}
	type value struct{ start, end int } // where a key's last value is; end 0: none
	var values [len(summaryKeys)]value
	var changes value
	if s.peek() == 'n' {
		ok = s.literal("null")
		s.ws()
		return "", false, ok && s.i == len(s.b)
	}
	ok = s.object(func(key []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			return false // an escape may spell a key
		}
		v := &changes
		if i := slices.Index(summaryKeys[:], string(key)); i >= 0 {
			v = &values[i]
		} else if string(key) != "changes" {
			return s.skip()
		}
		v.start = s.i
		if !s.skip() {
			return false
		}
		v.end = s.i
		return true
	})
	if s.ws(); !ok || s.i != len(s.b) {
		return "", false, false
	}
	for _, v := range values {
		if v.end > 0 && input[v.start] == '"' {
			sub := jsonScanner{b: input[:v.end], i: v.start}
			summary, ok := sub.strValue()
			return summary, true, ok
		}
	}
	if changes.end == 0 || input[changes.start] != '[' {
		return "", false, true
	}
	sub := jsonScanner{b: input[:changes.end], i: changes.start, floats: true}
	var paths []string
	ok = sub.array(func() bool {
		if sub.peek() != '{' {
			return sub.skip()
		}
		var path string
		isString := false
		ok := sub.object(func(key []byte) bool {
			switch {
			case bytes.IndexByte(key, '\\') >= 0:
				return false
			case string(key) != "path":
				return sub.skip()
			case sub.peek() == '"':
				var ok bool
				path, ok = sub.strValue()
				isString = true
				return ok
			default:
				isString = false
				return sub.skip()
			}
		})
		if isString {
			paths = append(paths, path)
		}
		return ok
	})
	return strings.Join(paths, " "), false, ok
}

// fastCodexChanges is codexChanges when ok: for a list it reads as
// json.Unmarshal does without error (see the rule at the top).
func fastCodexChanges(raw []byte) (list string, ok bool) {
	s := jsonScanner{b: raw}
	var lines []string
	if s.peek() == 'n' {
		ok = s.literal("null")
	} else {
		ok = s.array(func() bool {
			var path, kind string
			switch s.peek() {
			case 'n':
				if !s.literal("null") {
					return false
				}
			case '{':
				if !s.fields([]string{"path", "kind"}, func(i int) bool {
					switch {
					case i == 0:
						return s.stringOrNull(&path)
					default:
						return s.stringOrNull(&kind)
					}
				}) {
					return false
				}
			default:
				return false
			}
			lines = append(lines, kind+" "+path)
			return true
		})
	}
	s.ws()
	if !ok || s.i != len(s.b) {
		return "", false
	}
	return strings.Join(lines, "\n"), true
}
