package runners

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// permissionModes are the claude --permission-mode values spawn passes. The
// CLI also has bypassPermissions, which spawn refuses: the coder never skips
// permission checks.
var permissionModes = []string{"acceptEdits", "auto", "default", "dontAsk", "plan"}

// approvalModes are the gemini --approval-mode values spawn passes. The CLI
// also has yolo (approve every tool call), which spawn refuses.
var approvalModes = []string{"default", "auto_edit", "plan"}

// PermissionModes returns the claude permission modes spawn accepts, in the
// CLI's spelling: acceptEdits, auto, default, dontAsk, plan. bypassPermissions
// is not among them. The slice is new on every call.
func PermissionModes() []string { return slices.Clone(permissionModes) }

// PermissionModeOK reports whether mode is one of PermissionModes (exact
// spelling; "" is not a mode).
func PermissionModeOK(mode string) bool { return slices.Contains(permissionModes, mode) }

// ApprovalModes returns the gemini approval modes spawn accepts: default,
// auto_edit, plan. yolo is not among them. The slice is new on every call.
func ApprovalModes() []string { return slices.Clone(approvalModes) }

// ApprovalModeOK reports whether mode is one of ApprovalModes (exact
// spelling; "" is not a mode).
func ApprovalModeOK(mode string) bool { return slices.Contains(approvalModes, mode) }

// claudeFileTools are the tools whose rule specifier is a path glob
// (claude's own list).
var claudeFileTools = []string{"Read", "Write", "Edit", "Glob", "NotebookRead", "NotebookEdit", "Cd"}

// ValidateClaudeRule returns an error, naming s, unless s is a claude
// permission rule that claude reads as written when spawn hands it over
// (--allowedTools, --disallowedTools, or a rule granted by escalation), and
// that ParseRule reads the same way. After surrounding white space
// is trimmed, the accepted grammar is:
//
//	rule      = tool | tool "(" specifier ")"
//	tool      = name | "mcp__" server [ "__" mcptool ]
//	name      = ASCII letters, digits, "_" and "-", starting with a letter,
//	            an upper-case one unless the name holds "_"    (Bash, WebFetch)
//	server    = ASCII letters, digits, "_" and "-"
//	mcptool   = ASCII letters, digits, "_", "-" and "*"         (mcp__github__get_*)
//	specifier = one or more characters, not all white space, with any
//	            parentheses in it balanced; "Tool(*)" means the bare Tool
//
// and the whole rule is valid UTF-8 without control characters (no line
// breaks or tabs). It rejects, besides what the grammar excludes:
//
//   - a comma anywhere. spawn joins a list's rules with commas into one
//     argument, and claude keeps a comma inside parentheses as part of the
//     rule: "Bash(git log, git diff)" would be one rule for the literal
//     command "git log, git diff". Write two rules.
//   - a space outside the parentheses, or inside them after a nested ")":
//     claude splits the --allowedTools list on spaces outside parentheses,
//     and its splitter forgets it is inside them at the first ")", so
//     "Bash(echo (a) b)" becomes the two rules "Bash(echo (a)" and "b)".
//   - a backslash in the specifier: claude un-escapes \(, \) and \\ there;
//     spawn's matcher does not, so the two would read the rule differently.
//   - MCP rules with a specifier (claude: "MCP rules do not support patterns
//     in parentheses"), and a "*" in a tool name other than in mcptool
//     (claude ignores such allow rules).
//   - Bash: ":*" anywhere but at the end of the specifier, or with nothing
//     before it.
//   - Read, Write, Edit, Glob, NotebookRead, NotebookEdit, Cd: ":*" (their
//     specifier is a path glob).
//   - WebFetch: a specifier that is not "domain:host" (a URL is refused).
//   - WebSearch: "*" or "?" in the specifier.
//
// Tool names are not checked against a list: a misspelt tool is a valid
// rule that matches nothing.
func ValidateClaudeRule(s string) error {
	rule := strings.TrimSpace(s)
	if err := checkClaudeRule(rule); err != nil {
		return fmt.Errorf("claude permission rule %q: %w", s, err)
	}
	return nil
}

// checkClaudeRule checks a trimmed rule; its errors do not name the rule.
func checkClaudeRule(rule string) error {
	switch {
	case rule == "":
		return errors.New("empty")
	case !utf8.ValidString(rule):
		return errors.New("not valid UTF-8")
	case strings.IndexFunc(rule, unicode.IsControl) >= 0:
		return errors.New("holds a control character (a line break or a tab)")
	case strings.HasPrefix(rule, "-"):
		return errors.New("starts with '-' (it would be read as a flag)")
	case strings.Contains(rule, ","):
		return errors.New("holds a comma: claude would read it as part of one rule; write one rule per entry")
	}
	// claude's list splitter: a space outside parentheses ends a rule, and
	// any ")" counts as leaving them.
	inParens := false
	for _, c := range rule {
		switch c {
		case '(':
			inParens = true
		case ')':
			inParens = false
		case ' ':
			if !inParens {
				return errors.New(`holds a space outside parentheses (or after a ")" inside them): claude would split it into two rules`)
			}
		}
	}

	open := strings.IndexByte(rule, '(')
	if open < 0 {
		if strings.Contains(rule, ")") {
			return errors.New("unbalanced parentheses")
		}
		return checkClaudeTool(rule)
	}
	depth := 0
	for i := open; i < len(rule); i++ {
		switch rule[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(rule)-1 {
				return errors.New("text after the closing parenthesis")
			}
		}
	}
	if depth != 0 {
		return errors.New("unbalanced parentheses")
	}
	tool, spec := rule[:open], rule[open+1:len(rule)-1]
	if tool == "" {
		return errors.New("no tool name before the parenthesis")
	}
	if err := checkClaudeTool(tool); err != nil {
		return err
	}
	if strings.HasPrefix(tool, "mcp__") {
		return errors.New("an MCP rule takes no specifier in parentheses")
	}
	if strings.TrimSpace(spec) == "" {
		return fmt.Errorf("empty specifier; write %s alone to allow every call", tool)
	}
	if strings.Contains(spec, `\`) {
		return errors.New(`a backslash in the specifier (claude un-escapes \(, \) and \\ there)`)
	}
	switch {
	case tool == "Bash" && spec == ":*":
		return errors.New(`nothing before ":*"; write Bash(PREFIX:*) or Bash(PREFIX *)`)
	case tool == "Bash" && strings.Contains(strings.TrimSuffix(spec, ":*"), ":*"):
		return errors.New(`":*" must end the specifier`)
	case slices.Contains(claudeFileTools, tool) && strings.Contains(spec, ":*"):
		return fmt.Errorf(`":*" is for Bash prefixes; %s takes a path glob such as src/**`, tool)
	case tool == "WebFetch" && (!strings.HasPrefix(spec, "domain:") || strings.Contains(spec, "://")):
		return errors.New(`WebFetch takes "domain:HOST", not a URL`)
	case tool == "WebSearch" && strings.ContainsAny(spec, "*?"):
		return errors.New("WebSearch takes no wildcards")
	}
	return nil
}

// checkClaudeTool checks a tool name, the part of a rule before "(".
func checkClaudeTool(tool string) error {
	word := func(s string, star bool) bool {
		if s == "" {
			return false
		}
		for _, c := range s {
			ok := c < utf8.RuneSelf && (c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || star && c == '*')
			if !ok {
				return false
			}
		}
		return true
	}
	if rest, ok := strings.CutPrefix(tool, "mcp__"); ok {
		server, mcpTool, hasTool := strings.Cut(rest, "__")
		if !word(server, false) || (hasTool && !word(mcpTool, true)) {
			return fmt.Errorf("bad MCP tool name %q (want mcp__SERVER or mcp__SERVER__TOOL; a * only in TOOL)", tool)
		}
		return nil
	}
	if strings.Contains(tool, "*") {
		return fmt.Errorf("tool name %q has a wildcard (claude allows one only in mcp__SERVER__TOOL)", tool)
	}
	first := rune(tool[0])
	if !word(tool, false) || !unicode.IsLetter(first) {
		return fmt.Errorf("bad tool name %q (letters, digits, _ and -, starting with a letter)", tool)
	}
	if !strings.Contains(tool, "_") && !unicode.IsUpper(first) {
		return fmt.Errorf("tool name %q must start with an upper-case letter", tool)
	}
	return nil
}
