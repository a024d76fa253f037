package runners

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// parseWith is a stream parser with its fast path on or off.
type parseWith func(r io.Reader, emit func(Event), fast bool) error

// checkSameEvents fails when parse's events for stream with the fast path
// are not exactly those without it.
func checkSameEvents(t testing.TB, parse parseWith, stream []byte) {
	t.Helper()
	events := func(fast bool) []Event {
		var out []Event
		if err := parse(bytes.NewReader(stream), func(e Event) { out = append(out, e) }, fast); err != nil {
			t.Fatalf("parse: %v", err)
		}
		return out
	}
	slow, fast := events(false), events(true)
	if !reflect.DeepEqual(slow, fast) {
		t.Fatalf("fast path differs on %q:\nencoding/json: %+v\nfast path:     %+v", stream, dumpAll(slow), dumpAll(fast))
	}
}

func dumpAll(events []Event) []string {
	var out []string
	for _, e := range events {
		s := string(e.Kind) + " " + e.Message + " " + e.Text
		switch {
		case e.Init != nil:
			s += " " + e.Init.SessionID + " " + e.Init.Model
		case e.ToolUse != nil:
			s += " " + e.ToolUse.ID + " " + e.ToolUse.Name + " " + string(e.ToolUse.Input) + " " + string(e.ToolUse.Kind)
		case e.ToolResult != nil:
			s += " " + e.ToolResult.ToolUseID + " " + e.ToolResult.Content.String() + " " + e.ToolResult.ErrorType
		case e.Result != nil:
			s += " " + e.Result.Subtype + " " + e.Result.Text + " " + e.Result.ErrorMessage
		}
		out = append(out, s)
	}
	return out
}

// checkTranscripts runs checkSameEvents over every recorded transcript
// whose name starts with prefix, and checks that the fast path read some
// of their lines (fastLine reports whether it reads one).
func checkTranscripts(t *testing.T, prefix string, parse parseWith, fastLine func([]byte) bool) {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "transcripts", prefix+"*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no %s transcripts: %v", prefix, err)
	}
	handled, lines := 0, 0
	for _, p := range paths {
		stream, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkSameEvents(t, parse, stream)
		for line := range bytes.Lines(stream) {
			if line = bytes.TrimSpace(line); len(line) > 0 && line[0] == '{' {
				lines++
				if fastLine(line) {
					handled++
				}
			}
		}
	}
	t.Logf("the fast path read %d of the %d lines of %d transcripts", handled, lines, len(paths))
	if handled == 0 {
		t.Fatal("the fast path read no line of the recorded transcripts")
	}
}

// probes are lines that probe where encoding/json's reading is easy to
// get wrong, in the shape of fields: %T is the line's type, %K a field
// whose value is a string, %R one that is raw JSON, %O one that is an
// object of fields %S (a string) and %N (an integer).
var probes = []string{
	`{"type":"%T","%K":"plain","%R":{"a":[1,2.5,null,true,"x"]} }`,
	`{"type":"%T","%K":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x\udc00\ud800\u0041 <&>"}`,
	"{\"type\":\"%T\",\"%K\":\"bad \xc3 utf8 \xe2\x82 \xff\"}",
	`{"type":"%T","%K":null,"%R":null,"%O":null}`,
	`{"type":"%T","%K":5}`,
	`{"type":"%T","%K":true}`,
	`{"type":"%T","%K":["x"]}`,
	`{"type":"%T","%K":{"x":1}}`,
	`{"type":"%T","%K":"a","%K":"b"}`,
	`{"TYPE":"%T","%K":"folded type"}`,
	`{"type":"%T","t\u0079pe":"escaped key"}`,
	`{"type":"%T","\u0074ype":"escaped key"}`,
	`{"type":"%T","%K":"x","unknown":[{"deep":[[[]]]}],"other":-0.5e+3}`,
	`{"type":"%T","%R":"a string"}`,
	`{"type":"%T","%R" :  [ 1 , { "a" : "b" } ] }`,
	`{"type":"%T","%R":{"html":"<b>&amp;</b>","u":"\u2028"}}`,
	`{"type":"%T","%O":{"%S":"s","%N":3}}`,
	`{"type":"%T","%O":{"%S":5,"%N":"3"}}`,
	`{"type":"%T","%O":{"%N":1.5}}`,
	`{"type":"%T","%O":{"%N":1e2}}`,
	`{"type":"%T","%O":{"%N":-0}}`,
	`{"type":"%T","%O":{"%N":99999999999999999999}}`,
	`{"type":"%T","%O":{"%N":null,"%S":null}}`,
	`{"type":"%T","%O":{"%S":"a","%S":"b"}}`,
	`{"type":"%T","%O":{},"%O":{"%S":"dup"}}`,
	`{"type":"%T","%O":"not an object"}`,
	`{"type":"%T","%O":[]}`,
	`{"type":"%T","%K":"trailing"} x`,
	"{\"type\":\"%T\",\"%K\":\"nul\"}\x00",
	`{"type":"%T","%K":"bad escape \x"}`,
	"{\"type\":\"%T\",\"%K\":\"raw\ttab\"}",
	`{"type":"%T","%K":"x",}`,
	`{"type":"%T","%K":"x"`,
	`{"type":"%T","n":[01]}`,
	`{ "type" : "%T" , "%K" : "spaced" }`,
	"{\"type\":\"%T\",\"\xc5\xbfession_id\":\"non-ASCII key\"}",
	`{"type":"%T","deep":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
	`{"%K":"type last","type":"%T"}`,
	`{"type":5,"%K":"type not a string"}`,
	`{"type":null,"%K":"type null"}`,
	`{}`,
}

// expand writes each probe with every combination of the given types and
// fields, one a line.
func expand(types, strs, raws []string, objs [][3]string) []string {
	var out []string
	for _, p := range probes {
		for _, typ := range types {
			for i := range max(len(strs), len(raws), len(objs)) {
				r := strings.NewReplacer("%T", typ, "%K", strs[i%len(strs)], "%R", raws[i%len(raws)],
					"%O", objs[i%len(objs)][0], "%S", objs[i%len(objs)][1], "%N", objs[i%len(objs)][2])
				out = append(out, r.Replace(p))
			}
		}
	}
	return out
}

// codexProbes are probes in the shape of codex's lines.
func codexProbes() []string {
	lines := expand(
		[]string{"item.started", "item.completed", "thread.started", "error", "turn.completed", "turn.failed", "other"},
		[]string{"thread_id", "message", "Thread_ID"},
		[]string{"usage", "error"},
		[][3]string{{"item", "command", "exit_code"}, {"item", "aggregated_output", "exit_code"}, {"item", "Status", "Exit_Code"}, {"usage", "x", "input_tokens"}, {"error", "message", "code"}})
	items := []string{
		`{"id":"i1","type":"command_execution","command":"go test ./...","aggregated_output":"ok\n","exit_code":0,"status":"completed"}`,
		`{"id":"i1","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}`,
		`{"id":"i1","type":"command_execution","command":"x","exit_code":null,"status":"in_progress"}`,
		`{"id":"i1","type":"command_execution","command":"x","exit_code":2.0}`,
		`{"id":"i1","type":"command_execution","command":"x","exit_code":9223372036854775808}`,
		`{"id":"i1","type":"command_execution","command":"<a&b>","exit_code":-1}`,
		`{"id":"i2","type":"file_change","changes":[{"path":"/w/a.go","kind":"add"},{"path":"b","kind":"update"}],"status":"completed"}`,
		`{"id":"i2","type":"file_change","changes":null,"status":"failed"}`,
		`{"id":"i2","type":"file_change","changes":{"not":"a list"}}`,
		`{"id":"i3","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"q":"<x>"},"result":{"content":[{"type":"text","text":"r"}]},"status":"completed"}`,
		`{"id":"i3","type":"mcp_tool_call","server":"s","tool":"t","arguments":null,"result":"text"}`,
		`{"id":"i4","type":"web_search","query":"go generics"}`,
		`{"id":"i5","type":"agent_message","text":"Done."}`,
		`{"id":"i6","type":"error","message":"Model metadata for x not found"}`,
		`{"id":"i7","type":"reasoning","text":"hm"}`,
		`{"ID":"i1","type":"command_execution","command":"folded id"}`,
		`{"id":"i1","type":"command_execution","command":"a","command":"dup"}`,
		`{"id":"i1","Type":"command_execution","command":"folded"}`,
		`{"id":"i1","type":"command_execution","aggregated_output":5}`,
		`{"id":"i1","type":"command_execution","unknown":{"a":[1]},"aggregated_output":"x"}`,
	}
	for _, typ := range []string{"item.started", "item.completed", "item.updated"} {
		for _, it := range items {
			lines = append(lines, `{"type":"`+typ+`","item":`+it+`}`, `{"item":`+it+`,"type":"`+typ+`"}`)
		}
	}
	return append(lines,
		`{"type":"thread.started","thread_id":"t1"}`,
		`{"type":"error","message":"Reconnecting... 1/5"}`,
		`{"type":"turn.completed","usage":{"input_tokens":40,"cached_input_tokens":8,"output_tokens":5}}`,
		`{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}`,
	)
}

// geminiProbes are probes in the shape of gemini's lines.
func geminiProbes() []string {
	lines := expand(
		[]string{"init", "message", "tool_use", "tool_result", "error", "result", "other"},
		[]string{"session_id", "model", "role", "content", "tool_name", "tool_id", "status", "output", "severity", "message", "Content"},
		[]string{"parameters", "Parameters"},
		[][3]string{{"error", "type", "code"}, {"error", "message", "code"}, {"stats", "x", "input_tokens"}, {"stats", "x", "cached"}, {"Stats", "x", "output_tokens"}})
	return append(lines,
		`{"type":"init","timestamp":"2026-11-21T00:40:24.596Z","session_id":"s","model":"gemini-3-pro"}`,
		`{"type":"message","role":"assistant","content":"Hello","delta":true}`,
		`{"type":"message","role":"user","content":"prompt"}`,
		`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"c1","parameters":{"command":"go test ./..."}}`,
		`{"type":"tool_use","tool_name":"write_file","tool_id":"w1","parameters":{"file_path":"a","content":"x"}}`,
		`{"type":"tool_result","tool_id":"c1","status":"success","output":"ok"}`,
		`{"type":"tool_result","tool_id":"c1","status":"error","output":"","error":{"type":"policy_violation","message":"denied"}}`,
		`{"type":"tool_result","tool_id":"c1","status":"error","error":{"type":"x","message":"m","code":503}}`,
		`{"type":"tool_result","tool_id":"c1","status":"error","error":{"type":"x","message":"m","code":"503","code":1}}`,
		`{"type":"error","severity":"warning","message":"Loop detected"}`,
		`{"type":"result","status":"success","stats":{"input_tokens":10,"cached":2,"output_tokens":3,"duration_ms":5}}`,
		`{"type":"result","status":"error","error":{"type":"api","message":"[API Error: {\"error\":{\"code\":500}}]"}}`,
	)
}

// TestCodexFastPathProbes: on each probing line, and on all of them as one
// stream, the fast path gives the events encoding/json gives.
func TestCodexFastPathProbes(t *testing.T) {
	lines := codexProbes()
	for _, line := range lines {
		checkSameEvents(t, (&Codex{Model: "m"}).parse, []byte(line+"\n"))
	}
	checkSameEvents(t, (&Codex{Model: "m"}).parse, []byte(strings.Join(lines, "\n")))
}

// TestGeminiFastPathProbes: as TestCodexFastPathProbes, for gemini.
func TestGeminiFastPathProbes(t *testing.T) {
	lines := geminiProbes()
	for _, line := range lines {
		checkSameEvents(t, (&Gemini{}).parse, []byte(line+"\n"))
	}
	checkSameEvents(t, (&Gemini{}).parse, []byte(strings.Join(lines, "\n")))
}

// TestCodexFastPathTranscripts: on every recorded codex transcript, the
// fast path gives exactly the events of encoding/json, and it reads most
// of their lines.
func TestCodexFastPathTranscripts(t *testing.T) {
	checkTranscripts(t, "codex-", (&Codex{Model: "m"}).parse, func(b []byte) bool { return codexFastLine(b, &codexLine{}, &codexItem{}, nil) })
}

// TestGeminiFastPathTranscripts: as TestCodexFastPathTranscripts, for
// gemini.
func TestGeminiFastPathTranscripts(t *testing.T) {
	checkTranscripts(t, "gemini-", (&Gemini{}).parse, func(b []byte) bool { return geminiFastLine(b, &geminiLine{}, nil) })
}

// FuzzCodexFastPath: on any input, codex's fast path gives the events of
// encoding/json. Seeds: the probes and the recorded codex transcripts.
func FuzzCodexFastPath(f *testing.F) {
	for _, line := range codexProbes() {
		f.Add([]byte(line))
	}
	addTranscripts(f, "codex-")
	f.Fuzz(func(t *testing.T, stream []byte) {
		checkSameEvents(t, (&Codex{Model: "m"}).parse, stream)
	})
}

// FuzzGeminiFastPath: on any input, gemini's fast path gives the events
// of encoding/json. Seeds: the probes and the recorded gemini transcripts.
func FuzzGeminiFastPath(f *testing.F) {
	for _, line := range geminiProbes() {
		f.Add([]byte(line))
	}
	addTranscripts(f, "gemini-")
	f.Fuzz(func(t *testing.T, stream []byte) {
		checkSameEvents(t, (&Gemini{}).parse, stream)
	})
}

// BenchmarkParse parses a stream of each CLI grown from its recorded
// transcript with 2 KB tool outputs, with and without the fast path.
func BenchmarkParse(b *testing.B) {
	var out strings.Builder
	for i := range 40 {
		out.WriteString(strings.Repeat("\t", i%3) + "func f(s string) error { return fmt.Errorf(\"bad %q: %w\", s, err) } // \\path\n")
	}
	body := jsonQuote(b, out.String())
	streams := map[string]struct {
		parse parseWith
		turn  string
	}{
		"codex": {(&Codex{Model: "m"}).parse, `{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Let me look."}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'go test ./...'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'go test ./...'","aggregated_output":` + body + `,"exit_code":0,"status":"completed"}}
`},
		"gemini": {(&Gemini{}).parse, `{"type":"message","timestamp":"2026-11-21T00:40:24.788Z","role":"assistant","content":"Let me look.","delta":true}
{"type":"tool_use","timestamp":"2026-11-21T00:40:24.717Z","tool_name":"run_shell_command","tool_id":"run_shell_command_1","parameters":{"command":"go test ./..."}}
{"type":"tool_result","timestamp":"2026-11-21T00:40:24.770Z","tool_id":"run_shell_command_1","status":"success","output":` + body + `}
`},
	}
	for _, name := range []string{"codex", "gemini"} {
		s := streams[name]
		stream := []byte(strings.Repeat(s.turn, 1000))
		for _, fast := range []bool{false, true} {
			path := "encoding-json"
			if fast {
				path = "fast"
			}
			b.Run(name+"/"+path, func(b *testing.B) {
				b.SetBytes(int64(len(stream)))
				for range b.N {
					if err := s.parse(bytes.NewReader(stream), func(Event) {}, fast); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// jsonQuote is s as a JSON string.
func jsonQuote(b *testing.B, s string) string {
	b.Helper()
	var buf strings.Builder
	for _, r := range s {
		switch r {
		case '"', '\\':
			buf.WriteString(`\` + string(r))
		case '\n':
			buf.WriteString(`\n`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			buf.WriteRune(r)
		}
	}
	return `"` + buf.String() + `"`
}

// toolInputSeeds are tool inputs of every CLI's shape, and inputs that
// probe encoding/json's reading.
var toolInputSeeds = []string{
	`{"command":"go test ./...","description":"Run the tests"}`,
	`{"file_path":"/w/a.go","content":"package a\n"}`,
	`{"notebook_path":"n.ipynb","new_source":"x"}`,
	`{"path":"a.go"}`,
	`{"changes":[{"path":"/w/a.go","kind":"add"},{"path":"b","kind":"update"}]}`,
	`{"changes":[]}`, `{"changes":null}`, `{"changes":[null,{"path":null},{}]}`, `{"changes":[{"path":5}]}`, `{"changes":["a"]}`,
	`{"changes":[{"Path":"folded"}]}`, `{"changes":[{"path":"a","path":"b"}]}`, `{"changes":{"path":"a"}}`,
	`{"command":null}`, `{"command":5}`, `{"command":"a","command":"b"}`, `{"Command":"folded"}`, `{"comm\u0061nd":"escaped"}`,
	`{"command":"a\"b\\c\u00e9\ud800"}`, "{\"command\":\"bad \xff\"}", `{"command":"x","other":[1,{"a":null}]}`,
	`{}`, `[]`, `"str"`, `null`, `5`, ``, `{`, `{"command":"x"} x`, ` {"command":"spaced"} `,
}

// TestToolInputFastPath: the fast path reads a tool input only as
// json.Unmarshal reads it without error.
func TestToolInputFastPath(t *testing.T) {
	for _, raw := range toolInputSeeds {
		checkToolInput(t, []byte(raw))
	}
}

// FuzzToolInputFastPath: TestToolInputFastPath on any input.
func FuzzToolInputFastPath(f *testing.F) {
	for _, raw := range toolInputSeeds {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkToolInput(t, raw)
	})
}

func checkToolInput(t *testing.T, raw []byte) {
	t.Helper()
	var fast, slow toolInput
	err := json.Unmarshal(raw, &slow)
	if !fastToolInput(raw, &fast) {
		return
	}
	if err != nil {
		t.Fatalf("fast path read %q, which json.Unmarshal fails on: %v", raw, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast path read %q as %+v, json.Unmarshal as %+v", raw, fast, slow)
	}
}

// summarySeeds are tool inputs of every CLI's shape, and inputs that
// probe how a map[string]any reads them.
var summarySeeds = []string{
	`{"command":"go test ./...\nsecond line","description":"Run the tests"}`,
	`{"file_path":"/w/a.go","content":"package a\n"}`, `{"path":"a.go"}`, `{"pattern":"*.go","path":5}`,
	`{"url":"https://x.org","query":"q"}`, `{"query":"go generics"}`, `{"description":"no summary"}`,
	`{"changes":[{"path":"/w/a.go","kind":"add"},{"path":"b","kind":"update"}]}`,
	`{"changes":[]}`, `{"changes":null}`, `{"changes":[null,{"path":null},{},5,"x",[{"path":"nested"}]]}`,
	`{"changes":[{"path":5}]}`, `{"changes":[{"Path":"case"}]}`, `{"changes":[{"path":"a","path":"b"}]}`,
	`{"changes":[{"path":"a","path":1}]}`, `{"changes":{"path":"a"}}`, `{"changes":[{"p\u0061th":"escaped"}]}`,
	`{"command":null,"path":"p"}`, `{"command":5,"query":"q"}`, `{"command":"a","command":"b"}`, `{"command":"a","command":1}`,
	`{"Command":"case"}`, `{"comm\u0061nd":"escaped"}`, `{"command":"a\"b\\c\u00e9\ud800 <&>"}`, "{\"command\":\"bad \xff\"}",
	`{"command":"x","n":1e999}`, `{"command":"x","n":[1.5,-0,2e-400]}`, `{"changes":[{"path":"a","n":1e400}]}`,
	`{}`, `null`, ` null `, `[]`, `"str"`, `5`, ``, `{`, `{"command":"x"} x`, ` {"command":"spaced"} `,
}

// TestInputSummaryFastPath: the fast path summarizes a tool input as a
// map[string]any reads it.
func TestInputSummaryFastPath(t *testing.T) {
	for _, raw := range summarySeeds {
		checkInputSummary(t, []byte(raw))
	}
}

// FuzzInputSummaryFastPath: TestInputSummaryFastPath on any input.
func FuzzInputSummaryFastPath(f *testing.F) {
	for _, raw := range summarySeeds {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkInputSummary(t, raw)
	})
}

func checkInputSummary(t *testing.T, raw []byte) {
	t.Helper()
	summary, isValue, ok := fastInputSummary(raw)
	if !ok {
		return
	}
	if wantSummary, wantIsValue := inputSummary(raw); summary != wantSummary || isValue != wantIsValue {
		t.Fatalf("fast path summarizes %q as %q (%v), a map as %q (%v)", raw, summary, isValue, wantSummary, wantIsValue)
	}
}

// changesSeeds are codex's file_change lists, and lists that probe how
// json.Unmarshal reads them.
var changesSeeds = []string{
	`[{"path":"/w/a.go","kind":"add"},{"path":"b","kind":"update"}]`, `[]`, `null`, `[null,{}]`, `[{"path":null,"kind":null}]`,
	`[{"path":5}]`, `[5]`, `["a"]`, `[{"Path":"case"}]`, `[{"path":"a","path":"b"}]`, `[{"p\u0061th":"escaped"}]`,
	`[{"path":"a\"b\u00e9\ud800","kind":"x","move_path":null,"other":[1,{"a":2}]}]`, "[{\"path\":\"bad \xff\"}]",
	`{"path":"a"}`, `"x"`, ``, `[`, `[{"path":"a"}] x`, ` [ { "path" : "spaced" } ] `,
}

// TestCodexChangesFastPath: the fast path lists a file_change's changes
// as encoding/json reads them.
func TestCodexChangesFastPath(t *testing.T) {
	for _, raw := range changesSeeds {
		checkCodexChanges(t, []byte(raw))
	}
}

// FuzzCodexChangesFastPath: TestCodexChangesFastPath on any list.
func FuzzCodexChangesFastPath(f *testing.F) {
	for _, raw := range changesSeeds {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkCodexChanges(t, raw)
	})
}

func checkCodexChanges(t *testing.T, raw []byte) {
	t.Helper()
	if list, ok := fastCodexChanges(raw); ok {
		if want := slowCodexChanges(raw); list != want {
			t.Fatalf("fast path lists %q as %q, encoding/json as %q", raw, list, want)
		}
	}
}
