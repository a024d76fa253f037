package spawn

import (
	"context"
	"testing"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
)

// BenchmarkSoloTurnIsolation is the per-turn cost of the sandbox: the same
// one-turn solo run (a Write, then done) with isolation none and bwrap,
// in one process, against the same scripted model.
func BenchmarkSoloTurnIsolation(b *testing.B) {
	claude, env, _ := helloTurn(b)
	for _, mode := range []isolation.Mode{isolation.ModeNone, isolation.ModeBwrap} {
		b.Run(string(mode), func(b *testing.B) {
			cfg := testConfig()
			cfg.Team.Mode = observability.ModeSolo
			cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = claude })
			cfg.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 0 })
			cfg.Sandbox.Isolation = mode
			repo := testenv.Repo(b)
			for range b.N {
				if _, err := Run(context.Background(), Options{Task: "create hello.txt", RepoDir: repo, Config: cfg, Env: env}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
