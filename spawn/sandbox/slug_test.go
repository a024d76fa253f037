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
