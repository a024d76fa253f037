package runners

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
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
