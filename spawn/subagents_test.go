package spawn

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// The coder hands work to twenty subagents in one answer: claude starts
// them all at once, each asking the model through the relay with the
// coder's key. The relay has at most 16 of a seat's requests in flight;
// the others wait for a slot and do not fail: every subagent is answered,
// their requests overlap, and the coder's work lands.
func TestClaudesSubagentsWorkSideBySideThroughTheRelay(t *testing.T) {
	requireBwrap(t)
	const n = 20
	sub := func(k int) string { return fmt.Sprintf("subagent-%02d task", k) }
	var scripts []modelserver.Script
	var agents []modelserver.ToolCall
	for k := range n {
		scripts = append(scripts, modelserver.Script{Match: sub(k), Turns: []modelserver.Turn{
			{Text: fmt.Sprintf("Subagent %02d finished.", k), Delay: modelserver.Duration(time.Second)},
		}})
		agents = append(agents, modelserver.ToolCall{ID: fmt.Sprintf("agent%02d", k), Name: "Agent", Input: map[string]any{
			"description": fmt.Sprintf("helper %02d", k), "prompt": sub(k) + ": say that you are finished.",
			"subagent_type": "general-purpose", "run_in_background": false,
		}})
	}
	scripts = append(scripts, modelserver.Script{Turns: []modelserver.Turn{
		{Tools: agents},
		{Tools: []modelserver.ToolCall{write("w", "work.txt", "work\n")}},
		{Text: "Done."},
	}})
	r := runSolo(t, modelserver.Scenario{Anthropic: scripts}, "add work.txt with help", nil)
	require.NoError(t, r.err)
	assert.Equal(t, "work", testenv.Git(t, r.repo, "show", r.rec.Branch+":work.txt"))

	var subs []modelserver.Request
	for _, req := range r.srv.Requests() {
		if req.Main && req.Script >= 0 && req.Script < n {
			subs = append(subs, req)
		}
	}
	answered := map[int]bool{}
	for _, req := range subs {
		if req.Status == 200 {
			answered[req.Script] = true
		}
	}
	assert.Len(t, answered, n, "every subagent was answered")
	peak := 0
	for _, a := range subs {
		at := 0
		for _, b := range subs {
			if !b.Start.After(a.Start) && (b.End.IsZero() || b.End.After(a.Start)) {
				at++
			}
		}
		peak = max(peak, at)
	}
	assert.Greater(t, peak, 1, "the subagents asked the model side by side")
	assert.LessOrEqual(t, peak, 16, "the subagents' requests at the model at once")
}
