// Package team is spawn's review policy: a coder and a reviewer from
// different model families, looping until the work is approved. Each mode
// is a strategy over the small Run interface this package declares, so the
// whole policy (verdicts, convergence, repair turns, finding tracking) runs
// and is tested without any agent CLI:
//
//   - solo: one coder turn, no reviewer;
//   - sequential: coder, review, one fix turn, final review (its verdict is
//     the run's);
//   - pingpong: coder, review, fix, review... until the reviewers approve,
//     max_iterations is reached (changes_requested), or the loop stops
//     converging (not_converged);
//   - github: pingpong's loop, published as a pull request (Forge).
//
// A reviewer's answer that cannot be parsed is never an approval: the
// reviewer is asked once more (a repair turn), and if that fails too the
// round's verdict is review_failed.
package team

import (
	"context"
	"fmt"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/prompts"
)

// Run is what the policy needs of a run: the two agents, the sandbox's
// history, and somewhere to report each review round. spawn implements it
// over the real CLIs; tests implement it with scripted answers.
type Run interface {
	// Code runs a coder turn in the sandbox (resuming t.Resume when set)
	// and commits what the coder left. The error ends the loop.
	Code(ctx context.Context, t CoderTurn) (Reply, error)
	// Review runs one reviewer seat's turn (resuming t.Resume when set) and
	// returns its answer. The error ends the loop. Parallel seats call it
	// concurrently.
	Review(ctx context.Context, t ReviewerTurn) (Reply, error)
	// Head is the commit at the tip of the sandbox branch.
	Head(ctx context.Context) (string, error)
	// Diff is the change from..to on the sandbox branch ("" when none).
	Diff(ctx context.Context, from, to string) (string, error)
	// Reviewed reports a finished review round. It may be called from the
	// goroutine that runs the loop only.
	Reviewed(r observability.Round)
}

// Forge is where a github-mode run is published besides its sandbox: a
// pull request. The github strategy is pingpong's loop (the same turns,
// verdicts and convergence) with its Run also a Forge, told of each step;
// package team/forge implements it over package team/github, and spawn
// hands Drive its run and that forge as one value. An error from a Forge
// method ends the loop.
type Forge interface {
	// AfterCode: the coder's turn of round is committed. Push the branch,
	// open the pull request (or update it). After a fix turn, said is what
	// the coder's final message says about each finding it was asked to
	// fix (prompts.Attribute: the reply contract, else the findings its
	// prose names); a finding it does not name is not in it. A thread is
	// said fixed only once a review round confirms it (AfterReview).
	AfterCode(ctx context.Context, round int, said []prompts.Attribution) error
	// BeforeReview: review round is about to review the commit head.
	BeforeReview(ctx context.Context, round int, head string) error
	// AfterReview: post round r's reviews, one per seat; close the
	// threads of the findings it confirmed resolved and answer those still
	// open.
	AfterReview(ctx context.Context, r observability.Round) error
	// AfterLoop: the loop ended with verdict (after the AfterReview of
	// its last round).
	AfterLoop(ctx context.Context, verdict observability.Verdict) error
}

// CoderTurn is one turn of the coder.
type CoderTurn struct {
	Round  int // 1 for the first turn, N+1 for the fix of review round N
	Prompt string
	Resume string // the coder's session to resume; "" starts one
}

// ReviewerTurn is one turn of a reviewer seat.
type ReviewerTurn struct {
	Round int
	// Seat is the seat's label: its domain or "all" on a board of one
	// reviewer, else the reviewer's name, and "/domain" with parallel
	// domains ("codex", "codex/security").
	Seat string
	// Reviewer is the seat's reviewer (Reviewer.Name).
	Reviewer string
	Prompt   string
	Resume   string // the seat's session to resume; "" starts one
}

// Reply is an agent's answer to a turn.
type Reply struct {
	Session string // the agent's session id, to resume it
	Text    string // its final message
	// Tests is the coder's last test run in the turn: the command and the
	// end of its output; "" when it ran none. The reviewers are shown it.
	Tests string
	// Tokens are the tokens the agent CLI reported for the turn.
	Tokens observability.Tokens
}

// Policy is the loop's configuration.
type Policy struct {
	Mode observability.Mode
	// MaxIterations bounds the review rounds (pingpong; sequential has two).
	MaxIterations int
	// Domains are the review domains; empty means all of them.
	Domains []prompts.Domain
	// Parallel gives each domain a reviewer seat of its own (each
	// reviewer's), run concurrently up to MaxConcurrent.
	Parallel      bool
	MaxConcurrent int
	// Board are the reviewers, each a seat (or a seat per domain): their
	// answers are merged by finding id, and Rule decides the round.
	Board []Reviewer
	Rule  Rule
}

// Reviewer is one reviewer of the board: its name (the run's Review is
// asked for it) and who it is in records.
type Reviewer struct {
	Name string
	LLM  observability.LLM
}

// Rule is how the board decides a round.
type Rule struct {
	// Majority approves a round that more than half of the seats approve;
	// otherwise every seat must.
	Majority bool
	// BlockAt is the severity at and above which an open finding blocks
	// approval whatever the seats say: "" is high, NoBlock blocks none.
	BlockAt observability.Severity
}

// NoBlock, as Rule.BlockAt, lets the seats' verdicts alone decide.
const NoBlock observability.Severity = "none"

// maxDiffBytes bounds the diff a reviewer is given; a larger diff is cut and
// the cut is said in the prompt.
const maxDiffBytes = 1 << 20

// Drive runs the task under the policy's mode and returns the run's
// verdict. base is the commit the sandbox branch starts from. An error is
// an agent or sandbox failure that ended the loop; the verdict is then
// VerdictNone unless a review round had already ended it.
func Drive(ctx context.Context, p Policy, task, base string, run Run) (observability.Verdict, error) {
	switch p.Mode {
	case observability.ModeSolo:
		_, err := run.Code(ctx, CoderTurn{Round: 1, Prompt: task})
		return observability.VerdictNone, err
	case observability.ModeSequential, observability.ModePingpong:
		l := newLoop(p, task, base, run)
		return l.drive(ctx)
	case observability.ModeGitHub:
		f, ok := run.(Forge)
		if !ok {
			return observability.VerdictNone, fmt.Errorf("team: mode github needs a run that is a Forge")
		}
		l := newLoop(p, task, base, run)
		l.forge = f
		return l.drive(ctx)
	}
	return observability.VerdictNone, fmt.Errorf("team: mode %q has no strategy", p.Mode)
}
