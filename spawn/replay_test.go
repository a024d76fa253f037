package spawn

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/relay"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// deployCanary is a secret of the user's environment that the coder reads from
// a file of the repository: it must reach no cassette.
const deployCanary = "deployCanary-5e1f9a7c3b2d4e6f"

// recordedPingpong records a two-round pingpong (the real claude coding,
// the real gemini reviewing, under the scripted model): round 1 reads a
// file holding the deployCanary and writes calc.go with a bug, the reviewer
// asks for a fix, round 2 fixes it in the coder's resumed session, the
// reviewer approves.
func recordedPingpong(t *testing.T) *teamRun {
	t.Helper()
	bug := finding("high", "technical_feasibility", "calc.go", 19, "Total starts from one")
	coder := coderTurns(5)
	coder.Turns[0].Tools = append([]modelserver.ToolCall{{ID: "r0", Name: "Read", Input: map[string]any{"file_path": "{{workdir}}/notes.txt"}}}, coder.Turns[0].Tools...)
	r := runTeamIn(t, func() string {
		repo := testenv.Repo(t)
		testenv.WriteFile(t, repo, "notes.txt", "deploy token: "+deployCanary+"\n")
		testenv.Git(t, repo, "add", "notes.txt")
		testenv.Git(t, repo, "commit", "--quiet", "-m", "notes")
		return repo
	}, observability.ModePingpong, modelserver.Scenario{
		Anthropic: []modelserver.Script{coder},
		Gemini:    reviewRounds(answer("request_changes", nil, bug), answer("approve", []string{bug.ID})),
	}, nil, "SPAWN_TEST_DEPLOY_TOKEN="+deployCanary)
	require.NoError(t, r.err)
	require.Equal(t, observability.VerdictApproved, r.rec.Verdict)
	require.Len(t, r.rec.ReviewFeedback, 2)
	return r
}

// replay replays run id of repo with env (no model, no key), with bins
// instead of the run's CLIs.
func replay(t *testing.T, repo, id string, bins map[string]string) (*observability.Record, error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	rec, err := Replay(ctx, ReplayOptions{Ref: id, RepoDir: repo, Env: testenv.Env(t), Bins: bins}, nil)
	require.NotNil(t, rec)
	return rec, err, time.Since(start)
}

// A run replays without a model: its cassette holds every exchange with
// no key, token or deployCanary in it, and a replay with the model server
// closed gives the same commits (trees), findings and verdict. A replay
// with the CLI's binary swapped says whether its requests still match,
// and a cassette edited to answer otherwise shows the first request that
// did not match as a diff of the two.
func TestAReplayWithoutAModelReproducesTheRun(t *testing.T) {
	r := recordedPingpong(t)
	origReqs := len(r.srv.Requests())
	r.srv.Close()
	runDir := filepath.Join(r.repo, ".spawn", "runs", r.rec.ID)

	// The cassette: every exchange, redacted.
	require.NotNil(t, r.rec.Cassette)
	cas := filepath.Join(runDir, r.rec.Cassette.Path)
	raw, err := os.ReadFile(cas)
	require.NoError(t, err)
	assert.Equal(t, int64(len(raw)), r.rec.Cassette.Bytes)
	assert.Equal(t, origReqs, r.rec.Cassette.Exchanges, "every request the model server answered is in the cassette")
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Contains(t, string(plain), "notes.txt", "the coder's read is in it")
	for _, secret := range []string{deployCanary, modelserver.APIKey} {
		assert.NotContains(t, string(plain), secret)
	}
	assert.NotRegexp(t, `spawn-relay-[0-9a-f]{48}`, string(plain), "no seat's relay key")
	assert.Contains(t, string(plain), observability.Redacted)
	filepath.WalkDir(runDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, rerr := os.ReadFile(p)
			require.NoError(t, rerr)
			assert.NotContains(t, string(b), deployCanary, p)
		}
		return nil
	})
	t.Logf("original run: %d ms, %d exchanges, cassette %d bytes (%d bytes an exchange; %d uncompressed)",
		r.rec.DurationMS, r.rec.Cassette.Exchanges, r.rec.Cassette.Bytes, r.rec.Cassette.Bytes/int64(r.rec.Cassette.Exchanges), len(plain))

	t.Run("replay", func(t *testing.T) {
		rec, err, took := replay(t, r.repo, r.rec.ID, nil)
		require.NoError(t, err, "%s", divergence(rec))
		require.NotNil(t, rec.Replay)
		rp := rec.Replay
		assert.Equal(t, r.rec.ID, rp.Of)
		assert.True(t, rp.Same, "%v\n%v", rp.Differences, rp.Divergence)
		assert.True(t, rp.RequestsMatch)
		assert.Equal(t, origReqs, rp.Answered)
		assert.Len(t, rp.Trees, 2)
		assert.Equal(t, rp.OriginalTrees, rp.Trees)
		assert.Equal(t, testenv.Git(t, r.repo, "rev-parse", r.rec.Branch+"^{tree}"), testenv.Git(t, r.repo, "rev-parse", rec.Branch+"^{tree}"),
			"the replay's branch holds the same work")
		assert.NotEqual(t, r.rec.Branch, rec.Branch)
		assert.Equal(t, observability.VerdictApproved, rec.Verdict)
		assert.Equal(t, reviewLines(r.rec), reviewLines(rec))
		assert.Len(t, r.srv.Requests(), origReqs, "nothing reached the model server")
		t.Logf("replay: %d ms (%s with opening), the original %d ms", rec.DurationMS, took.Round(time.Millisecond), r.rec.DurationMS)
	})

	t.Run("another binary", func(t *testing.T) {
		same := claudeWrapper(t, "")
		rec, err, _ := replay(t, r.repo, r.rec.ID, map[string]string{"claude": same})
		require.NoError(t, err, "%s", divergence(rec))
		assert.True(t, rec.Replay.RequestsMatch, "a binary that sends the same requests matches: %v", rec.Replay.Differences)
		assert.Equal(t, []observability.ReplayBinary{{CLI: "claude", Path: same}}, rec.Replay.Binaries)

		other := claudeWrapper(t, "Answer tersely.")
		rec, err, _ = replay(t, r.repo, r.rec.ID, map[string]string{"claude": other})
		require.Error(t, err, "the agent whose request the cassette does not hold is refused, and the replay says so")
		rp := rec.Replay
		assert.False(t, rp.Same)
		assert.False(t, rp.RequestsMatch)
		require.NotNil(t, rp.Divergence)
		assert.Equal(t, "coder", rp.Divergence.Seat)
		assert.Equal(t, 1, rp.Divergence.Seq, "the first request already differs")
		assert.Contains(t, rp.Divergence.Diff, "+")
		assert.Contains(t, rp.Divergence.Replayed, "Answer tersely.")
		assert.NotContains(t, rp.Divergence.Recorded, "Answer tersely.")
	})

	t.Run("an edited cassette", func(t *testing.T) {
		h, xs, err := relay.ReadCassette(cas)
		require.NoError(t, err)
		edited := false
		for i, x := range xs {
			if x.Seat == "coder" && strings.Contains(x.Response, "Writing calc.go.") {
				xs[i].Response = strings.ReplaceAll(x.Response, "Writing calc.go.", "Writing calc.go, carefully.")
				edited = true
				break
			}
		}
		require.True(t, edited)
		require.NoError(t, relay.WriteCassette(cas, h, xs))
		rec, err, _ := replay(t, r.repo, r.rec.ID, nil)
		require.Error(t, err, "the agent whose request the cassette does not hold is refused, and the replay says so")
		rp := rec.Replay
		assert.False(t, rp.Same)
		require.NotNil(t, rp.Divergence, "%v", rp.Differences)
		d := rp.Divergence
		assert.Equal(t, "coder", d.Seat)
		assert.Equal(t, 2, d.Seq, "the request after the edited answer is the first that differs")
		assert.Contains(t, d.Diff, "-")
		assert.Contains(t, d.Diff, "Writing calc.go.")
		assert.Contains(t, d.Diff, "Writing calc.go, carefully.")
		assert.Contains(t, d.Recorded, "Writing calc.go.")
		assert.Contains(t, d.Replayed, "Writing calc.go, carefully.")
		assert.NotEmpty(t, rp.Differences)
	})

	t.Run("purged", func(t *testing.T) {
		repo, err := runs.OpenRepo(context.Background(), r.repo, r.env)
		require.NoError(t, err)
		_, err = repo.Clean(context.Background(), runs.CleanOptions{Refs: []string{r.rec.ID}, Force: true, Purge: true})
		require.NoError(t, err)
		assert.NoFileExists(t, cas, "spawn clean --purge removes the cassette with the run directory")
	})
}

// updateCassettes records testdata/cassettes/scripted-pingpong again.
var updateCassettes = flag.Bool("update-cassettes", false, "record testdata/cassettes/scripted-pingpong again, under the scripted model")

// cassetteRepo makes the repository the cassettes of testdata/cassettes
// were recorded in (scripts/cassette-repo.sh) and returns its path.
func cassetteRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "calc")
	cmd := exec.Command(filepath.Join(testenv.Root(t), "scripts", "cassette-repo.sh"), dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir
}

// Every cassette kept in testdata/cassettes (recorded by make cassette
// from the paid APIs, or by -update-cassettes under the scripted model)
// replays without a model or a key, with the pinned CLIs, to the run it
// recorded: a CLI upgrade whose requests differ fails here.
func TestRecordedCassettesReplayWithoutAKey(t *testing.T) {
	root := filepath.Join(testenv.Root(t), "testdata", "cassettes")
	if *updateCassettes {
		bug := finding("high", "technical_feasibility", "calc.go", 7, "Total starts from one")
		r := runTeamIn(t, func() string { return cassetteRepo(t) }, observability.ModePingpong, modelserver.Scenario{
			Anthropic: []modelserver.Script{coderTurns(5)},
			Gemini:    reviewRounds(answer("request_changes", nil, bug), answer("approve", []string{bug.ID})),
		}, nil)
		require.NoError(t, r.err)
		out := filepath.Join(root, "scripted-pingpong")
		require.NoError(t, os.RemoveAll(out))
		require.NoError(t, os.MkdirAll(out, 0o755))
		for _, f := range []string{"record.json", configName, cassetteName} {
			b, err := os.ReadFile(filepath.Join(r.repo, ".spawn", "runs", r.rec.ID, f))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(out, f), b, 0o644))
		}
	}
	dirs, err := os.ReadDir(root)
	require.NoError(t, err)
	require.NotEmpty(t, dirs, "testdata/cassettes holds the cassettes to replay")
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) {
			src := filepath.Join(root, d.Name())
			var of observability.Record
			b, err := os.ReadFile(filepath.Join(src, "record.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &of))
			repo := cassetteRepo(t)
			require.Equal(t, of.Base, testenv.Git(t, repo, "rev-parse", "HEAD"), "scripts/cassette-repo.sh makes the cassette's base")
			run := filepath.Join(repo, ".spawn", "runs", of.ID)
			require.NoError(t, os.MkdirAll(run, 0o755))
			for _, f := range []string{"record.json", configName, cassetteName} {
				b, err := os.ReadFile(filepath.Join(src, f))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(run, f), b, 0o644))
			}
			pinned := map[string]func(testing.TB) string{"claude": testenv.Claude, "gemini": testenv.Gemini, "codex": testenv.Codex}
			bins := map[string]string{}
			for _, a := range runners.NewRegistry().Adapters() {
				for _, s := range of.Seats {
					if string(s.LLM) == a.Record() && pinned[a.Name()] != nil {
						bins[a.Name()] = pinned[a.Name()](t)
					}
				}
			}
			rec, err, took := replay(t, repo, of.ID, bins)
			require.NoError(t, err, "%s", divergence(rec))
			rp := rec.Replay
			assert.True(t, rp.Same, "%v\n%s", rp.Differences, divergence(rec))
			assert.NotEmpty(t, rp.Trees)
			assert.Equal(t, of.Verdict, rec.Verdict)
			t.Logf("replayed %s: %d requests in %s (the run took %d ms)", of.ID, rp.Answered, took.Round(time.Millisecond), of.DurationMS)
		})
	}
}

// divergence is what a replay's record says of its first divergence.
func divergence(rec *observability.Record) string {
	if rec.Replay == nil || rec.Replay.Divergence == nil {
		return "no divergence"
	}
	d := rec.Replay.Divergence
	return fmt.Sprintf("%s %s %s, recorded exchange %d:\n%s", d.Seat, d.Method, d.Path, d.Seq, d.Diff)
}

// claudeWrapper is a claude binary that runs the pinned one, adding
// --append-system-prompt words when words is not "": a CLI whose requests
// differ, as a new version's might. It is installed beside a copy of the
// pinned package (hard links), so that a sandbox that shows the
// wrapper's install shows the real binary too.
func claudeWrapper(t *testing.T, words string) string {
	t.Helper()
	pinned, err := filepath.EvalSymlinks(testenv.Claude(t))
	require.NoError(t, err)
	pkg := filepath.Dir(filepath.Dir(pinned)) // .../@anthropic-ai/claude-code
	scope := filepath.Dir(pkg)
	nm := filepath.Join(t.TempDir(), "node_modules")
	require.NoError(t, linkTree(scope, filepath.Join(nm, filepath.Base(scope))))
	rel, err := filepath.Rel(filepath.Dir(scope), pinned)
	require.NoError(t, err)
	script := "#!/bin/sh\nexec \"$(dirname \"$0\")/../" + rel + "\" \"$@\"\n"
	if words != "" {
		script = "#!/bin/sh\nexec \"$(dirname \"$0\")/../" + rel + "\" \"$@\" --append-system-prompt '" + words + "'\n"
	}
	bin := filepath.Join(nm, ".bin", "claude")
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	return bin
}

// linkTree makes dst a copy of src whose files are hard links (copies
// where linking fails).
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		}
		if os.Link(p, target) == nil {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}

// runTeamIn is runTeam in the repository makeRepo makes.
func runTeamIn(t testing.TB, makeRepo func() string, mode observability.Mode, sc modelserver.Scenario, tweak func(*config.Config), extraEnv ...string) *teamRun {
	t.Helper()
	claude, gemini := testenv.Claude(t), testenv.Gemini(t)
	srv := testenv.ModelServer(t, sc)
	genv, err := srv.GeminiEnv(t.TempDir())
	require.NoError(t, err)
	cfg := testConfig()
	cfg.Team.Mode = mode
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = claude; s.MaxRetries = 0 })
	cfg.Runners.Edit("gemini", func(s *runners.Settings) { s.Command = gemini; s.MaxRetries = 0 })
	cfg.Spawn.IdleTimeout = time.Minute
	cfg.Spawn.TotalTimeout = 3 * time.Minute
	if tweak != nil {
		tweak(&cfg)
	}
	env := append(append(testenv.Env(t, srv.ClaudeEnv()...), genv...), extraEnv...)
	r := &teamRun{repo: makeRepo(), srv: srv, cfg: cfg, env: env}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r.rec, r.err = Run(ctx, Options{Task: "add the total function", RepoDir: r.repo, Config: cfg, Env: env}, nil)
	require.NotEmpty(t, r.rec.ID, "%v", r.err)
	return r
}
