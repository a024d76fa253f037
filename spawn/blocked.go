package spawn

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// refusal matches what a sandbox's refusal looks like in a tool's output:
// a write to a read-only path, an operation the agent holds no capability
// for.
var sandboxRefusal = lazy.MustCompile(`(?i)read-only file system|\bEROFS\b|operation not permitted|\bEPERM\b`)

// Bounds on what the record keeps of the sandbox's refusals.
const (
	maxRefusalLines    = 8  // lines quoted per tool call
	maxRefusalFindings = 20 // findings per run; then one note
)

// blocked watches one agent session's tool calls for the sandbox's
// refusals, and puts each call that was refused on the record as a
// sandbox_blocked security finding: nothing happened, but an agent that
// tries to write where it may not, or to unmount its sandbox, was probably
// prompt-injected, and the user must see it.
type blocked struct {
	r     *run
	who   agent
	mu    sync.Mutex
	calls map[string]string // tool call id -> what it was
}

// event looks at one event of the agent's stream.
func (b *blocked) event(e runners.Event) {
	switch e.Kind {
	case runners.KindToolUse:
		b.mu.Lock()
		if b.calls == nil {
			b.calls = map[string]string{}
		}
		b.calls[e.ToolUse.ID] = describeCall(e.ToolUse)
		b.mu.Unlock()
	case runners.KindToolResult:
		lines := refusals(e.ToolResult.Content)
		if len(lines) == 0 {
			return
		}
		b.mu.Lock()
		call := b.calls[e.ToolResult.ToolUseID]
		b.mu.Unlock()
		b.r.blocked(b.who, call, lines)
	}
}

// refusals are the distinct lines of out that show a refusal, at most
// maxRefusalLines.
func refusals(out string) []string {
	if !sandboxRefusal.MatchString(out) {
		return nil
	}
	var lines []string
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || seen[l] || !sandboxRefusal.MatchString(l) {
			continue
		}
		seen[l] = true
		lines = append(lines, oneLine(l))
		if len(lines) == maxRefusalLines {
			break
		}
	}
	return lines
}

// describeCall names a tool call for a finding: the tool and its command
// or path.
func describeCall(tu *runners.ToolUse) string {
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
	}
	if json.Unmarshal(tu.Input, &in) == nil {
		for _, s := range []string{in.Command, in.FilePath, in.Path} {
			if s != "" {
				return fmt.Sprintf("%s `%s`", tu.Name, oneLine(s))
			}
		}
	}
	return tu.Name
}

// blocked records that who's call was refused by its sandbox.
func (r *run) blocked(who agent, call string, lines []string) {
	r.mu.Lock()
	r.refused++
	n := r.refused
	r.mu.Unlock()
	switch {
	case n > maxRefusalFindings+1:
		return
	case n == maxRefusalFindings+1:
		r.emit(observability.Event{Kind: observability.EventNote, Text: fmt.Sprintf("the sandbox refused more of %s's calls; the transcripts in %s have them all", who.cli, r.dir.Dir)})
		return
	}
	if call == "" {
		call = "a tool call"
	}
	r.security(who, observability.FindingSandboxBlocked, observability.SeverityMedium, r.sb.Path,
		fmt.Sprintf("the sandbox refused %s (%s) %s: %s", who.cli, who.role, call, strings.Join(lines, "; ")),
		"Nothing outside the sandbox changed. An agent that writes where it may not, or tries to leave its sandbox, was probably prompt-injected: look for the instruction in the task, the repository or the tool output before you merge.")
}
