// Package team is spawn's orchestrator: a coder and a reviewer from
// different model families, looping until the work is approved.
//
//   - solo: one coder turn, no reviewer;
//   - sequential: coder, review, one fix turn, final review (its verdict is
//     the run's);
//   - pingpong: coder, review, fix, review... until the reviewers approve,
//     max_iterations is reached (changes_requested), or the loop stops
//     converging (not_converged).
//
// A reviewer's answer that cannot be parsed is never an approval: the
// reviewer is asked once more (a repair turn), and if that fails too the
// round's verdict is review_failed.
package team

import (
	"context"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
)

// Execute runs the task in the mode opts (or its configuration) names. The
// record is returned whenever a sandbox was created, whatever the outcome;
// err says why the run failed and, with the record's verdict, decides the
// exit code (spawn.ExitCode). When the record is nil, nothing was created.
func Execute(ctx context.Context, opts spawn.Options) (*observability.Record, error) {
	if opts.Mode == "" {
		opts.Mode = opts.Config.Team.Mode
	}
	if opts.Mode == "solo" {
		return spawn.Execute(ctx, opts)
	}
	run, err := spawn.Begin(ctx, opts)
	if err != nil {
		return nil, err
	}
	l, err := newLoop(run, opts)
	if err != nil {
		return run.Record, run.Finish(ctx, err, observability.VerdictNone)
	}
	verdict, err := l.drive(ctx)
	return run.Record, run.Finish(ctx, err, verdict)
}
