package spawn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// reviewRound is what one review round of a pingpong run sent the model.
type reviewRound struct {
	fresh bool
	// prompt and full are the round's prompt bytes and a full re-review's
	// prompt bytes, as the record has them.
	prompt, full int
	// body is the bytes of the round's main gemini request; freshBody is
	// what a fresh full review's request would have been: round 1's request
	// (a fresh full review) with its prompt swapped for a full re-review's
	// prompt of this round, both as JSON-escaped in the body.
	body, freshBody int
	tokens          observability.Tokens
}

// promptRatio is the round's prompt over a full re-review's prompt.
func (r reviewRound) promptRatio() float64 { return float64(r.prompt) / float64(r.full) }

// bodyRatio is the round's whole request over a fresh full review's.
func (r reviewRound) bodyRatio() float64 { return float64(r.body) / float64(r.freshBody) }

// bigSource is the coder's first version: a change large enough (about 12
// KB) that the reviewer's instructions are not most of a full review.
func bigSource() string {
	var b strings.Builder
	b.WriteString("package calc\n\n")
	for i := range 300 {
		fmt.Fprintf(&b, "var v%03d = %d // a value the task asks for\n", i, i)
	}
	return b.String()
}

// fiveRoundPingpong runs a pingpong of five review rounds: the coder writes
// a large file, each review asks for one more small fix and resolves the
// last, the fifth approves. It returns the rounds as the model saw them.
func fiveRoundPingpong(tb testing.TB) []reviewRound {
	tb.Helper()
	const rounds = 5
	bugs := make([]string, rounds-1)
	coder := modelserver.Script{Turns: []modelserver.Turn{
		{Tools: []modelserver.ToolCall{{ID: "w1", Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/calc.go", "content": bigSource()}}}},
		{Text: "Wrote calc.go."},
	}}
	var answers []modelserver.Turn
	for i := range rounds - 1 {
		bug := finding("high", "technical_feasibility", "calc.go", 3+i, fmt.Sprintf("v%03d has the wrong sign", i))
		bugs[i] = bug.ID
		var resolved []string
		if i > 0 {
			resolved = []string{bugs[i-1]}
		}
		answers = append(answers, modelserver.Turn{Text: answer("request_changes", resolved, bug)})
		old, new := fmt.Sprintf("var v%03d = %d ", i, i), fmt.Sprintf("var v%03d = -%d ", i, i)
		coder.Turns = append(coder.Turns,
			modelserver.Turn{Tools: []modelserver.ToolCall{{ID: fmt.Sprintf("r%d", i), Name: "Read", Input: map[string]any{"file_path": "{{workdir}}/calc.go"}}}},
			modelserver.Turn{Tools: []modelserver.ToolCall{{ID: fmt.Sprintf("e%d", i), Name: "Edit", Input: map[string]any{"file_path": "{{workdir}}/calc.go", "old_string": old, "new_string": new}}}},
			modelserver.Turn{Text: fmt.Sprintf("%s: fixed - negated v%03d", bugs[i], i)},
		)
	}
	answers = append(answers, modelserver.Turn{Text: answer("approve", []string{bugs[rounds-2]})})

	claude, gemini := testenv.Claude(tb), testenv.Gemini(tb)
	// One script per round, the latest first: a resumed request holds the
	// prompts of the earlier rounds too, and a fresh seat's history is empty.
	var reviewer []modelserver.Script
	for k := rounds; k >= 1; k-- {
		reviewer = append(reviewer, modelserver.Script{Match: fmt.Sprintf("round %d", k), Turns: answers[k-1 : k]})
	}
	srv := testenv.ModelServer(tb, modelserver.Scenario{Anthropic: []modelserver.Script{coder}, Gemini: reviewer})
	genv, err := srv.GeminiEnv(tb.TempDir())
	require.NoError(tb, err)
	cfg := testConfig()
	cfg.Team.Mode = observability.ModePingpong
	cfg.Team.MaxIterations = rounds
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.Command = claude })
	cfg.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 0 })
	cfg.Runners.Edit("gemini", func(s *runners.Settings) { s.Command = gemini })
	cfg.Runners.Edit("gemini", func(s *runners.Settings) { s.MaxRetries = 0 })
	cfg.Spawn.IdleTimeout = time.Minute
	cfg.Spawn.TotalTimeout = 3 * time.Minute
	env := append(testenv.Env(tb, srv.ClaudeEnv()...), genv...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rec, err := Run(ctx, Options{Task: "add the values", RepoDir: testenv.Repo(tb), Config: cfg, Env: env}, nil)
	require.NoError(tb, err)
	require.Equal(tb, observability.VerdictApproved, rec.Verdict, "notes %v; review %+v", rec.Notes, rec.ReviewFeedback)
	require.NoError(tb, srv.Verify(), "every scripted turn was served")
	require.Len(tb, rec.ReviewFeedback, rounds)

	var bodies []int
	var first string // round 1's prompt: a fresh full review
	for _, req := range srv.Requests() {
		if req.API != modelserver.APIGemini || !req.Main {
			continue
		}
		if first == "" {
			texts := req.UserTexts()
			require.NotEmpty(tb, texts)
			first = texts[len(texts)-1]
		}
		bodies = append(bodies, len(req.Body))
	}
	require.Len(tb, bodies, rounds, "one main gemini request per round")
	quoted, err := json.Marshal(first)
	require.NoError(tb, err)
	escape := float64(len(quoted)) / float64(len(first)) // JSON escaping of a prompt in the body
	out := make([]reviewRound, rounds)
	for i, fb := range rec.ReviewFeedback {
		out[i] = reviewRound{fresh: fb.Fresh, prompt: fb.PromptBytes, full: fb.FullPromptBytes, body: bodies[i], tokens: fb.Tokens,
			freshBody: bodies[0] - len(quoted) + int(escape*float64(fb.FullPromptBytes))}
	}
	return out
}

// TestReReviewsSendLessThanAFreshFullReview: in a five-round pingpong, every
// re-review's new prompt is at most 40% of a full re-review's prompt, and
// its whole request (the session it replays included) is no larger than a
// fresh full review's.
func TestReReviewsSendLessThanAFreshFullReview(t *testing.T) {
	rounds := fiveRoundPingpong(t)
	for i, r := range rounds {
		t.Logf("round %d: fresh=%v prompt %d / full %d = %.2f; request %d / fresh full %d = %.2f; tokens %+v",
			i+1, r.fresh, r.prompt, r.full, r.promptRatio(), r.body, r.freshBody, r.bodyRatio(), r.tokens)
		assert.Positive(t, r.tokens.Input, "round %d: the tokens gemini reported are recorded", i+1)
		if i == 0 {
			assert.True(t, r.fresh)
			assert.Equal(t, r.full, r.prompt, "round 1 is a full review")
			continue
		}
		assert.LessOrEqual(t, r.promptRatio(), 0.40, "round %d: the new prompt", i+1)
		assert.LessOrEqual(t, r.bodyRatio(), 1.0, "round %d: the whole request", i+1)
	}
}
