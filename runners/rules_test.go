package runners

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateClaudeRuleAccepts(t *testing.T) {
	for _, r := range []string{
		"Write", "  Bash  ", "Bash(*)", "Bash(make:*)", "Bash(git commit:*)", "Bash(git *)",
		"Bash(npm run test)", "Bash(go test ./...)", "Bash(echo (hi))", "Bash(ls*)",
		"Edit(src/**)", "Read(//etc/hosts)", "Read(~/notes.txt)",
		"WebFetch(domain:example.com)", "WebFetch(domain:*.google.com)", "WebSearch(claude ai)",
		"mcp__github", "mcp__github__get_issue", "mcp__github__get_*", "mcp__my-server__*",
		"Task", "NotebookEdit", "Some_tool", "some_tool",
	} {
		assert.NoError(t, ValidateClaudeRule(r), r)
	}
}

func TestValidateClaudeRuleRejects(t *testing.T) {
	tests := []struct {
		rule string
		want string // part of the error
	}{
		{"", `claude permission rule "": empty`},
		{"   ", `claude permission rule "   ": empty`},
		{"Bash(unclosed", "unbalanced parentheses"},
		{"Bash)", "unbalanced parentheses"},
		{"Bash((a)", "unbalanced parentheses"},
		{"Bash(a))", "text after the closing parenthesis"},
		{"Bash(a)b", "text after the closing parenthesis"},
		{"Bash(git log, git diff)", "comma"},
		{"Read,Write", "comma"},
		{"Bash(git log) Bash(git diff)", "space outside parentheses"},
		{"Bash (git log)", "space outside parentheses"},
		{"Ba sh", "space outside parentheses"},
		{"Bash(echo (a) b)", `after a ")" inside them`},
		{"Bash()", "empty specifier"},
		{"Bash(  )", "empty specifier"},
		{"(make:*)", "no tool name"},
		{"-Bash", "starts with '-'"},
		{"--dangerously-skip-permissions", "starts with '-'"},
		{"Bash(a\nb)", "control character"},
		{"Bash(a\tb)", "control character"},
		{"Bash(*\xef)", "not valid UTF-8"},
		{`Bash(echo \(a\))`, "backslash"},
		{"bash", "upper-case"},
		{"1Bash", "bad tool name"},
		{"Bä", "bad tool name"},
		{"Bash*", "wildcard"},
		{"*", "wildcard"},
		{"mcp__*__tool", "bad MCP tool name"},
		{"mcp__", "bad MCP tool name"},
		{"mcp__github__get_issue(x)", "MCP rule takes no specifier"},
		{"Bash(:*)", `nothing before ":*"`},
		{"Bash(git:* --force)", `":*" must end the specifier`},
		{"Edit(src:*)", `":*" is for Bash prefixes`},
		{"Read(/etc/:*)", `":*" is for Bash prefixes`},
		{"WebFetch(https://example.com)", "domain:HOST"},
		{"WebFetch(example.com)", "domain:HOST"},
		{"WebFetch(domain:https://example.com)", "domain:HOST"},
		{"WebSearch(claude*)", "no wildcards"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			err := ValidateClaudeRule(tt.rule)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), `claude permission rule "`, "the error names the rule")
		})
	}
}

func TestModesAreDefinedOnce(t *testing.T) {
	assert.Equal(t, []string{"acceptEdits", "auto", "default", "dontAsk", "plan"}, PermissionModes())
	assert.Equal(t, []string{"default", "auto_edit", "plan"}, ApprovalModes())
	for _, m := range PermissionModes() {
		assert.True(t, PermissionModeOK(m), m)
		_, err := (&Claude{PermissionMode: m}).Command(Turn{Prompt: "p"})
		assert.NoError(t, err, m)
	}
	for _, m := range ApprovalModes() {
		assert.True(t, ApprovalModeOK(m), m)
		_, err := (&Gemini{Model: "m", ApprovalMode: m}).Command(Turn{Prompt: "p"})
		assert.NoError(t, err, m)
	}
	for _, m := range []string{"bypassPermissions", "", "acceptedits", "yolo"} {
		assert.False(t, PermissionModeOK(m), m)
	}
	for _, m := range []string{"yolo", "", "autoEdit", "acceptEdits"} {
		assert.False(t, ApprovalModeOK(m), m)
	}
	// The slices are copies: changing one changes nothing.
	PermissionModes()[0] = "bypassPermissions"
	ApprovalModes()[0] = "yolo"
	assert.False(t, PermissionModeOK("bypassPermissions"))
	assert.False(t, ApprovalModeOK("yolo"))
}
