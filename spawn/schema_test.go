package spawn

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// conforms checks that the record.json and every line of events.ndjson a
// real run wrote validate against the shipped schemas.
func conforms(t *testing.T, repo, id string) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for url, b := range map[string][]byte{observability.RecordSchemaURL: observability.RecordSchema(), observability.EventsSchemaURL: observability.EventsSchema()} {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		require.NoError(t, err)
		require.NoError(t, c.AddResource(url, doc))
	}
	record, err := c.Compile(observability.RecordSchemaURL)
	require.NoError(t, err)
	event, err := c.Compile(observability.EventsSchemaURL)
	require.NoError(t, err)

	dir := filepath.Join(repo, sandbox.Dir, "runs", id)
	b, err := os.ReadFile(filepath.Join(dir, "record.json"))
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	assert.NoError(t, record.Validate(doc), "record.json")

	f, err := os.Open(filepath.Join(dir, "events.ndjson"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		n++
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
		require.NoError(t, err)
		assert.NoError(t, event.Validate(doc), "events.ndjson line %d: %s", n, sc.Bytes())
	}
	require.NoError(t, sc.Err())
	assert.Greater(t, n, 2, "the run wrote its events")
}

// TestRealRecordsAndEventsMatchTheSchemas validates what real runs wrote
// (the real claude and gemini under the scripted model) against the
// contract hosts and CI read.
func TestRealRecordsAndEventsMatchTheSchemas(t *testing.T) {
	t.Run("solo with a denied command", func(t *testing.T) {
		sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
			{Tools: []modelserver.ToolCall{{ID: "b1", Name: "Bash", Input: map[string]any{"command": "curl https://example.com", "description": "fetch"}}}},
			{Text: "Writing.", Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}}}},
			{Text: "Created hello.txt."},
		}}}}
		r := runSolo(t, sc, "create hello.txt", nil)
		require.NoError(t, r.err)
		conforms(t, r.repo, r.rec.ID)
	})
	t.Run("pingpong fixed and approved", func(t *testing.T) {
		bug := finding("high", "technical_feasibility", "calc.go", 19, "Total starts from one")
		r := runTeam(t, observability.ModePingpong, modelserver.Scenario{
			Anthropic: []modelserver.Script{coderTurns(5)},
			Gemini:    reviewRounds(answer("request_changes", nil, bug), answer("approve", []string{bug.ID})),
		}, nil)
		require.NoError(t, r.err)
		require.Len(t, r.rec.ReviewFeedback, 2)
		conforms(t, r.repo, r.rec.ID)
	})
	t.Run("pingpong not approved", func(t *testing.T) {
		bug := finding("medium", "technical_feasibility", "calc.go", 19, "Total starts from one")
		r := runTeam(t, observability.ModePingpong, modelserver.Scenario{
			Anthropic: []modelserver.Script{coderTurns(5)},
			Gemini:    reviewRounds(answer("request_changes", nil, bug), answer("request_changes", nil, bug)),
		}, func(c *config.Config) { c.Team.MaxIterations = 2 })
		assert.Equal(t, fault.ExitNotApproved, r.exitCode())
		conforms(t, r.repo, r.rec.ID)
	})
}
