package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
)

// readOutputs parses $GITHUB_OUTPUT's delimited format.
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]string{}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		name, delim, ok := strings.Cut(lines[i], "<<")
		if !ok {
			continue
		}
		var v []string
		for i++; i < len(lines) && lines[i] != delim; i++ {
			v = append(v, lines[i])
		}
		out[name] = strings.Join(v, "\n")
	}
	return out
}

// TestActionInGitHubModeOpensAPullRequest is the action's step in github
// mode, as the issue-to-PR example runs it: the real claude and gemini
// under the scripted model, the fake GitHub as origin and API, the token
// in SPAWN_GITHUB_TOKEN as action.yml passes it. The pull request's URL is
// an output, the summary links it, and the token is masked first and
// printed nowhere else.
func TestActionInGitHubModeOpensAPullRequest(t *testing.T) {
	claude, gemini := testenv.Claude(t), testenv.Gemini(t)
	const token = "ghp_canary_action_5d1e77a0c3"
	gh := githubfake.New(t)
	require.NoError(t, gh.AddUser("spawn-bot", token, githubfake.PermissionWrite))
	repo := testenv.Repo(t)
	require.NoError(t, gh.AddRepo("acme", "calc", "main", githubfake.SeedFrom(repo)))
	testenv.Git(t, repo, "remote", "add", "origin", gh.RemoteURL("acme", "calc"))
	testenv.Git(t, repo, "fetch", "--quiet", "origin")

	srv := testenv.ModelServer(t, modelserver.Scenario{
		Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
			{Text: "Writing hello.txt.", Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}}}},
			{Text: "Created hello.txt."},
		}}},
		Gemini: []modelserver.Script{{Turns: []modelserver.Turn{{Text: "```json\n{\"verdict\": \"approve\", \"summary\": \"fine\", \"findings\": [], \"resolved\": []}\n```"}}}},
	})
	genv, err := srv.GeminiEnv(t.TempDir())
	require.NoError(t, err)

	runner := t.TempDir()
	config := filepath.Join(runner, "spawn-team.toml")
	require.NoError(t, os.WriteFile(config, []byte("[github]\nmin_write_interval = \"0s\"\n"), 0o644))
	event := filepath.Join(runner, "event.json")
	require.NoError(t, os.WriteFile(event, []byte(`{"action":"labeled","issue":{"number":3,"title":"Create hello.txt saying hi","body":"One line."},"label":{"name":"spawn"}}`), 0o644))
	files := map[string]string{"GITHUB_OUTPUT": "output.txt", "GITHUB_STEP_SUMMARY": "summary.md"}
	env := append(testenv.Env(t, srv.ClaudeEnv()...), genv...)
	env = append(env,
		"SPAWN_CLAUDE_COMMAND="+claude, "SPAWN_GEMINI_COMMAND="+gemini,
		"GITHUB_REPOSITORY=acme/calc", "GITHUB_API_URL="+gh.URL(), "SPAWN_GITHUB_TOKEN="+token,
		"GITHUB_EVENT_PATH="+event, "RUNNER_TEMP="+runner,
		"INPUT_MODE=github", "INPUT_CONFIG="+config, "INPUT_TASK=",
	)
	for k, v := range files {
		env = append(env, k+"="+filepath.Join(runner, v))
	}
	t.Chdir(repo)

	r := spawnMain(t, env, "", "action")
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "::add-mask::"), "the masks come first")
	assert.Equal(t, 1, strings.Count(r.stdout, token), "the token is only in its mask")
	assert.Contains(t, r.stdout, "::add-mask::"+token+"\n")
	assert.NotContains(t, r.stderr, token)

	prs := gh.PullRequests("acme", "calc")
	require.Len(t, prs, 1)
	out := readOutputs(t, filepath.Join(runner, "output.txt"))
	assert.Equal(t, "approved", out["verdict"])
	assert.Equal(t, "0", out["exit-code"])
	assert.Equal(t, "1", out["rounds"])
	assert.Equal(t, prs[0].Head, out["branch"])
	assert.Contains(t, out["pr-url"], "/pull/")
	assert.FileExists(t, out["record"])
	summary, err := os.ReadFile(filepath.Join(runner, "summary.md"))
	require.NoError(t, err)
	assert.Contains(t, string(summary), ": approved (exit 0)")
	assert.Contains(t, string(summary), "| pull request | "+out["pr-url"]+" |")
	assert.Contains(t, string(summary), "| task | Create hello.txt saying hi |")
	assert.NotContains(t, string(summary), token)

	// The github-mode record and its events keep the contract.
	record, events := compileSchemasForTest(t)
	validateFile(t, record, out["record"])
	b, err := os.ReadFile(filepath.Join(filepath.Dir(out["record"]), "events.ndjson"))
	require.NoError(t, err)
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		require.NoError(t, err)
		assert.NoError(t, events.Validate(doc), "events.ndjson line %d: %s", i+1, line)
	}
}

// compileSchemasForTest compiles the shipped record and events schemas.
func compileSchemasForTest(t *testing.T) (record, events *jsonschema.Schema) {
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
	events, err = c.Compile(observability.EventsSchemaURL)
	require.NoError(t, err)
	return record, events
}

func validateFile(t *testing.T, s *jsonschema.Schema, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	assert.NoError(t, s.Validate(doc), path)
}
