package observability

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// checkAppendJSON fails when e.AppendJSON does not give json.Marshal's
// bytes and error.
func checkAppendJSON(t *testing.T, e Event) {
	t.Helper()
	want, wantErr := json.Marshal(e)
	got, err := e.AppendJSON([]byte("prefix"))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("AppendJSON error %v, json.Marshal's %v", err, wantErr)
	}
	if err != nil {
		return
	}
	if string(got) != "prefix"+string(want) {
		t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got[len("prefix"):], want)
	}
}

// TestAppendJSONIsMarshal: agent events and others, written as
// json.Marshal writes them.
func TestAppendJSONIsMarshal(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 13, 28, 123456789, time.UTC)
	for _, e := range []Event{
		{Time: at, Run: "r1", Kind: EventAgent, Role: RoleCoder, LLM: "claude", Round: 1, RunCostUSD: 0.00042,
			Agent: &Progress{Kind: ProgressTool, Elapsed: 1500 * time.Millisecond, Turns: 3, CostUSD: 0.00042, Files: 1, Process: 1,
				Tool: "Bash", Input: json.RawMessage(`{"command": "go test ./... && echo <done> & \u2028", "n":[1, 2.50]}`)}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Kind: ProgressText, Detail: "a \"quote\" \\ <b>&\n\t\r\b\f\x01\x7f \xff é \u2028\u2029 😀"}},
		{Time: at, Kind: EventAgent, Seat: "security", Phase: PhaseReviewer, Text: "t", Agent: &Progress{Kind: ProgressQuestion, Detail: "?", Confidence: 0.75, Rule: "Bash(git:*)"}},
		{Time: at, Kind: EventAgent, RunCostUSD: 1e-7, Agent: &Progress{CostUSD: 1e21, Confidence: -0.0}},
		{Time: at, Kind: EventAgent, RunCostUSD: 123456789.125, Agent: &Progress{CostUSD: 1e-6, Confidence: 5e-324}},
		{Time: at, Kind: EventAgent, Agent: &Progress{CostUSD: math.NaN()}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(`{not json`)}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(`null`)}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(" \t\r\n[ true , false , null , -0.5e+10 , 0 , 1E2 , \"\\u00e9\\/\\b\" , { } , [ ] , {\"a\" : [ { \"b\" : 1 } ] } ] \n")}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(strings.Repeat("[", 300) + strings.Repeat("]", 300))}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(strings.Repeat("[", 10001) + strings.Repeat("]", 10001))}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(`{"a":01}`)}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(`{"a":"x"} {"b":1}`)}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage("\"tab\tin string\"")}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(`"\x"`)}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(`[1,]`)}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage(`tru`)}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage("{\"a\" : \"x\u2028y\u2029z\xe2\x80 \xe2<\"}")}},
		{Time: at, Kind: EventAgent, Agent: &Progress{Input: json.RawMessage("{\"a\":\"\u2028\"}")}},
		{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Kind: EventAgent, Agent: &Progress{}},
		{Time: at.In(time.FixedZone("x", 3600)), Kind: EventAgent, Agent: &Progress{}},
		{Kind: EventAgent, Agent: &Progress{}},
		{Time: at, Kind: EventAgent},
		{Time: at, Kind: EventAgent, Agent: &Progress{}, Usage: &Usage{Turns: 1}},
		{Time: at, Kind: EventNote, Text: "a note"},
		{Time: at, Kind: EventFinished, Outcome: &Outcome{Status: StatusSucceeded}},
	} {
		checkAppendJSON(t, e)
	}
}

// FuzzAppendJSON: an agent event of any content is written as
// json.Marshal writes it.
func FuzzAppendJSON(f *testing.F) {
	f.Add("r1", "coder", "a <b>&\u2028\xff", `{"command": "x"}`, 0.5, 1e-7, int64(1700000000123456789), 3)
	f.Add("", "", "", ``, 0.0, -0.0, int64(0), 0)
	f.Add("\x00", "\"", "\\", `[1, {"a" : "<"}]`, math.Inf(1), 1e21, int64(-1), -1)
	f.Fuzz(func(t *testing.T, run, text, detail, input string, cost, conf float64, ns int64, n int) {
		checkAppendJSON(t, Event{Time: time.Unix(0, ns).UTC(), Run: run, Kind: EventAgent, Role: Role(text), LLM: LLM(run), Seat: detail,
			Round: n, Text: text, RunCostUSD: conf,
			Agent: &Progress{Kind: ProgressKind(text), Elapsed: time.Duration(ns), Turns: n, CostUSD: cost, Files: -n, Process: n,
				Tool: run, Input: json.RawMessage(input), Rule: text, Detail: detail, Confidence: conf}})
	})
}

// BenchmarkAppendJSON: an agent's tool call event, as events.ndjson
// writes it, and json.Marshal's.
func BenchmarkAppendJSON(b *testing.B) {
	e := Event{Time: time.Now().UTC(), Run: "20261127-101328-abcd", Kind: EventAgent, Role: RoleCoder, LLM: "gemini", Round: 1, RunCostUSD: 0.0123,
		Agent: &Progress{Kind: ProgressTool, Elapsed: 1500 * time.Millisecond, Turns: 3, CostUSD: 0.0123, Files: 1, Process: 1,
			Tool: "run_shell_command", Input: json.RawMessage(`{"command":"go test ./... 2>&1 | tail -20","description":"Run the tests"}`)}}
	b.Run("AppendJSON", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = e.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(e)
		}
	})
}

// FuzzCompacter: what compacter accepts, json.Compact accepts and writes
// the same.
func FuzzCompacter(f *testing.F) {
	for _, s := range []string{
		`{"command": "go test ./...", "n": [1, 2.5e-3, -0, true, false, null], "o": {"k" : "v\u00e9\n\"<>&"}}`,
		" [ ] ", `{}`, `"s"`, `0`, `-1.5E+2`, `{"a":[{"b":[{"c":{}}]}]}`, "\"\xff\xfe\"", `{"a":1,}`, `[01]`, `"\u12"`, `nul`,
		`{"a" 1}`, `[1 2]`, `{"a":1}}`, "\"\x01\"", `1.`, `.5`, `1e`, `-`, `"\/"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		c := compacter{src: src}
		if !c.value() || !c.end() {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, src); err != nil {
			t.Fatalf("compacter took %q, which json.Compact refuses: %v", src, err)
		}
		if string(c.dst) != want.String() {
			t.Fatalf("compacter wrote %q, json.Compact %q", c.dst, want.String())
		}
	})
}
