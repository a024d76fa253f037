package spawn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// coderSystemPrompt tells the coder how it is being run.
func coderSystemPrompt(sb *Sandbox) string {
	return fmt.Sprintf("You are running unattended under spawn, inside a git worktree at %s on the branch %s, made for this task alone. "+
		"No one can answer questions: when something is unclear, make the most reasonable choice, say which, and finish the task. "+
		"Work only inside this directory. Whatever you leave uncommitted is committed for you when you finish.",
		sb.Path, sb.Branch)
}

// claudeBinary finds the configured claude CLI in the PATH of env.
func claudeBinary(cfg Config, env []string) (string, error) {
	return agentBinary("claude", cfg.Runners.Claude.Command, "@anthropic-ai/claude-code", env)
}

// agentBinary finds an agent CLI in the PATH of env, or says how to get it.
func agentBinary(cli, command, npmPackage string, env []string) (string, error) {
	bin, err := proc.LookPath(command, env)
	if err != nil {
		return "", errorf(KindMissingCLI, err, "the %s CLI (%s) was not found; install it with `npm install -g %s` or set runners.%s.command", cli, command, npmPackage, cli)
	}
	return bin, nil
}

// Claude returns the coder runner the configuration describes.
func (r *Run) Claude() (*runners.Claude, error) {
	cfg := r.opts.Config
	bin, err := claudeBinary(cfg, r.opts.Env)
	if err != nil {
		return nil, err
	}
	return &runners.Claude{
		Bin:                bin,
		Model:              cfg.Runners.Claude.Model,
		PermissionMode:     cfg.Permissions.Mode,
		AllowedTools:       cfg.Permissions.AllowedTools,
		DisallowedTools:    cfg.Permissions.DeniedTools,
		AppendSystemPrompt: coderSystemPrompt(r.Sandbox),
		MaxRetries:         cfg.Runners.Claude.MaxRetries,
	}, nil
}

// CoderTurn runs one coder session in the sandbox (a new session, or a
// resumed one) under the watcher: denied escalatable tools are granted and
// the session resumed, questions are answered, budgets and timeouts are
// enforced. Then whatever the coder left is committed. The error is an
// *Error saying why the turn failed: timeout, budget, interrupt, crash,
// model API.
func (r *Run) CoderTurn(ctx context.Context, iteration int, prompt, resume string) (*watcher.Session, error) {
	claude, err := r.Claude()
	if err != nil {
		return nil, err
	}
	policy, err := r.coderPolicy()
	if err != nil {
		return nil, err
	}
	turn := runners.Turn{Prompt: prompt, Dir: r.Sandbox.Path, Resume: resume}
	sess, err := r.supervise(ctx, claude, LLMClaude, "coder", iteration, turn, policy)
	if err != nil {
		return sess, err
	}
	turnErr := classify(sess, "claude", r.transcriptHint())
	if _, err := r.CommitLeftovers(ctx, iteration); err != nil && turnErr == nil {
		turnErr = err
	}
	return sess, turnErr
}

// coderPolicy is the watcher's policy for the coder, from the configuration.
func (r *Run) coderPolicy() (watcher.Policy, error) {
	cfg := r.opts.Config
	var rules []watcher.Rule
	for _, s := range cfg.Permissions.Escalatable {
		rule, err := watcher.ParseRule(s)
		if err != nil {
			return watcher.Policy{}, &ConfigError{Key: "permissions.escalatable", Msg: err.Error()}
		}
		rules = append(rules, rule)
	}
	questions, err := watcher.NewQuestionDetector(cfg.Spawn.QuestionPatterns)
	if err != nil {
		return watcher.Policy{}, &ConfigError{Key: "spawn.question_patterns", Msg: err.Error()}
	}
	return watcher.Policy{
		Escalatable:    rules,
		MaxEscalations: cfg.Team.MaxEscalations,
		Questions:      questions,
		MinConfidence:  cfg.Spawn.QuestionConfidence,
		Answer:         cfg.Spawn.AutoAnswer,
		MaxAutoAnswers: cfg.Spawn.MaxAutoAnswers,
		MaxTurns:       cfg.Spawn.MaxTurns,
		MaxCostUSD:     cfg.Spawn.MaxCostUSD,
		IdleTimeout:    cfg.Spawn.IdleTimeout,
		TotalTimeout:   cfg.Spawn.TotalTimeout,
		Grace:          r.opts.Grace,
	}, nil
}

// supervise runs one agent session under the watcher, keeping each
// process's transcripts in the run directory and its command lines,
// denials, grants, questions and usage in the record, which is saved after
// every process and every decision.
func (r *Run) supervise(ctx context.Context, agent watcher.Agent, llm, role string, iteration int, turn runners.Turn, policy watcher.Policy) (*watcher.Session, error) {
	var mu sync.Mutex // names and question, shared by the hooks of this session
	names := map[int]string{}
	question := -1
	hooks := watcher.Hooks{
		Env:      r.opts.Env,
		Redactor: r.redactor,
		Hurry:    r.opts.Hurry,
		Streams: func(n int) (io.WriteCloser, io.WriteCloser, error) {
			r.mu.Lock()
			r.procs++
			base := fmt.Sprintf("%d-%s", r.procs, role)
			r.mu.Unlock()
			mu.Lock()
			names[n] = base
			mu.Unlock()
			stdout, err := os.Create(filepath.Join(r.Dir, base+".stdout.jsonl"))
			if err != nil {
				return nil, nil, errorf(KindInternal, err, "cannot create a transcript: %v", err)
			}
			stderr, err := os.Create(filepath.Join(r.Dir, base+".stderr.log"))
			if err != nil {
				_ = stdout.Close()
				return nil, nil, errorf(KindInternal, err, "cannot create a transcript: %v", err)
			}
			return stdout, stderr, nil
		},
		OnProcess: func(n int, out watcher.Outcome) {
			mu.Lock()
			base := names[n]
			mu.Unlock()
			_ = r.Update(func(rec *observability.Record) {
				rec.CommandLines = append(rec.CommandLines, observability.CommandLine{
					LLM:        llm,
					Role:       role,
					Iteration:  iteration,
					Argv:       out.Argv,
					WorkDir:    out.Dir,
					StartedAt:  out.StartedAt.UTC(),
					DurationMS: out.Duration.Milliseconds(),
					ExitCode:   out.ExitCode,
					Pid:        out.Pid,
					Stdout:     base + ".stdout.jsonl",
					Stderr:     base + ".stderr.log",
				})
				if res := out.Result; res != nil {
					rec.Usage.InputTokens += res.Usage.InputTokens
					rec.Usage.OutputTokens += res.Usage.OutputTokens
				}
			})
		},
		OnProgress: func(p watcher.Progress) {
			switch p.Kind {
			case watcher.ProgressDenial:
				_ = r.Update(func(rec *observability.Record) {
					rec.PermissionsRequested = append(rec.PermissionsRequested, observability.PermissionRequest{
						LLM: llm, Iteration: iteration, Tool: p.Tool, Input: p.Input, Rule: p.Rule,
					})
				})
			case watcher.ProgressEscalation:
				_ = r.Update(func(rec *observability.Record) {
					rec.PermissionsGranted = append(rec.PermissionsGranted, observability.PermissionGrant{
						LLM: llm, Iteration: iteration, Tool: p.Tool, Rule: p.Rule,
					})
				})
			case watcher.ProgressQuestion:
				_ = r.Update(func(rec *observability.Record) {
					rec.Questions = append(rec.Questions, observability.Question{
						LLM: llm, Iteration: iteration, Question: p.Detail, Confidence: p.Confidence,
					})
					mu.Lock()
					question = len(rec.Questions) - 1
					mu.Unlock()
				})
			case watcher.ProgressAnswer:
				_ = r.Update(func(rec *observability.Record) {
					mu.Lock()
					defer mu.Unlock()
					if question >= 0 {
						rec.Questions[question].Answer = p.Detail
					}
				})
			case watcher.ProgressLimit:
				_ = r.Update(func(rec *observability.Record) { rec.Notes = append(rec.Notes, p.Detail) })
			}
			if r.opts.OnProgress != nil {
				r.opts.OnProgress(role, p)
			}
		},
	}
	sess, err := watcher.Supervise(ctx, agent, turn, policy, hooks)
	saveErr := r.Update(func(rec *observability.Record) {
		if sess != nil {
			rec.Usage.Turns += sess.Turns
			rec.Usage.CostUSD += sess.CostUSD
		}
	})
	if err != nil {
		return sess, errorf(KindAgentCrashed, err, "cannot start %s: %v", llm, err)
	}
	return sess, saveErr
}

func (r *Run) transcriptHint() string {
	return fmt.Sprintf("see the transcripts in %s", r.Dir)
}

// classify turns a session's outcome into spawn's error, nil on success.
// The exit code alone is never trusted: a missing result event is a failure
// even with exit code 0 (claude exits 0 on SIGINT).
func classify(sess *watcher.Session, cli, hint string) error {
	out := sess.Last()
	switch sess.Stopped {
	case watcher.StopIdleTimeout:
		return errorf(KindTimeout, nil, "%s printed nothing for the idle timeout (idle_timeout) and was stopped; its work is committed on the sandbox branch", cli)
	case watcher.StopTotalTimeout:
		return errorf(KindTimeout, nil, "%s ran past the total timeout (total_timeout) and was stopped; its work is committed on the sandbox branch", cli)
	case watcher.StopCancelled:
		return errorf(KindInterrupted, context.Canceled, "interrupted; %s was stopped and its work is committed on the sandbox branch", cli)
	case watcher.StopMaxTurns:
		return errorf(KindBudget, nil, "%s used up its turn budget (max_turns) after %d turns and was stopped; its work is committed on the sandbox branch", cli, sess.Turns)
	case watcher.StopMaxCost:
		return errorf(KindBudget, nil, "%s reached its cost budget (max_cost_usd, about $%.4f spent) and was stopped; its work is committed on the sandbox branch", cli, sess.CostUSD)
	}
	res := out.Result
	if res == nil {
		cause := out.ParseErr
		if cause == nil {
			cause = errors.New("no result event")
		}
		said := ""
		if out.StderrTail != "" {
			said = fmt.Sprintf(" (its last words on stderr: %q)", out.StderrTail)
		}
		return errorf(KindAgentCrashed, cause, "%s exited with code %d without a result%s; %s", cli, out.ExitCode, said, hint)
	}
	if !res.IsError {
		return nil
	}
	text := strings.TrimSpace(res.Text)
	if text == "" {
		text = strings.TrimSpace(res.ErrorMessage)
	}
	status := res.APIErrorStatus
	switch {
	case status == 401 || status == 403 || strings.Contains(text, "Not logged in") || strings.Contains(text, "Failed to authenticate"):
		return errorf(KindAuth, nil, "the model API refused %s's credentials (HTTP %d: %s); set its API key or log in to it, then run again", cli, status, oneLine(text))
	case status == 429:
		return errorf(KindRateLimited, nil, "the model API kept rate-limiting %s (HTTP 429: %s) after its retries; wait, or raise your quota, then run again", cli, oneLine(text))
	case status >= 500:
		return errorf(KindModelUnavailable, nil, "the model API is unavailable: HTTP %d (%s) after %s's retries; try again later", status, oneLine(text), cli)
	case status != 0:
		return errorf(KindModelAPI, nil, "the model API failed with HTTP %d (%s); %s", status, oneLine(text), hint)
	}
	return errorf(KindAgentFailed, nil, "%s reported a failure (%s): %s; %s", cli, res.Subtype, oneLine(text), hint)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:197]) + "..."
	}
	return s
}
