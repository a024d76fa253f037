package runners

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process's own usage: a cumulative result less its session's earlier
// total, a per-process result as it is, and never a negative count.
func TestResultOwnUsage(t *testing.T) {
	total := Usage{InputTokens: 50, CachedTokens: 10, OutputTokens: 25}
	for _, tc := range []struct {
		name   string
		res    Result
		before Usage
		want   Usage
	}{
		{name: "a resumed codex thread counts from its total before",
			res: Result{Usage: Usage{InputTokens: 90, CachedTokens: 18, OutputTokens: 45}, UsageCumulative: true}, before: total,
			want: Usage{InputTokens: 40, CachedTokens: 8, OutputTokens: 20}},
		{name: "a new codex thread: all of its total",
			res:  Result{Usage: total, UsageCumulative: true},
			want: total},
		{name: "a thread restarted (a count went down): a fresh total, not a negative one",
			res: Result{Usage: Usage{InputTokens: 60, CachedTokens: 4, OutputTokens: 30}, UsageCumulative: true}, before: total,
			want: Usage{InputTokens: 60, CachedTokens: 4, OutputTokens: 30}},
		{name: "a CLI's cost counts from its total too",
			res: Result{Usage: Usage{InputTokens: 90, OutputTokens: 45, CostUSD: 0.5}, UsageCumulative: true}, before: Usage{InputTokens: 50, OutputTokens: 25, CostUSD: 0.2},
			want: Usage{InputTokens: 40, OutputTokens: 20, CostUSD: 0.3}},
		{name: "claude and gemini report each process's own use",
			res: Result{Usage: Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.01}}, before: total,
			want: Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.01}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.res.Own(tc.before)
			assert.Equal(t, tc.want.InputTokens, got.InputTokens)
			assert.Equal(t, tc.want.CachedTokens, got.CachedTokens)
			assert.Equal(t, tc.want.OutputTokens, got.OutputTokens)
			assert.InDelta(t, tc.want.CostUSD, got.CostUSD, 1e-12)
		})
	}
}

// A tool result written as JSON holds its text, whether it was kept as
// the CLI wrote it or made from a string, and reads back the same.
func TestOutputIsWrittenAsItsText(t *testing.T) {
	var kept Output
	require.NoError(t, json.Unmarshal([]byte(`"caf\u00e9 \"x\"\n"`), &kept))
	for _, o := range []Output{kept, OutputOf("café \"x\"\n")} {
		b, err := json.Marshal(ToolResult{ToolUseID: "t1", Content: o})
		require.NoError(t, err)
		var back ToolResult
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, "café \"x\"\n", back.Content.String(), string(b))
	}
}
