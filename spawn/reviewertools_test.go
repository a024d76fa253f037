package spawn

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/demo"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// declaredTools are the function declarations gemini sent with its main
// requests to the model server, sorted, one list per request.
func declaredTools(t *testing.T, srv *modelserver.Server) [][]string {
	t.Helper()
	var out [][]string
	for _, req := range srv.Requests() {
		if req.API != modelserver.APIGemini || !req.Main {
			continue
		}
		var body struct {
			Tools []struct {
				FunctionDeclarations []struct {
					Name string `json:"name"`
				} `json:"functionDeclarations"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(req.Body, &body))
		var names []string
		for _, tool := range body.Tools {
			for _, d := range tool.FunctionDeclarations {
				names = append(names, d.Name)
			}
		}
		slices.Sort(names)
		out = append(out, names)
	}
	return out
}

// reviewerTools are the tools the record says the reviewer was offered.
func reviewerTools(rec *observability.Record) [][]string {
	var out [][]string
	for _, cl := range rec.CommandLines {
		if cl.Role == observability.RoleReviewer {
			tools := slices.Clone(cl.Tools)
			slices.Sort(tools)
			out = append(out, tools)
		}
	}
	return out
}

func TestTheReviewerIsOfferedReadOnlyFileToolsOnly(t *testing.T) {
	r := runTeam(t, observability.ModePingpong, modelserver.Scenario{
		Anthropic: []modelserver.Script{coderTurns(2)},
		Gemini:    []modelserver.Script{reviewScript("", answer("approve", nil))},
	}, nil)
	require.NoError(t, r.err)
	want := []string{"glob", "grep_search", "list_directory", "read_file"}
	assert.Equal(t, [][]string{want}, declaredTools(t, r.srv), "gemini offered the model read-only file tools: no web search, no sub-agent")
	assert.Equal(t, [][]string{want}, reviewerTools(r.rec), "the record lists what the reviewer was offered")
}

func TestTheReviewersToolsFollowTheConfiguration(t *testing.T) {
	r := runTeam(t, observability.ModePingpong, modelserver.Scenario{
		Anthropic: []modelserver.Script{coderTurns(2)},
		Gemini:    []modelserver.Script{reviewScript("", answer("approve", nil))},
	}, func(c *config.Config) {
		c.Runners.Edit("gemini", func(s *runners.Settings) { s.AllowedTools = []string{"read_file", "glob", "google_web_search"} })
		c.Runners.Edit("gemini", func(s *runners.Settings) { s.ExcludedTools = []string{"glob"} })
	})
	require.NoError(t, r.err)
	want := []string{"google_web_search", "read_file"}
	assert.Equal(t, [][]string{want}, declaredTools(t, r.srv))
	assert.Equal(t, [][]string{want}, reviewerTools(r.rec))
}

// A claude reviewer is offered only the built-in tools its allowed rules
// name (Read, Glob, Grep by default): it reads the change with them, and
// no request of its session carries the definitions of claude's other
// tools, which it could not use and which cost bytes in every request.
func TestAClaudeReviewerIsOfferedOnlyItsReadOnlyTools(t *testing.T) {
	sc, err := demo.Scenario(api(t, "codex"), api(t, "claude"))
	require.NoError(t, err)
	round1 := &sc.Anthropic[len(sc.Anthropic)-1]
	read := modelserver.Turn{Tools: []modelserver.ToolCall{{ID: "review-read", Name: "Read", Input: map[string]any{"file_path": "{{workdir}}/calc.go"}}}}
	round1.Turns = append([]modelserver.Turn{read}, round1.Turns...)
	r := runSeated(t, observability.ModePingpong, "codex", []string{"claude"}, sc, nil)
	require.NoError(t, r.err)
	assert.Equal(t, observability.VerdictApproved, r.rec.Verdict)

	// # the reviewer read the file with its Read tool
	var results []modelserver.ToolResultSeen
	var offered [][]string
	for _, req := range r.srv.Requests() {
		if req.API != modelserver.APIAnthropic || !req.Main {
			continue
		}
		results = append(results, req.ToolResults()...)
		var body struct {
			Tools []struct {
				Name  string `json:"name"`
				Defer bool   `json:"defer_loading"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(req.Body, &body))
		var names []string
		for _, tool := range body.Tools {
			if !tool.Defer { // a deferred tool is not shown to the model
				names = append(names, tool.Name)
			}
		}
		slices.Sort(names)
		offered = append(offered, names)
	}
	require.NotEmpty(t, results)
	assert.Equal(t, "Read", results[0].Name)
	assert.False(t, results[0].IsError, results[0].Content)
	assert.Contains(t, results[0].Content, "func Add")

	// # every request offered the reviewer its read-only tools and no other
	want := []string{"Glob", "Grep", "Read"}
	require.Len(t, offered, 3, "round 1's read and answer, round 2's answer")
	for i, names := range offered {
		assert.Equal(t, want, names, "request %d", i+1)
	}
	require.Len(t, reviewerTools(r.rec), 2, "one command line per review round")
	for _, tools := range reviewerTools(r.rec) {
		assert.Equal(t, want, tools, "the record lists what the reviewer was offered")
	}
}
