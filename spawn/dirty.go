package spawn

import (
	"context"
	"fmt"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// maxDirtyNamed is how many uncommitted paths the note names.
const maxDirtyNamed = 3

// dirtyNote is the note for a user's working tree with uncommitted
// changes: which paths (the first few), that the sandbox starts from base
// without them, and, when spawn-team.toml is one of them (spawn init wrote
// it), that its settings apply all the same.
func dirtyNote(ctx context.Context, repo git.Repo, base string) string {
	st, err := repo.Changes(ctx)
	if err != nil || len(st.Paths) == 0 {
		return fmt.Sprintf("%s has uncommitted changes; the sandbox starts from %s without them", repo.Dir, base)
	}
	named := st.Paths[:min(len(st.Paths), maxDirtyNamed)]
	what := strings.Join(named, ", ")
	if more := len(st.Paths) - len(named); more > 0 {
		what += fmt.Sprintf(" and %d more", more)
	}
	msg := fmt.Sprintf("%s has uncommitted changes (%s); the sandbox starts from %s without them", repo.Dir, what, base)
	for _, p := range st.Paths {
		if p == config.File {
			msg += fmt.Sprintf("; the settings in %s apply all the same (commit it to keep it with the repository)", config.File)
			break
		}
	}
	return msg
}
