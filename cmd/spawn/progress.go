package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/infinite-improbability-drive/spawn/runners"
)

// narrate returns an event handler that tells a person, one line per
// event, what the agent is doing: what it says, which tools it calls, and
// which calls failed or were refused.
func narrate(w io.Writer) func(runners.Event) {
	return func(ev runners.Event) {
		switch ev.Kind {
		case runners.KindInit:
			fmt.Fprintf(w, "  started %s session %s (%s)\n", ev.Init.Model, ev.Init.SessionID, ev.Init.PermissionMode)
		case runners.KindText:
			fmt.Fprintf(w, "  says:   %s\n", firstLine(ev.Text))
		case runners.KindToolUse:
			fmt.Fprintf(w, "  tool:   %s %s\n", ev.ToolUse.Name, toolSummary(ev.ToolUse.Input))
		case runners.KindToolResult:
			if ev.ToolResult.IsError {
				fmt.Fprintf(w, "  failed: %s\n", firstLine(ev.ToolResult.Content))
			}
		case runners.KindRetry:
			fmt.Fprintf(w, "  retry:  model API error %d, attempt %d of %d\n", ev.Retry.ErrorStatus, ev.Retry.Attempt, ev.Retry.MaxRetries)
		case runners.KindResult:
			for _, d := range ev.Result.Denials {
				fmt.Fprintf(w, "  denied: %s %s\n", d.Tool, toolSummary(d.Input))
			}
		}
	}
}

// toolSummary picks the telling field of a tool's input.
func toolSummary(input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url"} {
		if v, ok := m[k].(string); ok {
			return firstLine(v)
		}
	}
	return ""
}
