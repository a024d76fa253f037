package spawn

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/team"
)

// reviewerRun starts a run whose reviewer is the real gemini, pointed at the
// scripted server, with a HOME whose own settings hold only the login: the
// retry bound must come from spawn's system settings file.
func reviewerRun(t *testing.T, sc modelserver.Scenario, maxRetries int) (*run, *modelserver.Server) {
	t.Helper()
	claude, gemini := testenv.Claude(t), testenv.Gemini(t)
	srv := testenv.ModelServer(t, sc)
	genv, err := srv.GeminiEnv(t.TempDir())
	require.NoError(t, err)
	home := ""
	for _, kv := range genv {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	// Keep only the login in the user's settings: no maxAttempts there.
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "settings.json"),
		[]byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o644))
	cfg := testConfig()
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = claude })
	cfg.Runners.Edit("gemini", func(s *runners.Settings) { s.Command = gemini })
	cfg.Runners.Edit("gemini", func(s *runners.Settings) { s.MaxRetries = maxRetries })
	cfg.Spawn.IdleTimeout = time.Minute
	env := append(testenv.Env(t, srv.ClaudeEnv()...), genv...)
	return startRun(t, Options{Task: "review", RepoDir: testenv.Repo(t), Config: cfg, Env: env}), srv
}

func TestReviewerModelErrorsAreClassified(t *testing.T) {
	tests := []struct {
		status int
		kind   fault.Kind
	}{
		{401, fault.KindAuth},
		{500, fault.KindModelUnavailable},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("HTTP %d", tt.status), func(t *testing.T) {
			run, _ := reviewerRun(t, modelserver.Scenario{Gemini: []modelserver.Script{{Turns: []modelserver.Turn{
				{Error: &modelserver.HTTPError{Status: tt.status, Message: "scripted"}},
			}}}}, 0)
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			_, err := run.Review(ctx, team.ReviewerTurn{Round: 1, Seat: "all", Prompt: "Review this."})
			// Without spawn's maxAttempts, gemini retries a 500 for ~220 s.
			assert.Less(t, time.Since(start), 30*time.Second, "the retry bound in spawn's system settings was honoured")
			require.Error(t, err)
			assert.Equal(t, tt.kind, KindOf(err), err.Error())
			assert.Equal(t, fault.ExitAgent, ExitCode(err, observability.VerdictNone))
		})
	}
}

func TestReviewerRetriesWithinItsBound(t *testing.T) {
	run, srv := reviewerRun(t, modelserver.Scenario{Gemini: []modelserver.Script{{Turns: []modelserver.Turn{
		{Error: &modelserver.HTTPError{Status: 500, Message: "blip", Times: 1}, Text: "LGTM"},
	}}}}, 1)
	reply, err := run.Review(context.Background(), team.ReviewerTurn{Round: 1, Seat: "all", Prompt: "Review this."})
	require.NoError(t, err)
	assert.Equal(t, "LGTM", reply.Text)
	main := 0
	for _, req := range srv.Requests() {
		if req.Main {
			main++
		}
	}
	assert.Equal(t, 2, main, "one failure, one retry")
	require.Len(t, run.rec.CommandLines, 1)
	assert.Equal(t, observability.LLMGemini, run.rec.CommandLines[0].LLM)

	// The private home carries the user's login and spawn's bound; the
	// user's own settings are untouched, and the private home goes away.
	home := filepath.Join(run.conf.root, seatDir("all"), "home")
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	require.NoError(t, err)
	var settings map[string]map[string]any
	require.NoError(t, json.Unmarshal(b, &settings))
	assert.Equal(t, float64(2), settings["general"]["maxAttempts"])
	assert.Equal(t, map[string]any{"selectedType": "gemini-api-key"}, settings["security"]["auth"])
	user, err := os.ReadFile(filepath.Join(proc.Getenv(run.opts.Env, "HOME"), ".gemini", "settings.json"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`, string(user))
	_, err = run.finish(context.Background(), observability.VerdictNone, nil)
	require.NoError(t, err)
	assert.NoDirExists(t, home)
}

// startRun checks opts and creates the run (sandbox, directory, record) as
// Run does, without driving it: tests call its turns one by one.
func startRun(t *testing.T, opts Options) *run {
	t.Helper()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Config.Team.Mode == "" {
		opts.Config.Team.Mode = observability.ModePingpong
	}
	id := runs.NewID(opts.Now())
	pre, err := preflight(context.Background(), opts, id)
	require.NoError(t, err)
	r, err := begin(context.Background(), opts, pre, id, opts.Now(), nil)
	require.NoError(t, err)
	// The run is never finished: its git helper stops with the test.
	t.Cleanup(func() { assert.NoError(t, r.sb.Close()) })
	return r
}
