// Package demo builds spawn's offline demonstration: a throwaway repository
// with a small bug, and the scripted model conversations in which the real
// coder CLI finds and fixes it and the real reviewer CLI reviews the fix.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/prompts"
)

// Task is what the demo asks the coder to do.
const Task = "Fix the failing test in calc.go"

// Scenario is the scripted models' side of the demo, for a coder and a
// reviewer whose CLIs call the model APIs coderAPI and reviewerAPI (the
// names modelserver gives them: modelserver.APIAnthropic, APIOpenAI,
// APIGemini), each in the tool shapes of the CLI that calls that API. The
// coder runs the tests, reads calc.go, fixes it and runs the tests again.
// The reviewer asks for a test with negative numbers; the coder, resumed,
// adds it and answers the finding by its id; the reviewer approves.
func Scenario(coderAPI, reviewerAPI string) (modelserver.Scenario, error) {
	var sc modelserver.Scenario
	if coderAPI == reviewerAPI {
		return sc, fmt.Errorf("demo scenario: the coder and the reviewer call the same model API (%s): the demo scripts one role per API", coderAPI)
	}
	tools, err := Tools(coderAPI)
	if err != nil {
		return sc, fmt.Errorf("demo scenario: %w", err)
	}
	// The finding sits on the line the coder fixed, inside the change's
	// diff: in github mode it becomes an inline comment, its thread.
	const domain, file, title = "general_polish", "calc.go", "No test with negative numbers"
	id := prompts.FindingID(domain, file, title)
	fixed := strings.Replace(files["calc.go"], "return a - b", "return a + b", 1)
	const negative = "func TestAddNegative(t *testing.T) {\n\tif got := Add(-2, -3); got != -5 {\n\t\tt.Fatalf(\"Add(-2, -3) = %d, want -5\", got)\n\t}\n}\n\n"
	tested := strings.Replace(files["calc_test.go"], "func TestAdd(t *testing.T) {", negative+"func TestAdd(t *testing.T) {", 1)
	coder := []modelserver.Turn{
		{Text: "Let me run the tests first to see what fails.", Tools: []modelserver.ToolCall{tools.Shell("demo-test-1", "go test ./...")}},
		{Text: "TestAdd fails: Add(2, 3) returns -1. Let me read calc.go.", Tools: []modelserver.ToolCall{tools.Read("demo-read-1", "calc.go")}},
		{Text: "Add subtracts instead of adding. Fixing it.", Tools: []modelserver.ToolCall{tools.Edit("demo-edit-1", "calc.go", "\treturn a - b\n", "\treturn a + b\n", fixed)}},
		{Tools: []modelserver.ToolCall{tools.Shell("demo-test-2", "go test ./...")}},
		{Text: "Fixed: Add now returns a + b, and `go test ./...` passes."},
		{Text: "The reviewer wants a test with negative numbers. Let me read the test file.", Tools: []modelserver.ToolCall{tools.Read("demo-read-2", "calc_test.go")}},
		{Tools: []modelserver.ToolCall{tools.Edit("demo-edit-2", "calc_test.go", "func TestAdd(t *testing.T) {\n", negative+"func TestAdd(t *testing.T) {\n", tested)}},
		{Tools: []modelserver.ToolCall{tools.Shell("demo-test-3", "go test ./...")}},
		// The coder's fix turn answers the finding under the reply contract.
		{Text: "Added TestAddNegative; `go test ./...` passes.\n\n" + id + ": fixed - added TestAddNegative, which adds two negative numbers"},
	}
	round1, err := json.Marshal(map[string]any{
		"verdict": "request_changes",
		"summary": "The fix is right: Add now adds. The tests only cover positive numbers.",
		"findings": []map[string]any{{
			"severity": "medium", "domain": domain, "file": file, "line": 6, "title": title,
			"detail":     "TestAdd checks Add(2, 3) only; a sign error would go unnoticed with negative numbers.",
			"suggestion": "Add a test case with negative operands.",
		}},
	})
	if err != nil {
		return sc, fmt.Errorf("demo scenario: %w", err)
	}
	round2, err := json.Marshal(map[string]any{
		"verdict":  "approve",
		"summary":  "TestAddNegative covers negative operands; nothing else to change.",
		"findings": []any{},
		"resolved": []string{id},
	})
	if err != nil {
		return sc, fmt.Errorf("demo scenario: %w", err)
	}
	// One script per review round, round 2 first: its request, whether the
	// seat's session is resumed or started afresh, holds "round 2".
	reviewer := []modelserver.Script{
		{Match: "round 2", Turns: []modelserver.Turn{{Text: "```json\n" + string(round2) + "\n```"}}},
		{Turns: []modelserver.Turn{{Text: "```json\n" + string(round1) + "\n```"}}},
	}
	coderScripts, reviewerScripts := sc.Scripts(coderAPI), sc.Scripts(reviewerAPI)
	if coderScripts == nil || reviewerScripts == nil {
		return sc, fmt.Errorf("demo scenario: unknown model API %q or %q", coderAPI, reviewerAPI)
	}
	*coderScripts = []modelserver.Script{{Turns: coder}}
	*reviewerScripts = reviewer
	return sc, sc.Validate()
}

// CoderTools are a coder's actions in the tool shapes of the CLI that
// calls one model API, as scripted tool calls. File names are relative to
// the coder's working directory.
type CoderTools struct {
	// Shell runs cmd.
	Shell func(id, cmd string) modelserver.ToolCall
	// Read reads file.
	Read func(id, file string) modelserver.ToolCall
	// Write creates file with content.
	Write func(id, file, content string) modelserver.ToolCall
	// Edit replaces old by new in file, whose whole new content is whole.
	// old and new are whole lines, each ending in a newline.
	Edit func(id, file, old, new, whole string) modelserver.ToolCall
}

// Tools returns the coder's tools for the model API api (modelserver's
// name: modelserver.APIAnthropic, APIOpenAI, APIGemini): claude's Bash,
// Read, Write and Edit; gemini's run_shell_command, read_file and
// write_file; codex's exec_command and apply_patch. An unknown API is an
// error.
func Tools(api string) (CoderTools, error) {
	switch api {
	case modelserver.APIAnthropic:
		return CoderTools{
			Shell: func(id, cmd string) modelserver.ToolCall {
				return modelserver.ToolCall{ID: id, Name: "Bash", Input: map[string]any{"command": cmd, "description": "Run the tests"}}
			},
			Read: func(id, file string) modelserver.ToolCall {
				return modelserver.ToolCall{ID: id, Name: "Read", Input: map[string]any{"file_path": "{{workdir}}/" + file}}
			},
			Write: func(id, file, content string) modelserver.ToolCall {
				return modelserver.ToolCall{ID: id, Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/" + file, "content": content}}
			},
			Edit: func(id, file, old, new, _ string) modelserver.ToolCall {
				return modelserver.ToolCall{ID: id, Name: "Edit", Input: map[string]any{"file_path": "{{workdir}}/" + file,
					"old_string": strings.TrimSuffix(old, "\n"), "new_string": strings.TrimSuffix(new, "\n")}}
			},
		}, nil
	case modelserver.APIGemini:
		write := func(id, file, content string) modelserver.ToolCall {
			return modelserver.ToolCall{ID: id, Name: "write_file", Input: map[string]any{"file_path": "{{workdir}}/" + file, "content": content}}
		}
		return CoderTools{
			Shell: func(id, cmd string) modelserver.ToolCall {
				return modelserver.ToolCall{ID: id, Name: "run_shell_command", Input: map[string]any{"command": cmd, "description": "Run the tests"}}
			},
			Read: func(id, file string) modelserver.ToolCall {
				return modelserver.ToolCall{ID: id, Name: "read_file", Input: map[string]any{"file_path": "{{workdir}}/" + file}}
			},
			Write: write,
			Edit: func(id, file, _, _, whole string) modelserver.ToolCall {
				return write(id, file, whole)
			},
		}, nil
	case modelserver.APIOpenAI:
		patch := func(id, body string) modelserver.ToolCall {
			return modelserver.ToolCall{ID: id, Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n" + body + "*** End Patch\n"}}
		}
		return CoderTools{
			Shell: func(id, cmd string) modelserver.ToolCall {
				return modelserver.ToolCall{ID: id, Name: "exec_command", Input: map[string]any{"cmd": cmd}}
			},
			Read: func(id, file string) modelserver.ToolCall {
				return modelserver.ToolCall{ID: id, Name: "exec_command", Input: map[string]any{"cmd": "cat " + file}}
			},
			Write: func(id, file, content string) modelserver.ToolCall {
				return patch(id, "*** Add File: "+file+"\n"+prefixed("+", content))
			},
			Edit: func(id, file, old, new, _ string) modelserver.ToolCall {
				return patch(id, "*** Update File: "+file+"\n@@\n"+prefixed("-", old)+prefixed("+", new))
			},
		}, nil
	}
	return CoderTools{}, fmt.Errorf("demo: no coder tools for the model API %q", api)
}

// prefixed is each line of text with prefix before it.
func prefixed(prefix, text string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if line != "" {
			b.WriteString(prefix + line)
		}
	}
	return b.String()
}

var files = map[string]string{
	"go.mod": "module example.com/calc\n\ngo 1.21\n",
	"calc.go": `// Package calc does arithmetic.
package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return a - b
}
`,
	"calc_test.go": `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %d, want 5", got)
	}
}
`,
}

// Repo creates the demo repository in dir (which must not exist or be
// empty) with one commit, and returns it.
func Repo(ctx context.Context, dir string, env []string) (git.Repo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return git.Repo{}, fmt.Errorf("demo repository: %w", err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return git.Repo{}, fmt.Errorf("demo repository: %w", err)
		}
	}
	repo := git.Repo{Dir: dir, Env: env}
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main"},
		{"config", "user.name", "Demo User"},
		{"config", "user.email", "demo@example.com"},
		{"add", "--all"},
		{"commit", "--quiet", "-m", "calc: add Add"},
	} {
		if _, err := repo.Run(ctx, args...); err != nil {
			return git.Repo{}, fmt.Errorf("demo repository: %w", err)
		}
	}
	return repo, nil
}
