package runners

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// addTranscripts adds every recorded transcript whose name starts with
// prefix as a seed.
func addTranscripts(f *testing.F, prefix string) {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "transcripts", prefix+"*.jsonl"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no %s transcripts: %v", prefix, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkStream parses stream with parse, whole and one byte at a time, and
// checks the promises every Parse makes: no error from a reader that has
// none; each event carries exactly the field its Kind names; at most one
// result, and it is the last event; an API status that is 0 or an HTTP
// status; the same events when the stream comes in small reads.
func checkStream(t *testing.T, parse streamParser, stream []byte) {
	var events []Event
	if err := parse(bytes.NewReader(stream), func(e Event) { events = append(events, e) }); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	results := 0
	for i, e := range events {
		set := map[Kind]bool{
			KindInit:       e.Init != nil,
			KindToolUse:    e.ToolUse != nil,
			KindToolResult: e.ToolResult != nil,
			KindRetry:      e.Retry != nil,
			KindResult:     e.Result != nil,
		}
		for k, isSet := range set {
			if isSet != (k == e.Kind) {
				t.Fatalf("event %d of kind %s: field for %s set: %v", i, e.Kind, k, isSet)
			}
		}
		if e.Kind != KindText && e.Text != "" {
			t.Fatalf("event %d of kind %s has text", i, e.Kind)
		}
		if e.Kind == KindResult {
			results++
			if i != len(events)-1 {
				t.Fatalf("result is event %d of %d", i, len(events))
			}
			if s := e.Result.APIErrorStatus; s != 0 && (s < 100 || s > 599) {
				t.Fatalf("APIErrorStatus %d", s)
			}
		}
	}
	if results > 1 {
		t.Fatalf("%d results", results)
	}
	var chunked []Event
	r := &chunkReader{r: bytes.NewReader(stream), n: 1 + len(stream)%13}
	if err := parse(r, func(e Event) { chunked = append(chunked, e) }); err != nil {
		t.Fatalf("Parse in reads of %d bytes: %v", r.n, err)
	}
	if !reflect.DeepEqual(events, chunked) {
		t.Fatalf("events differ when read %d bytes at a time:\n%+v\n%+v", r.n, events, chunked)
	}
}

// chunkReader reads at most n bytes at a time from r.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	return c.r.Read(p[:min(len(p), c.n)])
}

// FuzzClaudeParse checks Claude.Parse on any stream (see checkStream).
// Seeds: the recorded claude transcripts and testdata/fuzz/FuzzClaudeParse.
func FuzzClaudeParse(f *testing.F) {
	addTranscripts(f, "claude-")
	f.Add([]byte(`{"type":"result","is_error":true,"api_error_status":-1,"result":"API Error: Overloaded"}` + "\n" + `{"type":"result"}`))
	f.Add([]byte(`{"type":"assistant","message":{"content":"x"}}` + "\r\n" + `{"type":"user","message":{"content":[{"type":"tool_result","content":[1,{"type":"text"}]}]}}`))
	f.Fuzz(func(t *testing.T, stream []byte) {
		checkStream(t, (&Claude{}).Parse, stream)
	})
}

// FuzzGeminiParse checks Gemini.Parse on any stream (see checkStream).
// Seeds: the recorded gemini transcripts and testdata/fuzz/FuzzGeminiParse.
func FuzzGeminiParse(f *testing.F) {
	addTranscripts(f, "gemini-")
	f.Add([]byte(`{"type":"result","status":"error","error":{"type":"x","code":"503","message":"[API Error: {\"error\":{\"code\":99999999999}} (Status: UNAVAILABLE)]"}}`))
	f.Add([]byte(`{"type":"message","role":"assistant","content":"a"}` + "\n" + `{"type":"tool_use"}` + "\n" + `{"type":"error","message":"m"}` + "\n" + `{"type":"result","status":"success"}`))
	f.Fuzz(func(t *testing.T, stream []byte) {
		checkStream(t, (&Gemini{}).Parse, stream)
	})
}

// claudeSplit is claude's own splitter for --allowedTools and
// --disallowedTools values (the same in 2.1.197 and 2.1.332), transcribed
// from its source: commas and spaces end a rule outside parentheses, and
// any ")" counts as leaving them.
func claudeSplit(list string) []string {
	var out []string
	cur := ""
	in := false
	for _, c := range list {
		switch c {
		case '(':
			in = true
			cur += string(c)
		case ')':
			in = false
			cur += string(c)
		case ',', ' ':
			if in {
				cur += string(c)
			} else if strings.TrimSpace(cur) != "" {
				out = append(out, strings.TrimSpace(cur))
				cur = ""
			} else {
				cur = ""
			}
		default:
			cur += string(c)
		}
	}
	if strings.TrimSpace(cur) != "" {
		out = append(out, strings.TrimSpace(cur))
	}
	return out
}

// FuzzValidateClaudeRule checks that a rule ValidateClaudeRule accepts
// reaches claude as one rule, as written, when Claude.Command joins it with
// others; that Command accepts exactly the rules it accepts; and that its
// error names the rule.
func FuzzValidateClaudeRule(f *testing.F) {
	for _, s := range []string{
		"Write", "Bash(git *)", "Bash(make:*)", "Bash(echo (hi))", "Bash(echo (a) b)", "Bash(git log, git diff)",
		"Edit(src/**)", "WebFetch(domain:x.org)", "mcp__s__t*", "Bash(*\xef)", " Bash ", "Bash()", "Bash(a)b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		err := ValidateClaudeRule(rule)
		_, cmdErr := (&Claude{}).Command(Turn{Prompt: "p", Allow: []string{rule}})
		if (err == nil) != (cmdErr == nil) {
			t.Fatalf("ValidateClaudeRule: %v; Command: %v", err, cmdErr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "claude permission rule "+strconv.Quote(rule)) {
				t.Fatalf("error %q does not name the rule", err)
			}
			return
		}
		cmd, err := (&Claude{AllowedTools: []string{"Read"}}).Command(Turn{Prompt: "p", Allow: []string{rule, "Write"}})
		if err != nil {
			t.Fatal(err)
		}
		var list string
		for i, a := range cmd.Args {
			if a == "--allowedTools" {
				list = cmd.Args[i+1]
			}
		}
		want := []string{"Read", strings.TrimSpace(rule), "Write"}
		if got := claudeSplit(list); !reflect.DeepEqual(got, want) {
			t.Fatalf("claude splits %q into %q, want %q", list, got, want)
		}
	})
}
