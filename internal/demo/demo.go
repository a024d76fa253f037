// Package demo builds spawn's offline demonstration: a throwaway repository
// with a small bug, and the scripted model conversations in which the real
// claude CLI finds and fixes it and the real gemini CLI reviews the fix.
package demo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/prompts"
)

// Task is what the demo asks the coder to do.
const Task = "Fix the failing test in calc.go"

//go:embed scenario.json
var scenarioJSON []byte

// Scenario is the scripted models' side of the demo. The coder (claude)
// runs the tests, reads calc.go, fixes it with Edit and runs the tests
// again. The reviewer (gemini) asks for a test with negative numbers; the
// coder, resumed, adds it; the reviewer approves.
func Scenario() (modelserver.Scenario, error) {
	var sc modelserver.Scenario
	dec := json.NewDecoder(bytes.NewReader(scenarioJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return sc, fmt.Errorf("demo scenario: %w", err)
	}
	// The finding sits on the line the coder fixed, inside the change's
	// diff: in github mode it becomes an inline comment, its thread.
	const domain, file, title = "general_polish", "calc.go", "No test with negative numbers"
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
		"resolved": []string{prompts.FindingID(domain, file, title)},
	})
	if err != nil {
		return sc, fmt.Errorf("demo scenario: %w", err)
	}
	// The coder's fix turn answers the finding under the reply contract.
	coder := &sc.Anthropic[len(sc.Anthropic)-1]
	last := &coder.Turns[len(coder.Turns)-1]
	last.Text += "\n\n" + prompts.FindingID(domain, file, title) + ": fixed - added TestAddNegative, which adds two negative numbers"
	// One script per review round, round 2 first: its request, whether the
	// seat's session is resumed or started afresh, holds "round 2".
	sc.Gemini = []modelserver.Script{
		{Match: "round 2", Turns: []modelserver.Turn{{Text: "```json\n" + string(round2) + "\n```"}}},
		{Turns: []modelserver.Turn{{Text: "```json\n" + string(round1) + "\n```"}}},
	}
	return sc, sc.Validate()
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
