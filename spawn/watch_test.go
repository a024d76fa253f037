package spawn

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

func write(id, name, content string) modelserver.ToolCall {
	return modelserver.ToolCall{ID: id, Name: "Write", Input: map[string]any{"file_path": "{{workdir}}/" + name, "content": content}}
}

func bash(id, command string) modelserver.ToolCall {
	return modelserver.ToolCall{ID: id, Name: "Bash", Input: map[string]any{"command": command, "description": "run " + command}}
}

func turns(ts ...modelserver.Turn) modelserver.Scenario {
	return modelserver.Scenario{Anthropic: []modelserver.Script{{Turns: ts}}}
}

// assertGone checks that no process of the agent's group survived.
func assertGone(t *testing.T, rec *observability.Record) {
	t.Helper()
	require.NotEmpty(t, rec.CommandLines)
	for _, cl := range rec.CommandLines {
		require.NotZero(t, cl.Pid)
		testenv.AssertGroupGone(t, cl.Pid, cl.Argv[0])
	}
}

func TestModelHangIsStoppedByTheIdleTimeoutAndTheWorkIsKept(t *testing.T) {
	sc := turns(
		modelserver.Turn{Tools: []modelserver.ToolCall{write("w1", "draft.txt", "first draft\n")}},
		modelserver.Turn{Hang: true},
	)
	start := time.Now()
	r := runSolo(t, sc, "write a draft", func(c *config.Config) { c.Spawn.IdleTimeout = 3 * time.Second })
	elapsed := time.Since(start)

	require.Error(t, r.err)
	assert.Equal(t, fault.KindTimeout, KindOf(r.err))
	assert.Equal(t, fault.ExitTimeout, r.rec.ExitCode)
	assert.Equal(t, observability.StatusTimedOut, r.rec.Status)
	assert.Contains(t, r.rec.Error.Message, "idle_timeout")
	assert.Less(t, elapsed, 3*time.Second+3*time.Second+5*time.Second, "killed within idle_timeout + grace (+ start-up)")
	assert.Equal(t, "first draft", testenv.Git(t, r.repo, "show", r.rec.Branch+":draft.txt"), "the work written before the hang is committed")
	assertGone(t, r.rec)
	r.onDisk(t)
}

// claude's Bash tool runs commands in sessions of their own: a signal to
// claude's group misses them. The watcher kills the whole tree.
func TestHungBashCommandDoesNotSurvive(t *testing.T) {
	const marker = "sleep 317"
	sc := turns(modelserver.Turn{Tools: []modelserver.ToolCall{bash("s1", marker)}})
	r := runSolo(t, sc, "wait a while", func(c *config.Config) {
		// The watcher stops the coder mid-command at the total timeout
		// (at the tool timeout claude would stop the command itself).
		c.Spawn.TotalTimeout = 8 * time.Second
		c.Permissions.AllowedTools = append(c.Permissions.AllowedTools, "Bash(sleep:*)")
	})
	require.Error(t, r.err)
	assert.Equal(t, fault.KindTimeout, KindOf(r.err))
	assert.Contains(t, r.err.Error(), "total_timeout")
	assertGone(t, r.rec)
	assert.Empty(t, testenv.Processes(t, func(c string) bool { return strings.Contains(c, marker) }),
		"the hung command (and any shell running it) was killed with the agent")
}

func TestTotalTimeoutStopsAnAgentBeforeItsIdleTimeout(t *testing.T) {
	// The model answers twice, the second time slowly, then never again:
	// the idle timeout is far off, so only the total timeout can stop it.
	sc := turns(
		modelserver.Turn{Tools: []modelserver.ToolCall{write("ta", "f.txt", "first\n")}},
		modelserver.Turn{Delay: modelserver.Duration(time.Second), Tools: []modelserver.ToolCall{write("tb", "f.txt", "second\n")}},
		modelserver.Turn{Hang: true},
	)
	start := time.Now()
	r := runSolo(t, sc, "keep busy", func(c *config.Config) {
		c.Spawn.IdleTimeout = time.Minute
		c.Spawn.TotalTimeout = 10 * time.Second
	})
	require.Error(t, r.err)
	assert.Less(t, time.Since(start), 40*time.Second, "stopped by the total timeout, long before the idle one")
	assert.Equal(t, fault.KindTimeout, KindOf(r.err))
	assert.Contains(t, r.rec.Error.Message, "total_timeout")
	assert.Equal(t, observability.StatusTimedOut, r.rec.Status)
	assert.Equal(t, "second", testenv.Git(t, r.repo, "show", r.rec.Branch+":f.txt"))
	assertGone(t, r.rec)
}

func TestEscalatableDenialIsGrantedInTheSameSession(t *testing.T) {
	sc := turns(
		modelserver.Turn{Tools: []modelserver.ToolCall{write("w1", "Makefile", "build:\n\techo built > built.txt\n")}},
		modelserver.Turn{Tools: []modelserver.ToolCall{bash("m1", "make build")}},
		modelserver.Turn{Tools: []modelserver.ToolCall{bash("c1", "curl -s http://127.0.0.1:9/")}},
		modelserver.Turn{Text: "make and curl were denied."},
		// Resumed after the grant: the model retries the build.
		modelserver.Turn{Tools: []modelserver.ToolCall{bash("m2", "make build")}},
		modelserver.Turn{Text: "Built."},
	)
	r := runSolo(t, sc, "build it", nil)
	require.NoError(t, r.err)
	rec := r.rec

	require.Len(t, rec.PermissionsRequested, 2)
	byTool := map[string]observability.PermissionRequest{}
	for _, p := range rec.PermissionsRequested {
		byTool[string(p.Input)] = p
		assert.Equal(t, 1, p.Iteration)
	}
	var makeReq, curlReq observability.PermissionRequest
	for in, p := range byTool {
		if strings.Contains(in, "make build") {
			makeReq = p
		} else if strings.Contains(in, "curl") {
			curlReq = p
		}
	}
	assert.Equal(t, "Bash(make:*)", makeReq.Rule)
	assert.Empty(t, curlReq.Rule, "curl is not escalatable")
	require.Len(t, rec.PermissionsGranted, 1, "only the escalatable denial is granted")
	assert.Equal(t, observability.PermissionGrant{LLM: observability.LLMClaude, Iteration: 1, Tool: "Bash", Rule: "Bash(make:*)"}, rec.PermissionsGranted[0])

	// Two processes, the second resuming the first's session with the grant.
	require.Len(t, rec.CommandLines, 2)
	assert.Contains(t, rec.CommandLines[1].Argv, "--resume")
	assert.Contains(t, strings.Join(rec.CommandLines[1].Argv, " "), "Bash(make:*)")
	var first, resumed string
	for _, req := range r.srv.Requests() {
		for _, tr := range req.ToolResults() {
			if tr.ID == "w1" && first == "" {
				first = req.SessionID
			}
			if tr.ID == "m2" {
				resumed = req.SessionID
				assert.False(t, tr.IsError, "the retried command ran: %s", tr.Content)
			}
		}
	}
	require.NotEmpty(t, first)
	assert.Equal(t, first, resumed, "the scripted server saw the same session resumed")
	assert.Equal(t, "built", testenv.Git(t, r.repo, "show", rec.Branch+":built.txt"), "the command's effect is on the branch")
}

func TestEscalationStopsAtMaxEscalations(t *testing.T) {
	sc := turns(
		modelserver.Turn{Tools: []modelserver.ToolCall{write("w1", "Makefile", "a:\n\techo a > a.txt\n")}},
		modelserver.Turn{Tools: []modelserver.ToolCall{bash("m1", "make a")}},
		modelserver.Turn{Text: "make was denied."},
		modelserver.Turn{Tools: []modelserver.ToolCall{bash("g1", "go build ./...")}},
		modelserver.Turn{Text: "go build was denied."},
	)
	r := runSolo(t, sc, "build twice", func(c *config.Config) { c.Team.MaxEscalations = 1 })
	require.NoError(t, r.err)
	require.Len(t, r.rec.PermissionsGranted, 1)
	assert.Equal(t, "Bash(make:*)", r.rec.PermissionsGranted[0].Rule)
	assert.Len(t, r.rec.PermissionsRequested, 2)
	require.Len(t, r.rec.Notes, 1)
	assert.Contains(t, r.rec.Notes[0], "max_escalations (1) reached; Bash(go build:*) not granted")
	assert.Len(t, r.rec.CommandLines, 2, "no third process")
}

func TestQuestionIsAnsweredInTheResumedSession(t *testing.T) {
	sc := modelserver.Scenario{Anthropic: []modelserver.Script{
		{Turns: []modelserver.Turn{
			{Tools: []modelserver.ToolCall{write("w1", "migrate.sql", "ALTER TABLE t ADD c int;\n")}},
			{Text: "I wrote the migration. Should I also run it against the database? (y/n)"},
			{Text: "Understood: I did not run it, since running it is not part of the task. Done."},
		}},
	}}
	r := runSolo(t, sc, "write a migration", nil)
	require.NoError(t, r.err)
	require.Len(t, r.rec.Questions, 1)
	q := r.rec.Questions[0]
	assert.Contains(t, q.Question, "Should I also run it against the database?")
	assert.GreaterOrEqual(t, q.Confidence, 0.6)
	assert.Equal(t, watcher.DefaultAnswer, q.Answer)
	require.Len(t, r.rec.CommandLines, 2)

	answered := false
	for _, req := range r.srv.Requests() {
		for _, txt := range req.UserTexts() {
			answered = answered || strings.Contains(txt, watcher.DefaultAnswer)
		}
	}
	assert.True(t, answered, "the scripted server received the auto-answer")
	assert.Equal(t, observability.StatusSucceeded, r.rec.Status)
}

func TestMaxTurnsBudgetStopsAndKeepsTheWork(t *testing.T) {
	sc := turns(
		modelserver.Turn{Tools: []modelserver.ToolCall{write("w1", "a.txt", "a\n")}},
		modelserver.Turn{Tools: []modelserver.ToolCall{write("w2", "b.txt", "b\n")}},
	)
	// Without the limit the model's next answer would end the run well.
	r := runSolo(t, sc, "write three files", func(c *config.Config) { c.Spawn.MaxTurns = 2 })
	require.Error(t, r.err)
	assert.Equal(t, fault.KindBudget, KindOf(r.err))
	assert.Contains(t, r.err.Error(), "max_turns")
	assert.Equal(t, fault.ExitTimeout, r.rec.ExitCode)
	assert.Contains(t, r.rec.CommandLines[0].Argv, "--max-turns")
	assert.Equal(t, "a", testenv.Git(t, r.repo, "show", r.rec.Branch+":a.txt"))
	assertGone(t, r.rec)
}

func TestMaxCostBudgetStopsTheAgent(t *testing.T) {
	var ts []modelserver.Turn
	for i := range 9 {
		ts = append(ts, modelserver.Turn{Tools: []modelserver.ToolCall{write("c"+string(rune('a'+i)), "n.txt", strings.Repeat("n", i+1)+"\n")}})
	}
	// Each scripted response reports 10 input and 5 output tokens: about
	// $0.000175 at the prices of claude's default model (opus 4.8). The
	// budget allows eight responses, not nine; without it the model's
	// tenth answer would end the run well.
	r := runSolo(t, turns(ts...), "spend", func(c *config.Config) { c.Spawn.MaxCostUSD = 0.0015 })
	require.Error(t, r.err)
	assert.Equal(t, fault.KindBudget, KindOf(r.err))
	assert.Contains(t, r.err.Error(), "max_cost_usd")
	assert.Greater(t, r.rec.Usage.CostUSD, 0.0)
	assertGone(t, r.rec)
	testenv.Git(t, r.repo, "show", r.rec.Branch+":n.txt")
}

func TestAuthErrorFailsFastAndSaysSo(t *testing.T) {
	sc := turns(modelserver.Turn{Error: &modelserver.HTTPError{Status: 401, Message: "invalid x-api-key"}})
	start := time.Now()
	r := runSolo(t, sc, "anything", func(c *config.Config) { c.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 2 }) })
	assert.Less(t, time.Since(start), 30*time.Second)
	require.Error(t, r.err)
	assert.Equal(t, fault.KindAuth, KindOf(r.err))
	assert.Equal(t, fault.ExitAgent, r.rec.ExitCode)
	assert.Contains(t, r.err.Error(), "refused claude's credentials")
	assert.Contains(t, r.err.Error(), "set its API key or log in")
}

func TestRateLimitThenSuccessCompletes(t *testing.T) {
	sc := turns(
		modelserver.Turn{Error: &modelserver.HTTPError{Status: 429, Message: "slow down", Times: 1},
			Tools: []modelserver.ToolCall{write("w1", "ok.txt", "ok\n")}},
		modelserver.Turn{Text: "Done."},
	)
	r := runSolo(t, sc, "retry please", func(c *config.Config) { c.Runners.Edit("claude", func(s *runners.Settings) { s.MaxRetries = 2 }) })
	require.NoError(t, r.err)
	assert.Equal(t, "ok", testenv.Git(t, r.repo, "show", r.rec.Branch+":ok.txt"))
	statuses := []int{}
	for _, req := range r.srv.Requests() {
		if req.Main {
			statuses = append(statuses, req.Status)
		}
	}
	assert.Equal(t, 429, statuses[0], "the first answer was the rate limit")
}

func TestOverloadedModelIsUnavailable(t *testing.T) {
	sc := turns(modelserver.Turn{Error: &modelserver.HTTPError{Status: 529, Message: "overloaded"}})
	r := runSolo(t, sc, "anything", nil)
	require.Error(t, r.err)
	assert.Equal(t, fault.KindModelUnavailable, KindOf(r.err))
	assert.Equal(t, fault.ExitAgent, r.rec.ExitCode)
}
