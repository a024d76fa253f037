package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// Prepare does not ask git whether a branch name spawn makes is valid: the
// name is valid by construction. git agrees, for tasks made to break it.
func TestMadeBranchNamesAreValid(t *testing.T) {
	repo := git.Repo{Dir: testenv.Repo(t), Env: testenv.Env(t)}
	tasks := []string{
		"", "   ", "...", "fix the bug", "Fix: the /bug/ in ../x.lock", "refactor foo.lock",
		"@{upstream} ~1 ^2 :3 ?*[", "a\\b", "-leading dash", "trailing dot.", "ünïcödé only",
		"日本語のタスク", "x//y", "emoji 🎉 party", strings.Repeat("long words ", 20), "--", "HEAD",
	}
	for _, task := range tasks {
		name := "spawn/20261123-122357-0af3/" + slug(task)
		if !repo.ValidBranchName(context.Background(), name) {
			t.Errorf("slug(%q) makes %q, which git refuses as a branch name", task, name)
		}
	}
}

// A branch's slug is the task's first words, whole: it is cut between
// words, never inside one.
func TestSlugsAreCutBetweenWords(t *testing.T) {
	for task, want := range map[string]string{
		"create hello.txt saying hi":                   "create-hello-txt-saying-hi",
		"Fix the failing test in calc.go":              "fix-the-failing-test-in-calc-go",
		"add a /healthz endpoint that returns 200 now": "add-a-healthz-endpoint-that",
		"Fix: the /bug/ in ../x.lock":                  "fix-the-bug-in-x-lock",
		strings.Repeat("a", 40) + " b":                 strings.Repeat("a", 32),
		"   ":                                          "task",
		"日本語のタスク":                                      "task",
	} {
		got := slug(task)
		if got != want {
			t.Errorf("slug(%q) = %q, want %q", task, got, want)
		}
		if len(got) > maxSlug {
			t.Errorf("slug(%q) = %q, longer than %d", task, got, maxSlug)
		}
	}
}
