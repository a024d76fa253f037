package runners

import (
	"encoding/json"
	"net/url"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Rule is a parsed claude permission rule: "Write", "Bash(make:*)",
// "Bash(git *)", "Bash(npm run test)", "Edit(src/**)", "WebFetch(domain:x.org)".
//
// A Rule is a value; the zero Rule matches nothing useful and is never
// returned by ParseRule.
type Rule struct {
	// Tool is the tool name before the parentheses ("Bash", "Edit").
	Tool string
	// Spec is the text inside the parentheses, "" for a bare tool.
	Spec string
	// Raw is the rule as written (trimmed), suitable for --allowedTools.
	Raw string
}

// ParseRule parses one claude permission rule, "Tool" or "Tool(spec)",
// with surrounding white space trimmed. It accepts exactly the rules
// ValidateClaudeRule accepts (the grammar is documented there), and
// its error for any other names the rule. "Tool(*)" is kept as written but
// matches like the bare "Tool", as in claude.
func ParseRule(s string) (Rule, error) {
	if err := ValidateClaudeRule(s); err != nil {
		return Rule{}, err
	}
	raw := strings.TrimSpace(s)
	open := strings.IndexByte(raw, '(')
	if open < 0 {
		return Rule{Tool: raw, Raw: raw}, nil
	}
	// ValidateClaudeRule checked that the parenthesis opened after the tool
	// name closes at the very end.
	spec := strings.TrimSpace(raw[open+1 : len(raw)-1])
	return Rule{Tool: raw[:open], Spec: spec, Raw: raw}, nil
}

// String returns the rule as written (Raw).
func (r Rule) String() string { return r.Raw }

// Matches reports whether the rule alone allows the tool call: tool is the
// tool name and input its JSON input as claude sends it (the tool_input of a
// permission denial). A Bash call made of several commands ("a && b") is
// allowed only if the rule matches every one of them; malformed input is
// matched only by a bare rule. See Grant for the matching rules.
func (r Rule) Matches(tool string, input json.RawMessage) bool {
	_, ok := Grant([]Rule{r}, tool, input)
	return ok
}

// Grant reports whether the rules of escalatable, together, allow the tool
// call, and returns the distinct rules used, in list order (nil when they do
// not allow it). It never grants more than claude itself would, and where
// claude's behaviour is unclear it grants less:
//
//   - A bare rule ("Bash", "Write") or "Tool(*)" allows every call of that
//     tool. To keep grants small, a bare rule is used only when no rule with
//     a spec matches; among those, the first in list order wins.
//   - Bash: the command is parsed as bash (mvdan.cc/sh/v3/syntax). Every
//     simple command in it, across &&, ||, ;, |, |&, &, newlines and ( ) or
//     { } groups, must be matched by some rule (claude checks each
//     subcommand), and each takes the first matching rule. A simple
//     command is matched as written, trimmed, with its assignments and
//     redirections and without the operator after it. A spec "p:*" or
//     "p *" allows a command equal to p or starting with p plus a space; a
//     spec without "*" allows a command equal to it; any other "*" is a
//     wildcard over the whole command. A command that does not parse, or
//     that holds anything but words of literal text, quotes and plain
//     $name or ${name} expansions, is matched only by a bare rule: a
//     command, process or arithmetic substitution, any other parameter
//     expansion, an extended glob, a here-document, a comment, a carriage
//     return, or a construct other than a simple command (if, for, while,
//     case, [[ ]], (( )), a function, declare, export, local, let, time,
//     coproc, !). Unlike claude, leading VAR=value assignments and
//     wrappers such as timeout or nohup are not stripped, so "FOO=1 make"
//     is not matched by "make:*".
//   - Read, Edit, Write, MultiEdit, NotebookEdit: the spec is a path glob
//     over file_path (notebook_path for NotebookEdit); "**" matches any
//     number of segments, "*" any run within one segment. A spec starting
//     with "/" (or "//") is matched against the whole cleaned path; any
//     other spec against a trailing run of segments, so "src/**" matches
//     "/abs/repo/src/a/b.go". An Edit rule also covers Write, MultiEdit and
//     NotebookEdit, as in claude. Paths with ".." or specs with "~" never match.
//   - Any tool with a "domain:host" spec: matches when the host of
//     input.url equals host (case-insensitive).
//   - Anything else with a spec matches nothing.
func Grant(escalatable []Rule, tool string, input json.RawMessage) ([]Rule, bool) {
	// Narrow rules are tried before bare ones so that the grant is as small
	// as the list allows.
	var narrow, bare []int
	for i, r := range escalatable {
		switch {
		case !ruleCoversTool(r.Tool, tool):
		case isBareRule(r):
			bare = append(bare, i)
		default:
			narrow = append(narrow, i)
		}
	}
	if tool == "Bash" {
		return grantBash(escalatable, narrow, bare, input)
	}
	for _, i := range narrow {
		if specMatches(escalatable[i].Spec, tool, input) {
			return []Rule{escalatable[i]}, true
		}
	}
	if len(bare) > 0 {
		return []Rule{escalatable[bare[0]]}, true
	}
	return nil, false
}

// isBareRule reports whether r allows every call of its tool.
func isBareRule(r Rule) bool { return r.Spec == "" || r.Spec == "*" }

// ruleCoversTool reports whether a rule for ruleTool applies to calls of
// tool: the same name, or an Edit rule for any file-editing tool.
func ruleCoversTool(ruleTool, tool string) bool {
	if ruleTool == tool {
		return true
	}
	if ruleTool == "Edit" {
		switch tool {
		case "Write", "MultiEdit", "NotebookEdit":
			return true
		}
	}
	return false
}

// grantBash matches a Bash call simple command by simple command: each
// takes the first narrow rule that matches it, else the first bare rule.
// narrow and bare are indexes into rules.
func grantBash(rules []Rule, narrow, bare []int, input json.RawMessage) ([]Rule, bool) {
	var in struct {
		Command *string `json:"command"`
	}
	var parts []string
	ok := json.Unmarshal(input, &in) == nil && in.Command != nil
	if ok {
		parts, ok = simpleCommands(*in.Command)
	}
	if !ok || len(parts) == 0 {
		// Nothing a narrow rule can judge: only a bare rule allows it.
		if len(bare) > 0 {
			return []Rule{rules[bare[0]]}, true
		}
		return nil, false
	}
	used := make([]bool, len(rules))
	for _, part := range parts {
		found := -1
		for _, i := range narrow {
			if bashSpecMatches(rules[i].Spec, part) {
				found = i
				break
			}
		}
		if found < 0 && len(bare) > 0 {
			found = bare[0]
		}
		if found < 0 {
			return nil, false
		}
		used[found] = true
	}
	var out []Rule
	for i, u := range used {
		if u {
			out = append(out, rules[i])
		}
	}
	return out, true
}

// simpleCommands parses cmd as bash and returns the text of each simple
// command in it, in order, as Grant matches it: as written, trimmed, from
// its first assignment, word or redirection to its last. ok is false when
// cmd holds anything a narrow rule cannot judge (see Grant): then parts
// is nil.
func simpleCommands(cmd string) (parts []string, ok bool) {
	// bash reads a carriage return as part of a word; a reader of the
	// command may see a line break.
	if strings.ContainsRune(cmd, '\r') {
		return nil, false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).
		Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil, false
	}
	// A shell that does not read "#" as a comment would run what follows.
	commented := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.Comment); ok {
			commented = true
		}
		return !commented
	})
	if commented {
		return nil, false
	}
	c := commandLister{src: cmd}
	if !c.stmts(f.Stmts) {
		return nil, false
	}
	return c.parts, true
}

// commandLister collects the simple commands of a parsed command line.
type commandLister struct {
	src   string
	parts []string
}

// stmts lists the simple commands of a statement list; false when one of
// them is not a list of simple commands.
func (c *commandLister) stmts(list []*syntax.Stmt) bool {
	for _, s := range list {
		if !c.stmt(s) {
			return false
		}
	}
	return true
}

// stmt lists the simple commands of one statement: a simple command, two
// statements joined by &&, ||, | or |&, or a ( ) or { } group. Anything
// else (or a negated statement, a coprocess) returns false.
func (c *commandLister) stmt(s *syntax.Stmt) bool {
	if s.Negated || s.Coprocess || s.Disown {
		return false
	}
	end := 0
	for _, r := range s.Redirs {
		if !plainRedirect(r) {
			return false
		}
		end = max(end, int(r.End().Offset()))
	}
	switch cmd := s.Cmd.(type) {
	case *syntax.CallExpr:
		for _, a := range cmd.Assigns {
			if a.Naked || a.Index != nil || a.Array != nil || (a.Value != nil && !plainWord(a.Value)) {
				return false
			}
		}
		for _, w := range cmd.Args {
			if !plainWord(w) {
				return false
			}
		}
		end = max(end, int(cmd.End().Offset()))
		start := int(s.Pos().Offset())
		if start >= end || end > len(c.src) {
			return false
		}
		c.parts = append(c.parts, strings.TrimSpace(c.src[start:end]))
		return true
	case *syntax.BinaryCmd:
		switch cmd.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
			return c.stmt(cmd.X) && c.stmt(cmd.Y)
		}
		return false
	case *syntax.Subshell:
		return c.stmts(cmd.Stmts)
	case *syntax.Block:
		return c.stmts(cmd.Stmts)
	}
	return false
}

// plainRedirect reports whether a redirection names its target with a
// plain word: any redirection but a here-document, whose body bash
// expands.
func plainRedirect(r *syntax.Redirect) bool {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		return false
	}
	return r.Word == nil || plainWord(r.Word)
}

// plainWord reports whether a word is made of literal text, single
// quotes, and double quotes or bare parts holding only text and plain
// parameter expansions: nothing in it runs a command or evaluates
// anything.
func plainWord(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.ParamExp:
			if !plainParam(p) {
				return false
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
				case *syntax.ParamExp:
					if !plainParam(q) {
						return false
					}
				default:
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// plainParam reports whether a parameter expansion is $name or ${name}:
// no operator, index, slice, replacement, indirection or modifier (any of
// which can evaluate text, as ${x@P} or ${a[$(id)]} do).
func plainParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Flags == nil &&
		!p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.Split == syntax.OptUnset && p.GlobSubst == syntax.OptUnset && p.RcExpand == syntax.OptUnset &&
		p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 &&
		p.Slice == nil && p.Repl == nil && p.Names == 0 && p.Exp == nil
}

// bashSpecMatches reports whether a (non-bare) Bash spec matches one simple
// command.
func bashSpecMatches(spec, part string) bool {
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok && !strings.Contains(prefix, "*") {
		return prefixMatches(strings.TrimSpace(prefix), part)
	}
	if prefix, ok := strings.CutSuffix(spec, " *"); ok && !strings.Contains(prefix, "*") {
		return prefixMatches(strings.TrimSpace(prefix), part)
	}
	if !strings.Contains(spec, "*") {
		return strings.TrimSpace(spec) == part
	}
	return globCommandMatches(spec, part)
}

// prefixMatches reports whether part is prefix or starts with prefix and a
// space (a word boundary: "make" does not match "makefile-gen").
func prefixMatches(prefix, part string) bool {
	return prefix != "" && (part == prefix || strings.HasPrefix(part, prefix+" "))
}

// globCommandMatches matches a Bash spec with wildcards against a whole
// command: "*" is any run of characters, a final " *" also allows nothing
// after the word before it (as claude does), and everything else is
// literal. No wildcard matches a line break.
func globCommandMatches(spec, part string) bool {
	spec = strings.TrimSpace(spec)
	if head, ok := strings.CutSuffix(spec, " *"); ok && globMatch(head, part) {
		return true
	}
	return globMatch(spec, part)
}

// globMatch reports whether s matches pattern entirely, byte by byte, where
// "*" matches any run of bytes other than a line break and every other byte
// matches itself. Since a valid rule holds no line break, a pattern or a
// string that holds one matches nothing. The work is at most len(s) times
// the number of "*"s.
func globMatch(pattern, s string) bool {
	if strings.Contains(pattern, "\n") || strings.Contains(s, "\n") {
		return false
	}
	return matchSegment(pattern, s)
}

// specMatches matches a non-bare spec of a non-Bash rule against a call.
func specMatches(spec, tool string, input json.RawMessage) bool {
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		URL          string `json:"url"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return false
	}
	switch tool {
	case "Read", "Edit", "Write", "MultiEdit":
		return pathSpecMatches(spec, in.FilePath)
	case "NotebookEdit":
		p := in.NotebookPath
		if p == "" {
			p = in.FilePath
		}
		return pathSpecMatches(spec, p)
	}
	if host, ok := strings.CutPrefix(spec, "domain:"); ok {
		u, err := url.Parse(in.URL)
		if err != nil || u.Hostname() == "" {
			return false
		}
		return strings.EqualFold(u.Hostname(), strings.TrimSpace(host))
	}
	return false
}

// pathSpecMatches matches a path glob spec against a file path (see Grant).
func pathSpecMatches(spec, file string) bool {
	if file == "" || strings.HasPrefix(spec, "~") {
		return false
	}
	file = path.Clean(file)
	fileSegs := strings.Split(strings.TrimPrefix(file, "/"), "/")
	for _, s := range fileSegs {
		if s == ".." {
			return false
		}
	}
	if strings.HasSuffix(spec, "/") {
		spec += "**"
	}
	if strings.HasPrefix(spec, "/") {
		if !strings.HasPrefix(file, "/") {
			return false
		}
		return matchSegments(strings.Split(strings.TrimLeft(spec, "/"), "/"), fileSegs)
	}
	// A relative spec matches a trailing run of segments: as if it started
	// with "**".
	specSegs := strings.Split(strings.TrimPrefix(spec, "./"), "/")
	return matchSegments(append([]string{"**"}, specSegs...), fileSegs)
}

// matchSegments reports whether glob segments match path segments entirely:
// a "**" segment matches zero or more segments, others match one segment.
// It keeps the set of path prefixes the glob so far can match, so the work
// is len(glob) * len(segs) segment matches, however many "**" there are.
func matchSegments(glob, segs []string) bool {
	reach := make([]bool, len(segs)+1) // reach[j]: the glob so far matches segs[:j]
	next := make([]bool, len(segs)+1)
	reach[0] = true
	for _, g := range glob {
		clear(next)
		if g == "**" {
			on := false
			for j := range reach {
				on = on || reach[j]
				next[j] = on
			}
		} else {
			for j := range segs {
				if reach[j] && matchSegment(g, segs[j]) {
					next[j+1] = true
				}
			}
		}
		reach, next = next, reach
	}
	return reach[len(segs)]
}

// matchSegment matches s against a pattern where "*" is any run of bytes
// and every other byte is literal: the first piece must start s, the last
// end it, and the pieces between are taken at their leftmost place.
func matchSegment(pattern, s string) bool {
	pieces := strings.Split(pattern, "*")
	if len(pieces) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, pieces[0]) {
		return false
	}
	s = s[len(pieces[0]):]
	last := pieces[len(pieces)-1]
	for _, p := range pieces[1 : len(pieces)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
