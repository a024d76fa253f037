package spawn

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/demo"
	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// seated is one run of any coder and any reviewers, each CLI the real
// pinned binary against the scripted model server.
type seated struct {
	repo string
	srv  *modelserver.Server
	cfg  config.Config
	env  []string
	rec  *observability.Record
	err  error
}

// runSeated runs task in mode with coder and reviewers (registry names)
// in a fresh demo repository.
func runSeated(t *testing.T, mode observability.Mode, coder string, reviewers []string, sc modelserver.Scenario, tweak func(*config.Config)) *seated {
	t.Helper()
	srv := testenv.ModelServer(t, sc)
	home := t.TempDir()
	senv, err := srv.Env(home)
	require.NoError(t, err)
	env := testenv.Env(t, senv...)
	repo, err := demo.Repo(context.Background(), filepath.Join(t.TempDir(), "calc"), env)
	require.NoError(t, err)
	cfg := testConfig()
	cfg.Team.Mode = mode
	cfg.Team.Coder = coder
	if reviewers != nil {
		cfg.Team.Reviewers = reviewers
	}
	bins := map[string]string{"claude": testenv.Claude(t), "codex": testenv.Codex(t), "gemini": testenv.Gemini(t)}
	for name, bin := range bins {
		cfg.Runners.Edit(name, func(s *runners.Settings) { s.Command, s.MaxRetries = bin, 0 })
	}
	cfg.Spawn.IdleTimeout, cfg.Spawn.TotalTimeout = time.Minute, 3*time.Minute
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := &seated{repo: repo.Dir, srv: srv, cfg: cfg, env: env}
	r.rec, r.err = Run(ctx, Options{Task: demo.Task, RepoDir: repo.Dir, Config: cfg, Env: env}, nil)
	require.NotEmpty(t, r.rec.ID, "%v", r.err)
	return r
}

// api is the model API (modelserver's name) the CLI name calls.
func api(t *testing.T, name string) string {
	a, err := runners.NewRegistry().Lookup(name)
	require.NoError(t, err)
	return a.Provider().Route
}

// Every CLI codes, and every CLI of another family reviews it: each of
// the six ordered pairs runs two rounds of pingpong to approval. The
// coder fixes the reviewer's finding in its resumed session and answers
// it by id; the record names each seat's CLI and model, and what each
// one used.
func TestEveryCoderWithEveryReviewerOfAnotherFamily(t *testing.T) {
	reg := runners.NewRegistry()
	for _, coder := range reg.Adapters() {
		for _, reviewer := range reg.Adapters() {
			if coder.Family() == reviewer.Family() {
				continue
			}
			t.Run(coder.Name()+"-reviewed-by-"+reviewer.Name(), func(t *testing.T) {
				t.Parallel()
				sc, err := demo.Scenario(coder.Provider().Route, reviewer.Provider().Route)
				require.NoError(t, err)
				r := runSeated(t, observability.ModePingpong, coder.Name(), []string{reviewer.Name()}, sc, nil)
				require.NoError(t, r.err)
				rec := r.rec

				// # approved in round 2, with the fix on the branch
				assert.Equal(t, observability.VerdictApproved, rec.Verdict)
				require.Len(t, rec.ReviewFeedback, 2)
				assert.Equal(t, observability.ReviewRequestChanges, rec.ReviewFeedback[0].Verdict)
				assert.Equal(t, observability.ReviewApprove, rec.ReviewFeedback[1].Verdict)
				id := prompts.FindingID("general_polish", "calc.go", "No test with negative numbers")
				require.Len(t, rec.ReviewFeedback[0].Findings, 1)
				assert.Equal(t, id, rec.ReviewFeedback[0].Findings[0].ID)
				assert.Equal(t, []string{id}, rec.ReviewFeedback[1].Resolved)
				assert.Contains(t, testenv.Git(t, r.repo, "show", rec.Branch+":calc.go"), "return a + b")
				assert.Contains(t, testenv.Git(t, r.repo, "show", rec.Branch+":calc_test.go"), "TestAddNegative")
				require.Len(t, rec.CoderReplies, 1)
				assert.Equal(t, id, rec.CoderReplies[0].FindingID)
				assert.Equal(t, observability.CoderFixed, rec.CoderReplies[0].Action)

				// # the fix ran in the coder's resumed session
				var sessions []string
				for _, c := range rec.CommandLines {
					if c.Role == observability.RoleCoder {
						assert.Equal(t, observability.LLM(coder.Record()), c.LLM)
						sessions = append(sessions, c.Session)
					} else {
						assert.Equal(t, observability.LLM(reviewer.Record()), c.LLM)
					}
				}
				require.Len(t, sessions, 2)
				assert.NotEmpty(t, sessions[0])
				assert.Equal(t, sessions[0], sessions[1], "round 2 resumes round 1's session")

				// # the record names each seat's CLI, model and family
				require.Len(t, rec.Seats, 2)
				assert.Equal(t, observability.Seat{Role: observability.RoleCoder, LLM: observability.LLM(coder.Record()),
					Model: coder.Defaults().Model, Family: string(coder.Family())}, rec.Seats[0])
				assert.Equal(t, observability.Seat{Role: observability.RoleReviewer, Seat: reviewer.Name(), LLM: observability.LLM(reviewer.Record()),
					Model: reviewer.Defaults().Model, Family: string(reviewer.Family())}, rec.Seats[1])
				for _, fb := range rec.ReviewFeedback {
					assert.Equal(t, observability.LLM(reviewer.Record()), fb.Reviewer)
				}

				// # what each seat used, in tokens and cost
				used := map[observability.Role]observability.AgentUsage{}
				for _, u := range rec.Usage.ByAgent {
					prev := used[u.Role]
					prev.InputTokens += u.InputTokens
					prev.CostUSD += u.CostUSD
					prev.LLM = u.LLM
					used[u.Role] = prev
				}
				for _, role := range []observability.Role{observability.RoleCoder, observability.RoleReviewer} {
					assert.Positive(t, used[role].InputTokens, role)
					assert.Positive(t, used[role].CostUSD, role)
				}
				assert.Equal(t, observability.LLM(coder.Record()), used[observability.RoleCoder].LLM)

				// # a CLI whose own sandbox is off inside spawn's is said so
				notes := strings.Join(rec.Notes, "\n")
				for _, a := range []runners.Adapter{coder, reviewer} {
					if a.Name() == "codex" && rec.Isolation.Mode == "bwrap" {
						assert.Contains(t, notes, "codex runs with its own sandbox off", "the record says spawn's sandbox is the boundary")
					}
				}
				assertGone(t, rec)
			})
		}
	}
}

// A board of two reviewers of different families: one approves, the
// other requests changes. Under the default rule (every seat approves)
// the round asks for the fix; the record keeps each seat's verdict and
// who raised the finding, and the summary shows both.
func TestABoardOfTwoFamiliesDecidesTogether(t *testing.T) {
	sc, err := demo.Scenario(api(t, "claude"), api(t, "gemini"))
	require.NoError(t, err)
	sc.OpenAI = []modelserver.Script{{Turns: []modelserver.Turn{{Text: answer("approve", nil)}}}}
	r := runSeated(t, observability.ModePingpong, "claude", []string{"codex", "gemini"}, sc, nil)
	require.NoError(t, r.err)
	rec := r.rec
	assert.Equal(t, observability.VerdictApproved, rec.Verdict)

	byRound := map[int]map[string]observability.ReviewVerdict{}
	for _, fb := range rec.ReviewFeedback {
		if byRound[fb.Iteration] == nil {
			byRound[fb.Iteration] = map[string]observability.ReviewVerdict{}
		}
		byRound[fb.Iteration][fb.Domain] = fb.Verdict
	}
	assert.Equal(t, map[int]map[string]observability.ReviewVerdict{
		1: {"codex": observability.ReviewApprove, "gemini": observability.ReviewRequestChanges},
		2: {"codex": observability.ReviewApprove, "gemini": observability.ReviewApprove},
	}, byRound, "one seat's request for changes holds the round")
	require.Len(t, rec.Seats, 3)
	assert.Equal(t, "codex", rec.Seats[1].Seat)
	assert.Equal(t, "gemini", rec.Seats[2].Seat)

	require.Len(t, rec.ReviewFeedback[1].Findings, 1, "gemini's finding, on its answer of round 1")
	for _, fb := range rec.ReviewFeedback {
		for _, f := range fb.Findings {
			assert.Equal(t, []string{"gemini"}, f.RaisedBy, "raised by the seat that asked for changes")
		}
	}
}

// A reviewer of the coder's own family is refused before anything exists,
// with the reason, unless the configuration wants one.
func TestAReviewerOfTheCodersFamilyIsRefused(t *testing.T) {
	repo := testenv.Repo(t)
	before := snapshot(t, repo)
	cfg := testConfig()
	cfg.Team.Coder, cfg.Team.Reviewers = "claude", []string{"codex", "claude-code"}
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = "git" }) // any binary: nothing runs
	cfg.Runners.Edit("codex", func(s *runners.Settings) { s.Command = "git" })
	env := testenv.Env(t, "ANTHROPIC_API_KEY=k", "OPENAI_API_KEY=k")
	rec, err := Run(context.Background(), Options{Task: "do it", RepoDir: repo, Config: cfg, Env: env}, nil)
	require.Error(t, err)
	assert.Equal(t, fault.ExitUsage, rec.ExitCode)
	assert.Equal(t, "the reviewer claude is of the coder's own model family (anthropic), and a model reviewing its own family's work shares its blind spots; choose a reviewer of another family (spawn-team.reviewers, or --reviewer), or set same_family = true in [spawn-team] if you want it anyway", err.Error())
	assert.Empty(t, rec.ID)
	assert.Equal(t, before, snapshot(t, repo))
	assert.NoDirExists(t, filepath.Join(repo, sandbox.Dir, "worktrees"))

	// same_family = true wants it: the preflight goes on (and finds the
	// binaries, here git, which is all it checks).
	cfg.Team.SameFamily = true
	pre, err := preflight(context.Background(), Options{Task: "do it", RepoDir: repo, Config: cfg, Env: env}, "x")
	require.NoError(t, err)
	assert.Len(t, pre.seats.reviewers, 2)
}

// A seat whose model API spawn has no credential for is found before
// anything exists; the error names a reviewer whose key is there.
func TestASeatWithoutACredentialIsFoundFirst(t *testing.T) {
	repo := testenv.Repo(t)
	cfg := testConfig()
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = "git" })
	cfg.Runners.Edit("gemini", func(s *runners.Settings) { s.Command = "git" })
	env := testenv.Env(t, "ANTHROPIC_API_KEY=k", "OPENAI_API_KEY=k")
	rec, err := Run(context.Background(), Options{Task: "do it", RepoDir: repo, Config: cfg, Env: env}, nil)
	require.Error(t, err)
	assert.Equal(t, fault.KindAuth, KindOf(err))
	assert.Equal(t, "the reviewer (gemini) has no credential: set GEMINI_API_KEY to a Gemini API key, or choose a reviewer whose key you have (--reviewer codex), then run again (nothing was started)", err.Error())
	assert.Empty(t, rec.ID)
	assert.NoDirExists(t, filepath.Join(repo, sandbox.Dir, "worktrees"))
}

// An account's usage limit ends the coder's turn with its own outcome,
// whichever CLI codes: the reset time the provider gave is in the error
// and the record, and what the coder wrote before it is committed.
func TestAUsageLimitEndsTheTurnWithItsResetTime(t *testing.T) {
	for _, name := range runners.NewRegistry().Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := demo.Scenario(api(t, name), api(t, otherThan(t, name)))
			require.NoError(t, err)
			coder := sc.Scripts(api(t, name))
			(*coder)[0].Turns = []modelserver.Turn{
				(*coder)[0].Turns[1], // calc.go read
				(*coder)[0].Turns[2], // and fixed
				{Error: &modelserver.HTTPError{Status: 429, ResetsIn: modelserver.Duration(2 * time.Hour)}},
			}
			*sc.Scripts(api(t, otherThan(t, name))) = nil
			start := time.Now()
			r := runSeated(t, observability.ModeSolo, name, nil, sc, nil)
			require.Error(t, r.err)
			assert.Equal(t, fault.KindUsageLimit, KindOf(r.err), "%v", r.err)
			assert.Equal(t, fault.ExitTimeout, r.rec.ExitCode)
			assert.Contains(t, r.err.Error(), "reached its account's usage limit")
			assert.Contains(t, r.err.Error(), "spawn resume "+r.rec.ID)
			require.NotNil(t, r.rec.Error)
			require.NotNil(t, r.rec.Error.ResetAt, "the record says when it resets")
			assert.WithinDuration(t, start.Add(2*time.Hour), *r.rec.Error.ResetAt, 2*time.Minute)
			assert.Contains(t, r.err.Error(), r.rec.Error.ResetAt.Format("2006-01-02 15:04 UTC"))
			assert.Contains(t, testenv.Git(t, r.repo, "show", r.rec.Branch+":calc.go"), "return a + b", "the work before the limit is committed")
		})
	}
}

// With wait_for_quota, a limit that resets within the bound is waited
// out, said, and the coder's session goes on.
func TestWaitForQuotaWaitsOutAShortReset(t *testing.T) {
	sc, err := demo.Scenario(api(t, "codex"), api(t, "claude"))
	require.NoError(t, err)
	coder := &sc.OpenAI[0]
	coder.Turns = []modelserver.Turn{
		coder.Turns[2],
		{Error: &modelserver.HTTPError{Status: 429, Times: 1, ResetsIn: modelserver.Duration(2 * time.Second)}, Text: "Fixed calc.go."},
	}
	sc.Anthropic = nil
	r := runSeated(t, observability.ModeSolo, "codex", nil, sc, func(c *config.Config) { c.Spawn.WaitForQuota = time.Minute })
	require.NoError(t, r.err)
	notes := strings.Join(r.rec.Notes, "\n")
	assert.Contains(t, notes, "codex reached its usage limit; waiting")
	assert.Contains(t, notes, "codex's usage limit has reset; going on")
	var coderProcs int
	for _, c := range r.rec.CommandLines {
		coderProcs++
		assert.Equal(t, r.rec.CommandLines[0].Session, c.Session, "the same session goes on")
	}
	assert.Equal(t, 2, coderProcs)
	assert.Contains(t, testenv.Git(t, r.repo, "show", r.rec.Branch+":calc.go"), "return a + b")
}

// otherThan is a CLI of another family than name's.
func otherThan(t *testing.T, name string) string {
	reg := runners.NewRegistry()
	a, err := reg.Lookup(name)
	require.NoError(t, err)
	for _, b := range reg.Adapters() {
		if b.Family() != a.Family() {
			return b.Name()
		}
	}
	t.Fatalf("no CLI of another family than %s", name)
	return ""
}
