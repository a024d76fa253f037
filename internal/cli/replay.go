package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// replayOptions is `spawn replay` after flag parsing.
type replayOptions struct {
	Ref  string
	Repo string
	// Bins are the binaries to run instead of the run's, by CLI name
	// (--claude, --gemini...); "" keeps the run's.
	Bins     map[string]string
	JSON     bool
	Quiet    bool
	Progress progressMode
}

func newReplayCmd(d *deps) *cli.Command {
	reg := runners.NewRegistry()
	flags := []cli.Flag{repoFlag()}
	for _, a := range reg.Adapters() {
		flags = append(flags, &cli.StringFlag{Name: a.Name(), Usage: "run this " + a.Name() + " binary in the run's " + a.Name() + " seats instead of the one it ran (a CLI upgrade to check)", DefaultText: "the run's"})
	}
	flags = append(flags,
		&cli.BoolFlag{Name: "json", Usage: "print the replay's record as the only output: its replay member compares it with the run (and holds both requests where they diverged)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not narrate what the agents do on stderr"},
		progressFlag(),
	)
	return &cli.Command{
		Name:      "replay",
		Usage:     "run a finished run again without a model, from its cassette, and say whether it came out the same",
		ArgsUsage: runRefUsage,
		Description: "Every run keeps its model traffic, redacted, in its run directory (cassette.jsonl.gz).\n" +
			"spawn replay starts a new run from the run's base with the same task, configuration and\n" +
			"agent CLIs in the same seats, and spawn's relay answers their model requests from the\n" +
			"cassette: no model is called and no key is needed. It ends by comparing the two runs:\n" +
			"the trees of their commits, their findings, their verdict; where a request matched none\n" +
			"of the cassette's, it shows the first one beside the recorded one as a diff. Paths, run\n" +
			"ids, session ids, dates and the run's commit ids differ between runs and are not compared.\n\n" +
			"--claude PATH (one flag per agent CLI) replays with another binary: whether its requests\n" +
			"still match says whether the upgrade changes what the agents send.\n\n" +
			"Exit code: 0 the replay reproduced the run, 8 it did not, 2 the run cannot be replayed.\n\n" +
			"Example:\n   spawn replay last\n   spawn replay 20261123-0941 --claude ~/next/node_modules/.bin/claude\n   spawn replay --json last | jq .replay.divergence.diff",
		OnUsageError: onUsageError,
		Flags:        flags,
		Action: func(c *cli.Context) error {
			ref, err := oneRunRef(c)
			if err != nil {
				return err
			}
			progress, err := parseProgress(c.String("progress"))
			if err != nil {
				return err
			}
			bins := map[string]string{}
			for _, a := range reg.Adapters() {
				if p := c.String(a.Name()); p != "" {
					bins[a.Name()] = p
				}
			}
			return runReplay(c.Context, d, &replayOptions{Ref: ref, Repo: c.String("repo"), Bins: bins,
				JSON: c.Bool("json"), Quiet: c.Bool("quiet"), Progress: progress})
		},
	}
}

// runReplay is `spawn replay`: the replay's summary and how it compares
// with the run (or its record, with --json). It exits 0 when the replay
// reproduced the run, spawn.ExitDiverged when it did not, and with the
// run's own code when it could not start.
func runReplay(ctx context.Context, d *deps, opts *replayOptions) error {
	d.agents.Store(true)
	sink := d.progressSink(opts.Progress, opts.JSON, opts.Quiet)
	rec, err := spawn.Replay(ctx, spawn.ReplayOptions{Ref: opts.Ref, RepoDir: opts.Repo, Bins: opts.Bins, Env: d.env, Hurry: d.hurry}, sink)
	sink.Close()
	switch {
	case opts.JSON:
		if perr := printJSON(d.io.Out, rec); perr != nil {
			return errors.Join(err, perr)
		}
	case rec.ID != "":
		fmt.Fprint(d.io.Out, summary(rec))
	}
	if err != nil {
		fmt.Fprintf(d.io.Err, "spawn: %v\n", err)
	}
	if rec.Replay == nil {
		return exitIf(rec.ExitCode)
	}
	if rec.Replay.Same {
		return nil
	}
	return exitCode(spawn.ExitDiverged)
}

// cassetteLines are the summary's lines about the run's cassette and,
// for a replay, how it compares with the run it replays.
func cassetteLines(rec *observability.Record) string {
	var b strings.Builder
	if c := rec.Cassette; c != nil {
		path := filepath.Join(rec.Repo, sandbox.Dir, "runs", rec.ID, c.Path)
		if rec.Status == observability.StatusRunning {
			fmt.Fprintf(&b, "  cassette:  %s (recording)\n", path)
		} else {
			fmt.Fprintf(&b, "  cassette:  %s (spawn replay %s runs it again without a model)\n", path, rec.ID)
		}
		if c.Truncated {
			fmt.Fprintf(&b, "             recording stopped at its bound of %s: a replay answers what it holds\n", size(c.LimitBytes))
		}
	}
	rp := rec.Replay
	if rp == nil {
		return b.String()
	}
	fmt.Fprintf(&b, "  replay of: %s, answered from %s\n", rp.Of, rp.Cassette)
	for _, bin := range rp.Binaries {
		fmt.Fprintf(&b, "  binary:    %s %s (instead of the run's)\n", bin.CLI, bin.Path)
	}
	if rec.Status == observability.StatusRunning {
		return b.String()
	}
	switch {
	case rp.Same:
		fmt.Fprintf(&b, "  same:      yes: the same commits (trees %s), the same findings, the same verdict (%s); %s answered from the cassette\n",
			shortTrees(rp.Trees), rec.Verdict, text.Plural(rp.Answered, "request"))
	default:
		fmt.Fprintf(&b, "  same:      no\n")
		for _, d := range rp.Differences {
			fmt.Fprintf(&b, "             %s\n", d)
		}
	}
	match := "yes"
	if !rp.RequestsMatch {
		match = "no"
	}
	fmt.Fprintf(&b, "  requests:  match: %s (%d answered, %d not in the cassette, %d recorded never asked for)\n", match, rp.Answered, rp.Missed, rp.Unused)
	if d := rp.Divergence; d != nil {
		fmt.Fprintf(&b, "  diverged:  the %s seat's %s %s; - the recorded request %d, + the replay's (normalised):\n", d.Seat, d.Method, d.Path, d.Seq)
		for _, line := range strings.Split(d.Diff, "\n") {
			fmt.Fprintf(&b, "             %s\n", line)
		}
	}
	fmt.Fprintf(&b, "  took:      %s; the run took %s\n", time.Duration(rec.DurationMS)*time.Millisecond, time.Duration(rp.OriginalDurationMS)*time.Millisecond)
	return b.String()
}

func shortTrees(trees []string) string {
	var out []string
	for _, t := range trees {
		out = append(out, fmt.Sprintf("%.12s", t))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// size is n bytes in KiB or MiB.
func size(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}
