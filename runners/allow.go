package runners

import (
	"encoding/json"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
)

// subcommandRE is a word that reads as a subcommand ("vet", "run-script"),
// not as an argument (a path, a flag, a URL).
var subcommandRE = lazy.MustCompile(`^[a-z][a-z0-9_-]*$`)

// ClaudeAllowRule is a claude permission rule that allows a refused tool
// call again, for a person deciding whether to: for Bash, the command's
// program and its subcommand ("go vet ./..." gives "Bash(go vet:*)", "make"
// gives "Bash(make:*)"); for any other tool, its name. It is "" when the
// call is Bash without a simple command (a pipeline, a list, a
// substitution), for which no one rule is right.
func ClaudeAllowRule(tool string, input json.RawMessage) string {
	if tool != "Bash" {
		return tool
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(input, &in) != nil || strings.ContainsAny(in.Command, "|&;<>()$`\n") {
		return ""
	}
	var words []string
	for _, w := range strings.Fields(in.Command) {
		if len(words) == 2 || strings.ContainsAny(w, "\\\"'*?=") {
			break
		}
		if len(words) == 1 && !subcommandRE.MatchString(w) {
			break // an argument, not a subcommand
		}
		words = append(words, w)
	}
	if len(words) == 0 || ValidateClaudeRule("Bash("+strings.Join(words, " ")+":*)") != nil {
		return ""
	}
	return "Bash(" + strings.Join(words, " ") + ":*)"
}
