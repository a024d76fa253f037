package spawn

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// writeTurn is one file write, in the tool shape of the CLI that calls
// each model API, then "Done.".
var writeTurn = map[string]modelserver.ToolCall{
	modelserver.APIAnthropic: {ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}},
	modelserver.APIGemini:    {ID: "w1", Name: "write_file", Input: map[string]any{"file_path": "{{workdir}}/hello.txt", "content": "hi\n"}},
	modelserver.APIOpenAI:    {ID: "w1", Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"}},
}

// BenchmarkSeatTurn compares, for each agent CLI as the coder, a whole
// `spawn run --mode solo` of one scripted turn (preflight, sandbox, relay,
// supervised CLI, commit, record) with the same CLI run bare on the same
// turn: the command line its adapter makes, straight at the scripted
// model, in a plain repository, with nothing of spawn around it.
func BenchmarkSeatTurn(b *testing.B) {
	for _, a := range runners.NewRegistry().Adapters() {
		api := a.Provider().Route
		sc := modelserver.Scenario{}
		*sc.Scripts(api) = []modelserver.Script{{Turns: []modelserver.Turn{{Tools: []modelserver.ToolCall{writeTurn[api]}}, {Text: "Done."}}}}
		srv := testenv.ModelServer(b, sc, modelserver.WithMaxRequests(1<<20))
		senv, err := srv.Env(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		env := testenv.Env(b, senv...)
		bin := map[string]string{"claude": testenv.Claude(b), "codex": testenv.Codex(b), "gemini": testenv.Gemini(b)}[a.Name()]
		cfg := testConfig()
		cfg.Team.Mode, cfg.Team.Coder = observability.ModeSolo, a.Name()
		cfg.Runners.Edit(a.Name(), func(s *runners.Settings) { s.Command, s.MaxRetries = bin, 0 })

		b.Run(a.Name()+"/spawn", func(b *testing.B) {
			repo := testenv.Repo(b)
			var agent time.Duration
			for range b.N {
				rec, err := Run(context.Background(), Options{Task: "create hello.txt", RepoDir: repo, Config: cfg, Env: env}, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, cl := range rec.CommandLines {
					agent += time.Duration(cl.DurationMS) * time.Millisecond
				}
			}
			b.ReportMetric(float64(agent.Milliseconds())/float64(b.N), "agent-ms")
			b.ReportMetric(float64((b.Elapsed()-agent).Milliseconds())/float64(b.N), "spawn-ms")
		})
		b.Run(a.Name()+"/bare", func(b *testing.B) {
			base := srv.URL()
			if api == modelserver.APIOpenAI {
				base = srv.OpenAIBaseURL()
			}
			for range b.N {
				b.StopTimer()
				repo := testenv.Repo(b)
				cmd := bareCommand(b, a, bin, cfg, base, env, repo, "create hello.txt")
				b.StartTimer()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				b.StopTimer()
				if testenv.Git(b, repo, "status", "--porcelain") == "" {
					b.Fatalf("the bare %s wrote nothing", a.Name())
				}
				b.StartTimer()
			}
		})
	}
}

// bareCommand is the command line a's adapter makes for a coder's turn
// with prompt in repo, run bare: bin straight at the model at base, with
// env and the adapter's own environment, nothing of spawn around it. Like
// the agent spawn runs, it gets a home of its own: bare processes run
// at once would otherwise wait on each other's locks in a shared one.
func bareCommand(b *testing.B, a runners.Adapter, bin string, cfg config.Config, base string, env []string, repo, prompt string) *exec.Cmd {
	b.Helper()
	ag, err := a.Seat(runners.Seat{Role: runners.RoleCoder, Bin: bin, Settings: cfg.Runners.Get(a.Name()), Dir: b.TempDir(),
		RelayURL: base, RelayKey: modelserver.APIKey,
		Permissions: runners.Permissions{Mode: cfg.Permissions.Mode, Allowed: cfg.Permissions.AllowedTools, Denied: cfg.Permissions.DeniedTools}})
	if err != nil {
		b.Fatal(err)
	}
	c, err := ag.Command(runners.Turn{Prompt: prompt, Dir: repo})
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir, cmd.Stdin = repo, strings.NewReader(c.Stdin)
	cmd.Env = append(append(append(env, ag.Env()...), c.Env...), "HOME="+b.TempDir())
	return cmd
}
