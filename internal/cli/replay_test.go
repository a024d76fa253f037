package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
)

// A replay of something that cannot be replayed says so in one sentence
// and exits 2, having started nothing.
func TestReplayOfWhatCannotBeReplayedIsOneSentenceAndExit2(t *testing.T) {
	repo := testenv.Repo(t)
	env := testenv.Env(t)
	// A finished run made before runs kept their configuration and cassette.
	id := "20261123-093100-ab12"
	rec := observability.New(id, "add the total function", observability.ModePingpong, time.Now())
	rec.Base, rec.Branch, rec.Repo = testenv.Git(t, repo, "rev-parse", "HEAD"), "spawn/"+id+"/add", repo
	rec.Finish(observability.StatusSucceeded, 0, time.Now())
	dir := filepath.Join(repo, ".spawn", "runs", id)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, observability.WriteFile(filepath.Join(dir, "record.json"), rec, nil))

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no run", []string{"replay"}, "spawn replay needs a run"},
		{"two runs", []string{"replay", "a", "b"}, "spawn replay takes one run"},
		{"unknown run", []string{"replay", "20991231"}, "20991231"},
		{"no configuration kept", []string{"replay", id}, "kept no configuration"},
		{"unknown cli", []string{"replay", id, "--clod", "/x"}, "clod"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := spawnMain(t, env, "", append(tt.args, "--repo", repo)...)
			assert.Equal(t, 2, res.code, "%s", res.stderr)
			assert.Contains(t, res.stderr, tt.want)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(res.stderr), "\n")+1, "one sentence: %q", res.stderr)
		})
	}
	entries, err := os.ReadDir(filepath.Join(repo, ".spawn", "runs"))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no run was created")
}

// The summary names a run's cassette, and a replay's says how it compares
// with the run and, where it diverged, shows both requests as a diff.
func TestTheSummaryNamesTheCassetteAndTheDivergence(t *testing.T) {
	rec := observability.New("20261123-094100-cd34", "add the total function", observability.ModePingpong, time.Now())
	rec.Repo, rec.Branch = "/r", "spawn/x"
	rec.Cassette = &observability.Cassette{Path: "cassette.jsonl.gz", Bytes: 53 << 10, Exchanges: 7, LimitBytes: 64 << 20}
	rec.Replay = &observability.Replay{Of: "20261123-093100-ab12", Cassette: "/r/.spawn/runs/20261123-093100-ab12/cassette.jsonl.gz",
		Answered: 1, Missed: 1, Unused: 5, OriginalDurationMS: 16910,
		Differences: []string{"the coder seat's request POST /v1/messages matched no recorded request"},
		Divergence: &observability.Divergence{Seat: "coder", Method: "POST", Path: "/v1/messages?beta=true", Seq: 2,
			Diff: "@@ line 40 @@\n-  \"text\": \"Writing calc.go.\"\n+  \"text\": \"Writing calc.go, carefully.\""}}
	rec.Finish(observability.StatusFailed, 4, time.Now())
	out := summary(rec)
	assert.Contains(t, out, "cassette:  /r/.spawn/runs/20261123-094100-cd34/cassette.jsonl.gz (spawn replay 20261123-094100-cd34 runs it again without a model)")
	assert.Contains(t, out, "replay of: 20261123-093100-ab12")
	assert.Contains(t, out, "same:      no")
	assert.Contains(t, out, "match: no (1 answered, 1 not in the cassette, 5 recorded never asked for)")
	assert.Contains(t, out, "the coder seat's POST /v1/messages?beta=true; - the recorded request 2, + the replay's")
	assert.Contains(t, out, "+  \"text\": \"Writing calc.go, carefully.\"")
}
