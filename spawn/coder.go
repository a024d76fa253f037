package spawn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	name := cfg.Runners.Claude.Command
	bin, err := proc.LookPath(name, env)
	if err != nil {
		return "", errorf(KindMissingCLI, err, "the claude CLI (%s) was not found; install it with `npm install -g @anthropic-ai/claude-code` or set runners.claude.command", name)
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

// CoderTurn runs the coder once in the sandbox (a new session, or resume),
// records what it did, and commits what it left. The error is an *Error
// saying why the turn failed: timeout, interrupt, crash, model API.
func (r *Run) CoderTurn(ctx context.Context, iteration int, prompt, resume string) (watcher.Outcome, error) {
	claude, err := r.Claude()
	if err != nil {
		return watcher.Outcome{}, err
	}
	turn := runners.Turn{Prompt: prompt, Dir: r.Sandbox.Path, Resume: resume, MaxTurns: r.opts.Config.Spawn.MaxTurns}
	out, err := r.supervise(ctx, claude, LLMClaude, "coder", iteration, turn)
	if err != nil {
		return out, err
	}
	turnErr := classify(out, "claude", r.transcriptHint())
	if _, err := r.CommitLeftovers(ctx, iteration); err != nil && turnErr == nil {
		turnErr = err
	}
	return out, turnErr
}

// supervise runs one agent process under the watcher, keeping its
// transcripts in the run directory and its command line, denials and usage
// in the record.
func (r *Run) supervise(ctx context.Context, agent watcher.Agent, llm, role string, iteration int, turn runners.Turn) (watcher.Outcome, error) {
	r.procs++
	base := fmt.Sprintf("%d-%s", r.procs, role)
	stdout, err := os.Create(filepath.Join(r.Dir, base+".stdout.jsonl"))
	if err != nil {
		return watcher.Outcome{}, errorf(KindInternal, err, "cannot create a transcript: %v", err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(r.Dir, base+".stderr.log"))
	if err != nil {
		return watcher.Outcome{}, errorf(KindInternal, err, "cannot create a transcript: %v", err)
	}
	defer stderr.Close()

	cfg := r.opts.Config.Spawn
	out, err := watcher.Run(ctx, agent, turn, watcher.Options{
		Env:          r.opts.Env,
		Transcript:   stdout,
		Errlog:       stderr,
		Redactor:     r.redactor,
		IdleTimeout:  cfg.IdleTimeout,
		TotalTimeout: cfg.TotalTimeout,
		OnEvent: func(ev runners.Event) {
			r.onEvent(llm, iteration, ev)
		},
	})
	if err != nil {
		return out, errorf(KindAgentCrashed, err, "cannot start %s: %v", llm, err)
	}
	r.Record.CommandLines = append(r.Record.CommandLines, observability.CommandLine{
		LLM:        llm,
		Role:       role,
		Iteration:  iteration,
		Argv:       out.Argv,
		WorkDir:    out.Dir,
		StartedAt:  out.StartedAt.UTC(),
		DurationMS: out.Duration.Milliseconds(),
		ExitCode:   out.ExitCode,
		Stdout:     base + ".stdout.jsonl",
		Stderr:     base + ".stderr.log",
	})
	return out, r.Save()
}

// onEvent folds one agent event into the record.
func (r *Run) onEvent(llm string, iteration int, ev runners.Event) {
	if ev.Kind == runners.KindResult {
		res := ev.Result
		for _, d := range res.Denials {
			r.Record.PermissionsRequested = append(r.Record.PermissionsRequested, observability.PermissionRequest{
				LLM: llm, Iteration: iteration, Tool: d.Tool, Input: d.Input,
			})
		}
		u := &r.Record.Usage
		u.CostUSD += res.Usage.CostUSD
		u.InputTokens += res.Usage.InputTokens
		u.OutputTokens += res.Usage.OutputTokens
		u.Turns += res.NumTurns
	}
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(ev)
	}
}

func (r *Run) transcriptHint() string {
	return fmt.Sprintf("see the transcripts in %s", r.Dir)
}

// classify turns an agent's outcome into spawn's error, nil on success.
// The exit code alone is never trusted: a missing result event is a failure
// even with exit code 0 (claude exits 0 on SIGINT).
func classify(out watcher.Outcome, cli, hint string) error {
	switch out.Stopped {
	case watcher.StopIdleTimeout:
		return errorf(KindTimeout, nil, "%s printed nothing for the idle timeout and was stopped; its work is committed on the sandbox branch", cli)
	case watcher.StopTotalTimeout:
		return errorf(KindTimeout, nil, "%s ran past the total timeout and was stopped; its work is committed on the sandbox branch", cli)
	case watcher.StopCancelled:
		return errorf(KindInterrupted, context.Canceled, "interrupted; %s was stopped and its work is committed on the sandbox branch", cli)
	}
	res := out.Result
	if res == nil {
		cause := out.ParseErr
		if cause == nil {
			cause = errors.New("no result event")
		}
		return errorf(KindAgentCrashed, cause, "%s exited with code %d without a result; %s", cli, out.ExitCode, hint)
	}
	if !res.IsError {
		return nil
	}
	text := strings.TrimSpace(res.Text)
	if text == "" {
		text = strings.TrimSpace(res.ErrorMessage)
	}
	switch {
	case res.APIErrorStatus == 401 || res.APIErrorStatus == 403 || strings.Contains(text, "Not logged in") || strings.Contains(text, "Failed to authenticate"):
		return errorf(KindAuth, nil, "the model API refused %s's credentials (%s); set its API key or log in to it, then run again", cli, oneLine(text))
	case res.APIErrorStatus != 0:
		return errorf(KindModelAPI, nil, "the model API failed with HTTP %d (%s); %s's own retries are exhausted, try again later", res.APIErrorStatus, oneLine(text), cli)
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
