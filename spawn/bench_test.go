package spawn

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// BenchmarkSoloRun compares a whole `spawn run --mode solo` (sandbox,
// supervised claude, commit, record) with the bare claude CLI doing the same
// scripted turn in a plain directory.
func BenchmarkSoloRun(b *testing.B) {
	claude, env, cfg := helloTurn(b)
	ctx := context.Background()

	b.Run("spawn", func(b *testing.B) {
		repo := testenv.Repo(b)
		var agent time.Duration
		for range b.N {
			rec, err := Run(ctx, Options{Task: "create hello.txt", RepoDir: repo, Config: cfg, Env: env}, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, cl := range rec.CommandLines {
				agent += time.Duration(cl.DurationMS) * time.Millisecond
			}
		}
		// The agent's own time (its process, under the sandbox), and the
		// rest: spawn's.
		b.ReportMetric(float64(agent.Milliseconds())/float64(b.N), "agent-ms")
		b.ReportMetric(float64((b.Elapsed()-agent).Milliseconds())/float64(b.N), "spawn-ms")
	})
	b.Run("claude", func(b *testing.B) {
		for range b.N {
			dir := testenv.Repo(b)
			cmd := exec.Command(claude, "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits")
			cmd.Dir = dir
			cmd.Env = append(env, "CLAUDE_CODE_MAX_RETRIES=0")
			cmd.Stdin = strings.NewReader("create hello.txt")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}

// helloTurn starts a scripted model serving one Write of hello.txt then
// "Done." for as many runs as a benchmark makes, and returns the pinned
// claude, an environment pointing it at the model, and a solo
// configuration that runs it. The server stops when the benchmark ends.
func helloTurn(tb testing.TB) (claude string, env []string, cfg config.Config) {
	tb.Helper()
	claude = testenv.Claude(tb)
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}}}},
		{Text: "Done."},
	}}}}
	srv := testenv.ModelServer(tb, sc, modelserver.WithMaxRequests(1<<20))
	cfg = testConfig()
	cfg.Team.Mode = observability.ModeSolo
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = claude })
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 0 })
	return claude, testenv.Env(tb, srv.ClaudeEnv()...), cfg
}

// userClaude writes the user's configuration in env's XDG_CONFIG_HOME, as
// a user of the built spawn keeps it: the pinned claude, no retries.
func userClaude(tb testing.TB, env []string, claude string) {
	tb.Helper()
	home, _ := strings.CutPrefix(env[slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "XDG_CONFIG_HOME=") })], "XDG_CONFIG_HOME=")
	if err := os.MkdirAll(filepath.Join(home, "spawn"), 0o755); err != nil {
		tb.Fatal(err)
	}
	toml := fmt.Sprintf("[runners.claude]\ncommand = %q\nmax_retries = 0\n", claude)
	if err := os.WriteFile(filepath.Join(home, "spawn", "spawn-team.toml"), []byte(toml), 0o644); err != nil {
		tb.Fatal(err)
	}
}
