package spawn

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
