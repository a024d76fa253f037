package watcher

import (
	"encoding/json"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/infinite-improbability-drive/spawn/runners"
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
// runners.ValidateClaudeRule accepts (the grammar is documented there), and
// its error for any other names the rule. "Tool(*)" is kept as written but
// matches like the bare "Tool", as in claude.
func ParseRule(s string) (Rule, error) {
	if err := runners.ValidateClaudeRule(s); err != nil {
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
//   - Bash: the command is split into parts on &&, ||, ;, |, & and newlines
//     outside quotes; every part must be matched by some rule (claude checks
//     each subcommand), and each part takes the first matching rule. A spec "p:*" or "p *" allows a part equal to p or starting
//     with p plus a space; a spec without "*" allows a part equal to it; any
//     other "*" is a wildcard over the whole part. A command holding $(,
//     backticks, <( or >(, or an unterminated quote, is matched only by a
//     bare rule. Unlike claude, leading VAR=value assignments and wrappers
//     such as timeout or nohup are not stripped, so "FOO=1 make" is not
//     matched by "make:*".
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

// grantBash matches a Bash call part by part: each part takes the first
// narrow rule that matches it, else the first bare rule. narrow and bare
// are indexes into rules.
func grantBash(rules []Rule, narrow, bare []int, input json.RawMessage) ([]Rule, bool) {
	var in struct {
		Command *string `json:"command"`
	}
	var parts []string
	ok := json.Unmarshal(input, &in) == nil && in.Command != nil && !unsafeShell.MatchString(*in.Command)
	if ok {
		parts, ok = splitShell(*in.Command)
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

// unsafeShell finds command and process substitutions, which can run
// anything whatever the prefix of the command.
var unsafeShell = regexp.MustCompile("\\$\\(|`|<\\(|>\\(")

// splitShell splits a shell command into its simple commands on &&, ||, ;,
// |, |&, a lone & and newlines, outside single and double quotes and not
// after a backslash. Parts are trimmed; empty parts are dropped. ok is false
// for an unterminated quote or trailing backslash.
func splitShell(cmd string) (parts []string, ok bool) {
	var cur strings.Builder
	flush := func() {
		if p := strings.TrimSpace(cur.String()); p != "" {
			parts = append(parts, p)
		}
		cur.Reset()
	}
	var quote byte // 0, '\'' or '"'
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
			cur.WriteByte(c)
		case c == '\\':
			if i+1 >= len(cmd) {
				return nil, false
			}
			cur.WriteByte(c)
			cur.WriteByte(cmd[i+1])
			i++
		case quote == '"':
			if c == '"' {
				quote = 0
			}
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote = c
			cur.WriteByte(c)
		case c == ';' || c == '\n' || c == '\r':
			flush()
		case c == '|':
			flush()
			if i+1 < len(cmd) && (cmd[i+1] == '|' || cmd[i+1] == '&') {
				i++
			}
		case c == '&':
			// Redirections (2>&1, &>file, >&2) are part of the command.
			if (i > 0 && (cmd[i-1] == '>' || cmd[i-1] == '<')) || (i+1 < len(cmd) && cmd[i+1] == '>') {
				cur.WriteByte(c)
				continue
			}
			flush()
			if i+1 < len(cmd) && cmd[i+1] == '&' {
				i++
			}
		default:
			cur.WriteByte(c)
		}
	}
	if quote != 0 {
		return nil, false
	}
	flush()
	return parts, true
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
