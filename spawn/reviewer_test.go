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
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// reviewerRun starts a run whose reviewer is the real gemini, pointed at the
// scripted server, with a HOME whose own settings hold only the login: the
// retry bound must come from spawn's system settings file.
func reviewerRun(t *testing.T, sc modelserver.Scenario, maxRetries int) (*Run, *modelserver.Server) {
	t.Helper()
	claude, gemini := testenv.Claude(t), testenv.Gemini(t)
	srv, err := modelserver.Start(sc)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
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
	cfg := DefaultConfig()
	cfg.Runners.Claude.Command = claude
	cfg.Runners.Gemini.Command = gemini
	cfg.Runners.Gemini.MaxRetries = maxRetries
	cfg.Spawn.IdleTimeout = time.Minute
	env := append(testenv.Env(t), genv...)
	run, err := Begin(context.Background(), Options{Task: "review", Mode: "solo", RepoDir: testenv.Repo(t), Config: cfg, Env: env})
	require.NoError(t, err)
	return run, srv
}

func TestReviewerModelErrorsAreClassified(t *testing.T) {
	tests := []struct {
		status int
		kind   Kind
	}{
		{401, KindAuth},
		{500, KindModelUnavailable},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("HTTP %d", tt.status), func(t *testing.T) {
			run, _ := reviewerRun(t, modelserver.Scenario{Gemini: []modelserver.Script{{Turns: []modelserver.Turn{
				{Error: &modelserver.HTTPError{Status: tt.status, Message: "scripted"}},
			}}}}, 0)
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			_, err := run.ReviewerTurn(ctx, "all", 1, "Review this.", "")
			// Without spawn's maxAttempts, gemini retries a 500 for ~220 s.
			assert.Less(t, time.Since(start), 30*time.Second, "the retry bound in spawn's system settings was honoured")
			require.Error(t, err)
			assert.Equal(t, tt.kind, KindOf(err), err.Error())
			assert.Equal(t, ExitAgent, ExitCode(err, ""))
		})
	}
}

func TestReviewerRetriesWithinItsBound(t *testing.T) {
	run, srv := reviewerRun(t, modelserver.Scenario{Gemini: []modelserver.Script{{Turns: []modelserver.Turn{
		{Error: &modelserver.HTTPError{Status: 500, Message: "blip", Times: 1}, Text: "LGTM"},
	}}}}, 1)
	sess, err := run.ReviewerTurn(context.Background(), "all", 1, "Review this.", "")
	require.NoError(t, err)
	assert.Equal(t, "LGTM", sess.Result.Text)
	main := 0
	for _, req := range srv.Requests() {
		if req.Main {
			main++
		}
	}
	assert.Equal(t, 2, main, "one failure, one retry")
	require.Len(t, run.Record.CommandLines, 1)
	assert.Equal(t, LLMGemini, run.Record.CommandLines[0].LLM)

	// The private home carries the user's login and spawn's bound; the
	// user's own settings are untouched, and the private home goes away.
	b, err := os.ReadFile(filepath.Join(run.geminiHomes["all"], ".gemini", "settings.json"))
	require.NoError(t, err)
	var settings map[string]map[string]any
	require.NoError(t, json.Unmarshal(b, &settings))
	assert.Equal(t, float64(2), settings["general"]["maxAttempts"])
	assert.Equal(t, map[string]any{"selectedType": "gemini-api-key"}, settings["security"]["auth"])
	user, err := os.ReadFile(filepath.Join(lookupEnv(run.opts.Env, "HOME"), ".gemini", "settings.json"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`, string(user))
	home := run.geminiHomes["all"]
	require.NoError(t, run.Finish(context.Background(), nil, "none"))
	assert.NoDirExists(t, home)
}
