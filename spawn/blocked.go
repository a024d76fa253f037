package spawn

import (
	"bytes"
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
	calls map[string]*runners.ToolUse // tool call id -> the call, until its result
}

// event looks at one event of the agent's stream. A call is described
// only when it was refused, and forgotten when its result comes: a session
// makes thousands.
func (b *blocked) event(e runners.Event) {
	switch e.Kind {
	case runners.KindToolUse:
		b.mu.Lock()
		if b.calls == nil {
			b.calls = map[string]*runners.ToolUse{}
		}
		b.calls[e.ToolUse.ID] = e.ToolUse
		b.mu.Unlock()
	case runners.KindToolResult:
		b.mu.Lock()
		tu := b.calls[e.ToolResult.ToolUseID]
		delete(b.calls, e.ToolResult.ToolUseID)
		b.mu.Unlock()
		lines := refusals(e.ToolResult.Content)
		if len(lines) == 0 {
			return
		}
		call := ""
		if tu != nil {
			call = describeCall(tu)
		}
		b.r.blocked(b.who, call, lines)
	}
}

// refusals are the distinct lines of out that show a refusal, at most
// maxRefusalLines.
func refusals(out runners.Output) []string {
	// Every tool output of the session passes here: the quick scan reads
	// it as the CLI wrote it, undecoded (the starts of the phrases hold no
	// character JSON escapes: see runners.Output.Searchable), and only the
	// few outputs that may match are decoded for the expression, which
	// backtracks over the whole output.
	if !mayRefuse(out.Searchable()) {
		return nil
	}
	return refusalLines(out.String())
}

// refusalLines are the distinct lines of out that show a refusal, at most
// maxRefusalLines.
func refusalLines(out string) []string {
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

// refusalStarts are the starts of sandboxRefusal's phrases, in lower case:
// a text it matches holds one of them in some mix of ASCII cases (none of
// their letters has a case fold outside ASCII, as s and k have).
var refusalStarts = [...]string{"read-only file ", "erof", "operation not permitted", "eperm"}

// refusalAnchors are the bytes of refusalStarts that are rare in text, in
// each case they may have, where they are in the starts, and the starts
// that hold them there: each start has one, in each of its cases.
var refusalAnchors = [...]struct {
	b      byte
	at     int
	starts []string
}{
	{'-', 4, []string{"read-only file "}},
	{'f', 3, []string{"erof"}}, {'F', 3, []string{"erof"}},
	{'p', 1, []string{"operation not permitted", "eperm"}}, {'P', 1, []string{"operation not permitted", "eperm"}},
}

// mayRefuse reports whether s holds, in any mix of ASCII cases, one of
// refusalStarts: false means sandboxRefusal cannot match s. It looks only
// around the anchors, which it finds with bytes.IndexByte, one pass for
// each, without allocating: a tool output of megabytes is read at memory
// speed.
func mayRefuse(s []byte) bool {
	for _, a := range refusalAnchors {
		for i := 0; ; {
			j := bytes.IndexByte(s[i:], a.b)
			if j < 0 {
				break
			}
			j += i
			if j >= a.at {
				for _, start := range a.starts {
					if hasFoldPrefix(s[j-a.at:], start) {
						return true
					}
				}
			}
			i = j + 1
		}
	}
	return false
}

// hasFoldPrefix reports whether s starts with lower, a lower-case ASCII
// string, in any mix of ASCII cases.
func hasFoldPrefix(s []byte, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
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
