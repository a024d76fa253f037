package spawn

import (
	"context"
	"fmt"
	"strings"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// initSubmodules gives the sandbox the files of the repository's
// submodules (sandbox.InitSubmodules) and warns, naming them, about those
// it could not initialise: the coder sees them as empty folders. Failing
// to initialise is a warning, never the end of the run.
func (r *run) initSubmodules(ctx context.Context) {
	subs, err := r.sb.InitSubmodules(ctx)
	if err != nil {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: fmt.Sprintf("cannot initialise the submodules in the sandbox (%v); they are empty folders there", err)})
	}
	var missing []string
	for _, s := range subs {
		if !s.Initialised {
			missing = append(missing, s.Path)
		}
	}
	if len(missing) > 0 {
		r.emit(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("the submodules %s are not initialised in your checkout (or lack the recorded commit), so they are empty folders in the sandbox; run `git submodule update --init` to give the next run their files", strings.Join(missing, ", "))})
	}
}

// noteLeftovers warns, once each, about work in submodule folders that
// the branch cannot hold (the git helper's Leftovers), so that it is never
// lost silently.
func (r *run) noteLeftovers(left []string) {
	for _, l := range left {
		r.mu.Lock()
		seen := r.warned[l]
		if r.warned == nil {
			r.warned = map[string]bool{}
		}
		r.warned[l] = true
		r.mu.Unlock()
		if !seen {
			r.emit(observability.Event{Kind: observability.EventNote, Text: l})
		}
	}
}
