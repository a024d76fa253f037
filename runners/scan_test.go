package runners

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// claudeEvents parses stream with the fast path on or off.
func claudeEvents(t testing.TB, stream []byte, fast bool) []Event {
	t.Helper()
	var c Claude
	var events []Event
	if err := c.parse(bytes.NewReader(stream), func(e Event) { events = append(events, e) }, fast); err != nil {
		t.Fatalf("parse: %v", err)
	}
	return events
}

// checkFastPath fails when the fast path's events for stream are not
// exactly those of encoding/json.
func checkFastPath(t testing.TB, stream []byte) {
	t.Helper()
	slow, fast := claudeEvents(t, stream, false), claudeEvents(t, stream, true)
	if !reflect.DeepEqual(slow, fast) {
		t.Fatalf("fast path differs on %q:\nencoding/json: %s\nfast path:     %s", stream, dumpEvents(slow), dumpEvents(fast))
	}
}

func dumpEvents(events []Event) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString(string(e.Kind))
		if e.ToolResult != nil {
			b.WriteString("(" + e.ToolResult.ToolUseID + ", " + strings.ReplaceAll(e.ToolResult.Content.String(), "\n", `\n`) + ")")
		}
		b.WriteString(" ")
	}
	return b.String()
}

// fastPathSeeds are user lines that probe where encoding/json's reading is
// easy to get wrong: escapes, surrogates, malformed UTF-8, keys that fold
// onto a field name, repeated keys, values of other types, invalid JSON.
var fastPathSeeds = []string{
	`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":false}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x\udc00\ud800\u0041"}]}}`,
	"{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\xff1\",\"content\":\"bad \xc3 utf8 \xe2\x82\"}]}}",
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"one"},{"type":"image"},{"type":"text","text":"two"},{"type":"text"},{"type":"text","text":5},"str",null,{"TYPE":"text","text":"x"}]}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"Type":"text","Text":"folded"}]}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"te\u0078t","text":"escaped type"}]}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"t\u0079pe":"text","text":"escaped key"}]}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a","text":"b"}]}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":null},{"type":"tool_result","tool_use_id":"t2","content":12.5e3,"is_error":true},{"type":"tool_result","content":{"a":[1,true,false,null]}}]}}`,
	`{"type":"user","message":{"content":"a replayed prompt"}}`,
	`{"type":"user","message":null}`,
	`{"type":"user","message":{"content":null}}`,
	`{"type":"user"}`,
	`{"type":"user","message":{"content":[{"type":"text","text":"not a result"},{"type":"tool_result","tool_use_id":"t3"}]}}`,
	`{"Type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"folded top key"}]}}`,
	`{"type":"user","MESSAGE":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"folded message"}]}}`,
	`{"type":"user","message":{"Content":[{"type":"tool_result","tool_use_id":"t1","content":"folded content"}]}}`,
	`{"type":"user","message":{"content":[{"TYPE":"tool_result","Tool_Use_Id":"t1","IS_ERROR":true,"Content":"folded block"}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"dup","content":"dup2"}]}}`,
	`{"type":"user","type":"assistant","message":{"content":[{"type":"text","text":"dup type"}]}}`,
	`{"type":"assistant","type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"dup type"}]}}`,
	`{"type":"us\u0065r","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"escaped type"}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_re\u0073ult","tool_use_id":"t1","content":"escaped block type"}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":5,"is_error":"yes","content":"mismatched types"}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":null,"is_error":null,"content":"nulls"}]}}`,
	`{"type":"user","message":{"content":[1,"x",null,[],{"type":"tool_result","tool_use_id":"t1","content":"after junk"}]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"trailing"}]}} x`,
	"{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"nul\"}]}}\x00",
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"bad escape \x"}]}}`,
	"{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"raw\ttab\"}]}}",
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}],"extra":[01]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}],"n":[-0.5e+3,1E2,-0,tru]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}],}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"},]}}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}`,
	`{"type":"user", "message" : { "content" : [ { "type" : "tool_result" , "tool_use_id" : "t1" , "content" : [ { "type" : "text" , "text" : "spaced" } ] } ] } }`,
	"{\"type\":\"user\",\"\xc5\xbfession_id\":\"x\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"non-ASCII key\"}]}}",
	"{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":[{\"type\":\"text\",\"te\xe2\x84\xaat\":\"kelvin\"}]}]}}",
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"` + strings.Repeat("[", 300) + `"}],"deep":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}}`,
	`{"type":"assistant","message":{"id":"msg_1","model":"m","content":[{"type":"text","text":"Let me look."},{"type":"thinking","thinking":"hm"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"go test ./...","n":[1,2.5,null]}}],"usage":{"input_tokens":12,"cache_creation_input_tokens":4,"cache_read_input_tokens":3000,"output_tokens":80}}}`,
	`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"X","input":null},{"type":"tool_use","id":"t2","name":"Y","input" : "str" },{"type":"tool_use","name":"Z","input":[ 1 , 2 ]},{"type":"tool_use"}],"id":"late id","usage":null}}`,
	`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1.5,"output_tokens":1e2}}}`,
	`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}],"usage":{"input_tokens":99999999999999999999,"output_tokens":-0}}}`,
	`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}],"usage":{"Input_Tokens":1}}}`,
	`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}],"usage":{}}}`,
	`{"type":"assistant","message":{"content":[{"type":"text","text":5},{"type":"text","text":null},{"type":"TEXT","text":"upper"},{"Type":"text","text":"folded key"}]}}`,
	`{"type":"assistant","message":{"content":[{"type":"text","text":"a","text":"b"}]}}`,
	`{"type":"assistant","message":{"content":"a string"}}`,
	`{"type":"assistant","message":{"id":5,"content":[{"type":"text","text":"x"}]}}`,
	`{"type":"assistant"}`,
	`{"message":{"content":[{"type":"text","text":"message first"}]},"type":"assistant"}`,
	`{"message":{"content":[{"content":"sorted keys","is_error":true,"tool_use_id":"t1","type":"tool_result"}],"role":"user"},"session_id":"s","type":"user"}`,
	`{"message":{"content":[{"content":"a result in an assistant line","tool_use_id":"t1","type":"tool_result"},{"id":"t2","input":{},"name":"Read","type":"tool_use"}]},"type":"user"}`,
	`{"message":{"content":[{"type":"text","text":"no type"}]}}`,
	`{"message":{"content":[{"type":"text","text":"other type"}]},"type":"system"}`,
	`{"type":"system","subtype":"init","session_id":"s","model":"m"}`,
	`{"type":"system","subtype":"vcs_state_changed","kind":"commit","branch":"main","cwd":"/sandbox/work","session_id":"s"}`,
	`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"error_status":529,"error":"overloaded"}`,
	`{"type":"system","subtype":"in\u0069t","session_id":"escaped init","model":"m"}`,
	`{"type":"system","Subtype":"init","session_id":"folded subtype","model":"m"}`,
	`{"type":"system","subtype":"notice","subtype":"init","session_id":"dup subtype"}`,
	`{"subtype":"api_retry","attempt":1,"type":"system"}`,
	`{"type":"system","subtype":null}`,
	`{"type":"system","subtype":5}`,
	`{"type":"system"}`,
	`{"type":"system","subtype":"notice","message":{"content":[{"type":"text","text":"a message in a system line"}]}}`,
	`{"type":"system","subtype":"notice","message":"a string"}`,
	`{"type":"result","subtype":"success","result":"done"}` + "\n" + `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"late","content":"after the result"}]}}`,
}

// TestClaudeFastPathSeeds: on each probing line, the fast path gives the
// events encoding/json gives.
func TestClaudeFastPathSeeds(t *testing.T) {
	for _, line := range fastPathSeeds {
		checkFastPath(t, []byte(line+"\n"))
	}
}

// TestClaudeFastPathTranscripts: on every recorded claude transcript, the
// fast path gives exactly the events of encoding/json, and it does read
// the tool results of those that have any.
func TestClaudeFastPathTranscripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "transcripts", "claude-*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no claude transcripts: %v", err)
	}
	handled := 0
	for _, p := range paths {
		stream, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkFastPath(t, stream)
		for line := range bytes.Lines(stream) {
			if _, ok := claudeFastLine(bytes.TrimSpace(line), nil, func(string) bool { return false }, nil); ok {
				handled++
			}
		}
	}
	if handled == 0 {
		t.Fatal("the fast path read no line of the recorded transcripts")
	}
}

// FuzzClaudeFastPath: on any input, the fast path gives the events of
// encoding/json.
func FuzzClaudeFastPath(f *testing.F) {
	for _, line := range fastPathSeeds {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		checkFastPath(t, stream)
	})
}

// BenchmarkClaudeParse parses a stream of tool calls and their results
// (2 KB of escaped source each, one in four as an array of text blocks).
func BenchmarkClaudeParse(b *testing.B) {
	var body strings.Builder
	for i := range 40 {
		body.WriteString(strings.Repeat(`\t`, i%3) + `func f(s string) error { return fmt.Errorf(\"bad %q: %w\", s, err) } // \\path\n`)
	}
	var stream bytes.Buffer
	for i := range 1000 {
		stream.WriteString(`{"type":"assistant","session_id":"s","message":{"id":"m","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":12,"output_tokens":80}}}` + "\n")
		content := `"` + body.String() + `"`
		if i%4 == 3 {
			content = `[{"type":"text","text":` + content + `}]`
		}
		stream.WriteString(`{"type":"user","session_id":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + content + `,"is_error":false}]}}` + "\n")
	}
	for _, fast := range []bool{false, true} {
		name := "encoding-json"
		if fast {
			name = "fast"
		}
		b.Run(name, func(b *testing.B) {
			var c Claude
			b.SetBytes(int64(stream.Len()))
			for range b.N {
				if err := c.parse(bytes.NewReader(stream.Bytes()), func(Event) {}, fast); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestASCIIRun: asciiRun stops where a byte-at-a-time search does, for
// every stop byte at every offset of a word and after it.
func TestASCIIRun(t *testing.T) {
	naive := func(b []byte, i int) int {
		for ; i < len(b); i++ {
			if c := b[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
				return i
			}
		}
		return i
	}
	for c := range 256 {
		for n := range 20 {
			for at := range n {
				b := bytes.Repeat([]byte{'a'}, n)
				b[at] = byte(c)
				if at+1 < n {
					b[n-1] = 0x1f // a later stop must not hide the first
				}
				for from := range n {
					if got, want := asciiRun(b, from), naive(b, from); got != want {
						t.Fatalf("asciiRun(%q, %d) = %d, want %d", b, from, got, want)
					}
				}
			}
		}
	}
}

// Only a shell call's result text is decoded (spawn reads a test run's
// output, and nothing of other tools' results): a Read's result, most of a
// stream's bytes, is left undecoded, on both paths, while the result of a
// Bash call, or of a call the stream never showed, is decoded.
func TestOnlyShellResultsAreDecoded(t *testing.T) {
	stream := strings.Join([]string{
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"r1","name":"Read","input":{"file_path":"/x"}},{"type":"tool_use","id":"b1","name":"Bash","input":{"command":"go test ./..."}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"r1","content":"package x\n\tfunc f() {}\n"},{"type":"tool_result","tool_use_id":"b1","content":[{"type":"text","text":"ok  \tx\t0.1s"}]}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"r1","content":"a second result for r1"},{"type":"tool_result","tool_use_id":"nobody","content":"unseen call"}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","usage":{"input_tokens":1,"output_tokens":1}}`,
	}, "\n")
	checkFastPath(t, []byte(stream))
	texts := map[string][]string{}
	for _, e := range claudeEvents(t, []byte(stream), true) {
		if e.Kind == KindToolResult {
			texts[e.ToolResult.ToolUseID] = append(texts[e.ToolResult.ToolUseID], e.ToolResult.Content.String())
		}
	}
	want := map[string][]string{
		"r1":     {"", "a second result for r1"}, // once answered, r1 is a call the stream no longer knows
		"b1":     {"ok  \tx\t0.1s"},
		"nobody": {"unseen call"},
	}
	if !reflect.DeepEqual(texts, want) {
		t.Fatalf("result texts %q, want %q", texts, want)
	}
}

// strValueSeeds are JSON strings that probe the decoding of escapes,
// surrogates and malformed UTF-8, and texts that are not strings.
var strValueSeeds = []string{
	`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude00\ud800x\udc00\ud800\u0041\uDBFF\uDFFF"`,
	"\"bad \xc3 utf8 \xe2\x82 \xff\"", `"tab	raw"`, `"\x"`, `"\u12"`, `"unterminated`, `"ends in \`,
	"\"" + strings.Repeat(`func f() {\n\treturn \"x\"\n}\n`, 50) + "\"", `"é and more é"`, `x`, `"a" tail`,
}

// FuzzStrValue: on any text that starts with a JSON string, strValue
// gives what json.Unmarshal gives of that string, or fails where it
// fails, with a scratch buffer kept from one value to the next as a
// stream's lines keep it.
func FuzzStrValue(f *testing.F) {
	for _, s := range strValueSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		var scratch []byte
		for _, buf := range []*[]byte{nil, &scratch, &scratch} {
			s := jsonScanner{b: b, scratch: buf}
			got, ok := s.strValue()
			var want string
			var end int
			if ok {
				end = s.i
			} else {
				// The string's end as a scanner that only validates sees it.
				v := jsonScanner{b: b}
				if _, _, valid := v.str(); valid {
					t.Fatalf("strValue fails on %q, which str reads", b)
				}
				end = len(b)
			}
			err := json.Unmarshal(b[:end], &want)
			switch {
			case ok && err != nil:
				t.Fatalf("strValue reads %q as %q; json.Unmarshal: %v", b[:end], got, err)
			case ok && got != want:
				t.Fatalf("strValue reads %q as %q; json.Unmarshal: %q", b[:end], got, want)
			}
		}
	})
}

// TestStrValueSeeds: FuzzStrValue's checks on its seeds.
func TestStrValueSeeds(t *testing.T) {
	var scratch []byte
	for _, seed := range strValueSeeds {
		for _, buf := range []*[]byte{nil, &scratch} {
			b := []byte(seed)
			s := jsonScanner{b: b, scratch: buf}
			got, ok := s.strValue()
			var want string
			err := json.Unmarshal(b[:s.i], &want)
			if ok && (err != nil || got != want) {
				t.Fatalf("strValue reads %q as %q; json.Unmarshal: %q, %v", b[:s.i], got, want, err)
			}
			v := jsonScanner{b: b}
			if _, _, valid := v.str(); valid != ok {
				t.Fatalf("strValue of %q: %v, str: %v", b, ok, valid)
			}
		}
	}
}

// strEscapesByByte is strEscapes read a byte at a time: the end of the
// string at b[0], and what strEscapes reports of it.
func strEscapesByByte(b []byte) (end int, plain, uEscape, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return 0, false, false, false
	}
	plain = true
	for i := 1; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			return i + 1, plain, uEscape, true
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return 0, false, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r := u4(b, i)
				if r < 0 {
					return 0, false, false, false
				}
				uEscape = uEscape || r >= 0x20
				i += 6
			default:
				return 0, false, false, false
			}
		case c < 0x20:
			return 0, false, false, false
		default:
			plain = plain && c < 0x80
			i++
		}
	}
	return 0, false, false, false
}

// FuzzStrEscapes: strEscapes, which reads runs of plain bytes eight at a
// time, finds the end of a string and reports it as a byte at a time does.
func FuzzStrEscapes(f *testing.F) {
	for _, s := range strValueSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`"\\\\\\\"\\\\\\\\" tail`))
	f.Add([]byte(`"1234567\"9\u0041\\\n` + "\x80" + `"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := jsonScanner{b: b}
		raw, plain, uEscape, ok := s.strEscapes()
		end, wantPlain, wantU, wantOK := strEscapesByByte(b)
		if ok != wantOK || ok && (len(raw) != end || plain != wantPlain || uEscape != wantU) {
			t.Fatalf("strEscapes(%q) = %q %v %v %v, a byte at a time: %q %v %v %v",
				b, raw, plain, uEscape, ok, b[:end], wantPlain, wantU, wantOK)
		}
	})
}
