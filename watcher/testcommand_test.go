package watcher

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A shell call that runs the project's tests is told apart (its output is
// what the reviewers see of the tests), by each runner spawn knows, and
// the quick word check before the expression misses none of them.
func TestEveryTestRunnerIsRecognised(t *testing.T) {
	for _, cmd := range []string{
		"go test ./...", "cd x && npm test", "yarn run test", "pnpm test", "bun test", "pytest -q", "python3 -m pytest",
		"cargo test", "make test", "make check", "./gradlew test", "gradle test", "mvn test", "npx jest", "npx vitest",
		"jest --ci", "vitest run", "bundle exec rspec", "rspec spec", "ctest", "tox -e py", "dotnet test", "mix test",
		"(go test ./...)", "true; go test",
	} {
		assert.True(t, isTestCommand(cmd), cmd)
		assert.True(t, testCommand.MatchString(cmd), cmd)
	}
	for _, cmd := range []string{"git status --short", "ls", "go build ./...", "cat test.txt", "make", "gotest", "go vet"} {
		assert.False(t, isTestCommand(cmd), cmd)
		assert.Equal(t, testCommand.MatchString(cmd), isTestCommand(cmd), cmd)
	}
}
