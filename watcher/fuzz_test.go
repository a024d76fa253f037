package watcher

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseRule checks ParseRule on any string: an error names the rule;
// a rule it returns has a tool, prints back as the trimmed input, and
// parses again to itself.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"Write", "  Bash  ", "Bash(make:*)", "Bash(git *)", "Bash(echo (hi))", "Edit(src/**)", "Bash(*)",
		"WebFetch(domain:example.com)", "mcp__github__get_*", "Bash(*\xef)", "Bash(a)b", "Bash((a)", "Bash()",
		"Bash(git log, git diff)", "Bash(echo (a) b)", "bash", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("error %q does not name the rule", err)
			}
			if r != (Rule{}) {
				t.Fatalf("error %v comes with a rule %+v", err, r)
			}
			return
		}
		if r.Tool == "" || r.String() != strings.TrimSpace(s) || r.Raw != r.String() {
			t.Fatalf("ParseRule(%q) = %+v", s, r)
		}
		if (r.Spec == "") != !strings.Contains(r.Raw, "(") {
			t.Fatalf("ParseRule(%q) = %+v: spec and parentheses disagree", s, r)
		}
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRule(%q) = %+v, %v; want %+v", r.String(), again, err, r)
		}
	})
}

// FuzzGrant checks Grant and Rule.Matches on any two rules and any call:
// no panic; a grant is made of rules from the list, distinct, in list
// order, and those rules alone grant the call again; no grant is nil;
// adding a rule never takes a grant away; a bare rule for the tool always
// grants; Matches agrees with Grant over the one rule.
func FuzzGrant(f *testing.F) {
	f.Add("Bash(git:*)", "Bash(make:*)", "Bash", `{"command":"git add -A && make"}`)
	f.Add("Bash(*\xef)", "Bash", "Bash", `{"CommAnd":"''"}`)
	f.Add("Bash(go * -run *)", "Bash(ls*)", "Bash", `{"command":"go test -run X; ls -l | wc"}`)
	f.Add("Edit(src/**)", "Write", "Write", `{"file_path":"/r/src/a.go"}`)
	f.Add("Edit(**/**/x/**/*.go)", "Read(//etc/*)", "NotebookEdit", `{"notebook_path":"/a/x/b/c.go"}`)
	f.Add("WebFetch(domain:example.com)", "Edit", "WebFetch", `{"url":"https://EXAMPLE.com/x"}`)
	f.Add("Bash(echo:*)", "Bash(*)", "Bash", `{"command":"echo $(id) 'a;b' \"c\" 2>&1 &"}`)
	f.Add("Bash(make:*)", "Bash(git *)", "Bash", `{"command":"(make && git add -A) | make -n; make <<EOF\n$(id)\nEOF\n"}`)
	f.Add("Bash(make:*)", "Bash(echo *)", "Bash", `{"command":"FOO=1 make ${X@P} # c\r"}`)
	f.Fuzz(func(t *testing.T, rule1, rule2, tool, input string) {
		var list []Rule
		for _, s := range []string{rule1, rule2} {
			if r, err := ParseRule(s); err == nil {
				list = append(list, r)
			}
		}
		in := json.RawMessage(input)
		got, ok := Grant(list, tool, in)
		if !ok {
			if got != nil {
				t.Fatalf("no grant, but rules %+v", got)
			}
		} else {
			if len(got) == 0 {
				t.Fatal("a grant without rules")
			}
			next := 0
			for _, g := range got {
				for next < len(list) && list[next] != g {
					next++
				}
				if next == len(list) {
					t.Fatalf("granted %+v: not from %+v in list order", got, list)
				}
				next++
			}
			again, ok := Grant(got, tool, in)
			if !ok || !reflect.DeepEqual(again, got) {
				t.Fatalf("the granted rules %+v alone give %+v, %v", got, again, ok)
			}
		}
		if len(list) > 0 {
			_, first := Grant(list[:1], tool, in)
			if first && !ok {
				t.Fatal("adding a rule took a grant away")
			}
			if m := list[0].Matches(tool, in); m != first {
				t.Fatalf("Matches = %v, Grant over the rule = %v", m, first)
			}
		}
		if bare, err := ParseRule(tool); err == nil && bare.Tool == tool {
			if _, ok := Grant(append(list, bare), tool, in); !ok {
				t.Fatalf("bare rule %q does not grant", tool)
			}
		}
	})
}

// FuzzDetect checks QuestionDetector.Detect on any text: a confidence in
// [0, 1] in hundredths, zero exactly when there is no question; a question
// of at most 300 runes on one line without surrounding space, valid UTF-8
// when the text is; and nothing found in a text that is all code.
func FuzzDetect(f *testing.F) {
	for _, s := range []string{
		"Should I proceed with the migration?",
		"I implemented the parser and all tests pass.\n\nShould I migrate it as well? (y/n)",
		"Here is the plan:\n\n```js\nconst v = ok ? a : b\n```\n\nDo you want me to apply it?",
		"Done. All tests pass.",
		"**Question:** should the API return 404 or 410?**",
		"The fix is at https://x.org/p?tab=1. Should I vendor it?",
		strings.Repeat("Which option? ", 40),
		"\xff?", "?", "", "``` ?",
	} {
		f.Add(s)
	}
	d, err := NewQuestionDetector([]string{`\bblocked on\b`})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, conf := d.Detect(text)
		if conf < 0 || conf > 1 || math.Round(conf*100) != conf*100 {
			t.Fatalf("confidence %v", conf)
		}
		if (q == "") != (conf == 0) {
			t.Fatalf("question %q with confidence %v", q, conf)
		}
		if utf8.RuneCountInString(q) > maxQuestionRunes {
			t.Fatalf("question of %d runes", utf8.RuneCountInString(q))
		}
		if strings.ContainsAny(q, "\n\r") || q != strings.TrimSpace(q) {
			t.Fatalf("question %q", q)
		}
		if utf8.ValidString(text) && !utf8.ValidString(q) {
			t.Fatalf("question %q is not valid UTF-8", q)
		}
		for line := range strings.Lines(strings.ReplaceAll(text, "\r\n", "\n")) {
			if codeFence.MatchString(line) {
				return
			}
		}
		if q, conf := d.Detect("```\n" + text + "\n```"); q != "" || conf != 0 {
			t.Fatalf("code block read as question %q (%v)", q, conf)
		}
	})
}
