// Package demo builds spawn's offline demonstration: a throwaway repository
// with a small bug, and the scripted model conversation in which the real
// claude CLI finds and fixes it.
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
)

// Task is what the demo asks the coder to do.
const Task = "Fix the failing test in calc.go"

//go:embed scenario.json
var scenarioJSON []byte

// Scenario is the scripted model's side of the demo: run the tests, read
// calc.go, fix it with Edit, run the tests again.
func Scenario() (modelserver.Scenario, error) {
	var sc modelserver.Scenario
	dec := json.NewDecoder(bytes.NewReader(scenarioJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return sc, fmt.Errorf("demo scenario: %w", err)
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
