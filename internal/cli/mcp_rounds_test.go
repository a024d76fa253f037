package cli

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/mcpserver"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/prompts"
)

// review is a reviewer's scripted answer: the verdict, the ids of the
// findings it resolves, and new findings as {severity, file, title}.
func review(verdict string, resolved []string, findings ...[3]string) string {
	type finding struct {
		Severity   string `json:"severity"`
		Domain     string `json:"domain"`
		File       string `json:"file"`
		Line       int    `json:"line"`
		Title      string `json:"title"`
		Detail     string `json:"detail"`
		Suggestion string `json:"suggestion"`
	}
	doc := map[string]any{"verdict": verdict, "summary": "scripted review of the change", "findings": []finding{}, "resolved": resolved}
	var fs []finding
	for i, f := range findings {
		fs = append(fs, finding{f[0], "technical_feasibility", f[1], 10 + i, f[2],
			"Total returns one more than the sum for every input, the empty slice included, because the accumulator starts at one; callers that compare totals, such as the invoice check, will be off by one.",
			"Start the accumulator at zero and add a table test with nil, one element and several elements."})
	}
	if fs != nil {
		doc["findings"] = fs
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return "Here is my review.\n```json\n" + string(b) + "\n```\n"
}

// A three-round pingpong run driven over MCP: its result is small enough
// for a host's context (the size is logged), and says what was found and
// resolved.
func TestMCPResultOfAThreeRoundRun(t *testing.T) {
	repo := testenv.Repo(t)
	gemini := testenv.Gemini(t)
	coder := modelserver.Script{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/calc.go", "content": "package calc\n\n// Total sums xs.\nfunc Total(xs []int) int {\n\tt := 1\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n}\n"}}}},
		{Text: "Added Total."},
		{Tools: []modelserver.ToolCall{{ID: "e1", Name: "Edit", Input: map[string]any{"file_path": "{{workdir}}/calc.go", "old_string": "t := 1", "new_string": "t := 0"}}}},
		{Text: "Fixed the initial value."},
		{Tools: []modelserver.ToolCall{{ID: "e2", Name: "Edit", Input: map[string]any{"file_path": "{{workdir}}/calc.go", "old_string": "// Total sums xs.", "new_string": "// Total returns the sum of xs."}}}},
		{Text: "Reworded the comment."},
	}}
	r1 := review("request_changes", nil, [3]string{"high", "calc.go", "Total starts from one"}, [3]string{"low", "calc.go", "The comment is vague"})
	id := func(title string) string { return prompts.FindingID("technical_feasibility", "calc.go", title) }
	r2 := review("request_changes", []string{id("Total starts from one")}, [3]string{"medium", "calc.go", "Total has no test"})
	r3 := review("approve", []string{id("The comment is vague"), id("Total has no test")})
	var reviewer []modelserver.Script
	for k, a := range []string{r3, r2, r1} {
		reviewer = append(reviewer, modelserver.Script{Match: fmt.Sprintf("round %d", 3-k), Turns: []modelserver.Turn{{Text: a}}})
	}
	env, srv := mcpEnv(t, modelserver.Scenario{Anthropic: []modelserver.Script{coder}, Gemini: reviewer}, repo)
	genv, err := srv.GeminiEnv(proc.Getenv(env, "HOME"))
	require.NoError(t, err)
	env = append(env, "SPAWN_GEMINI_COMMAND="+gemini, "GEMINI_CLI_NO_RELAUNCH=true")
	env = append(env, genv...)
	cs, _ := mcpClient(t, env, repo)

	res := call(t, cs, &mcp.CallToolParams{Name: "spawn_run", Arguments: map[string]any{"task": "add Total to package calc", "mode": "pingpong"}}, nil)
	require.False(t, res.IsError, resultText(res))
	var out mcpserver.Result
	require.NoError(t, json.Unmarshal([]byte(resultText(res)), &out))
	t.Logf("spawn_result of a %d-round run: %d bytes of text (~%d tokens); %d open, %d resolved findings, %d commits",
		out.Rounds, len(resultText(res)), len(resultText(res))/4, len(out.OpenFindings), len(out.ResolvedFindings), len(out.Commits))
	assert.Less(t, len(resultText(res)), 80_000, "under 20k tokens")
	assert.NotEmpty(t, out.Commits)
	assert.Equal(t, 3, out.Rounds)
	assert.Equal(t, "approved", out.Verdict)
	assert.Len(t, out.ResolvedFindings, 3)
	assert.Empty(t, out.OpenFindings)
	assert.NotContains(t, resultText(res), "raw_response", "no transcript")
}
