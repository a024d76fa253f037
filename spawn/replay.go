package spawn

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/relay"
	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/team"
)

// ExitDiverged is spawn replay's exit code when the replay did not
// reproduce the run: a request that is not in the cassette, or other
// commits, findings or verdict.
const ExitDiverged = 8

// ReplayOptions is a run to replay.
type ReplayOptions struct {
	// Ref names the run: its id, a unique prefix of it, or "last".
	Ref string
	// Bins are agent CLIs to run instead of the run's, by registry name
	// ("claude": "/opt/claude-next/bin/claude").
	Bins    map[string]string
	RepoDir string // a directory in the repository; "" is the current one
	// Env is the environment the replay's agents run in; it needs no
	// credential.
	Env   []string
	Hurry <-chan struct{}
	Grace time.Duration
	Now   func() time.Time
}

// replaying is what a replay answers from: the run it replays, and that
// run's cassette.
type replaying struct {
	of        *observability.Record
	path      string // the cassette
	exchanges []relay.Exchange
	recorded  relay.Context // the recorded run's, its commits included
	binaries  []observability.ReplayBinary
	player    *relay.Player // set when the relay starts answering
}

// Replay runs a run again without a model: a new run (its own id,
// sandbox, branch and record) from the run's base, with the run's task,
// mode and configuration (kept in its directory) and the same agent CLIs
// in the same seats (or the binaries opts.Bins names), whose model
// requests the relay answers from the run's cassette. No request leaves
// the relay. The replay's record says which run it replays and how they
// compare (Record.Replay): the trees of their commits, their findings
// and verdicts, and the first request no recorded one matched, if any,
// as a diff of the two normalised requests.
//
// It returns the replay's record, never nil, and the replay's error as
// Run's. A run that cannot be replayed (still running, resumed, in
// github mode or a spawn pr run, without a cassette or a kept
// configuration) is a usage *fault.Error and nothing is created.
func Replay(ctx context.Context, opts ReplayOptions, sink Sink) (*observability.Record, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	started := opts.Now()
	fail := func(err error) (*observability.Record, error) {
		return rejected(Options{Now: opts.Now}, started, err), err
	}
	repo, err := runs.OpenRepo(ctx, opts.RepoDir, opts.Env)
	if err != nil {
		return fail(err)
	}
	e, err := repo.Find(opts.Ref)
	if err != nil {
		return fail(err)
	}
	dir := e.Paths
	of, err := dir.ReadRecord()
	if err != nil {
		return fail(fault.Errorf(fault.KindInternal, err, "cannot read run %s: %v", e.ID, err))
	}
	if err := replayable(of); err != nil {
		return fail(err)
	}
	cfg, err := readConfig(dir.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(fault.Errorf(fault.KindUsage, err, "run %s kept no configuration (an older spawn ran it), so it cannot be replayed; replay a run made by this spawn", of.ID))
	}
	if err != nil {
		return fail(fault.Errorf(fault.KindConfig, err, "run %s's configuration (%s) cannot be used: %v", of.ID, filepath.Join(dir.Dir, configName), err))
	}
	cfg.Team.Mode = of.Mode
	p := &replaying{of: of, path: filepath.Join(dir.Dir, cassetteName)}
	if of.Cassette != nil && of.Cassette.Path != "" {
		p.path = filepath.Join(dir.Dir, of.Cassette.Path)
	}
	h, xs, err := relay.ReadCassette(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(fault.Errorf(fault.KindUsage, err, "run %s kept no cassette ([observability] cassette was false when it ran), so it cannot be replayed", of.ID))
	}
	if err != nil {
		return fail(fault.Errorf(fault.KindUsage, err, "run %s's cassette cannot be read (%v); it cannot be replayed", of.ID, err))
	}
	p.exchanges, p.recorded = xs, h.Context
	for _, c := range of.Commits {
		p.recorded.Objects = append(p.recorded.Objects, c.SHA)
	}
	if cfg, p.binaries, err = swapBinaries(cfg, opts.Bins); err != nil {
		return fail(err)
	}
	runOpts := Options{Task: of.Task, Config: cfg, RepoDir: repo.Dir, Base: of.Base, Env: opts.Env,
		Hurry: opts.Hurry, Grace: opts.Grace, Now: opts.Now, replay: p}
	return run1(ctx, runOpts, sink, nil, func(ctx context.Context, r *run) (observability.Verdict, error) {
		var verdict observability.Verdict
		r.cleanups = append(r.cleanups, func(context.Context) error { return r.compare(p, &verdict) })
		v, err := team.Drive(ctx, r.pre.policy, r.opts.Task, r.pre.plan.Base, r)
		verdict = v
		return v, err
	})
}

// replayable says why the run rec records cannot be replayed; nil when
// it can.
func replayable(rec *observability.Record) error {
	switch {
	case rec.Status == observability.StatusRunning:
		return fault.Errorf(fault.KindUsage, nil, "run %s is still running; replay it once it has ended", rec.ID)
	case rec.Mode == observability.ModeGitHub || rec.Mode == observability.ModePR:
		return fault.Errorf(fault.KindNotImplemented, nil, "run %s worked on a pull request (mode %s), which spawn replay cannot replay: it replays solo, sequential and pingpong runs", rec.ID, rec.Mode)
	case len(rec.Resumes) > 0:
		return fault.Errorf(fault.KindUsage, nil, "run %s was resumed, and its cassette holds only its first part; spawn replay replays runs that ran in one go", rec.ID)
	case rec.Base == "":
		return fault.Errorf(fault.KindUsage, nil, "run %s never began (it has no base commit), so there is nothing to replay", rec.ID)
	}
	return nil
}

// swapBinaries is cfg with the binaries bins names (by CLI name, an
// alias too) instead of its own, and what was swapped.
func swapBinaries(cfg config.Config, bins map[string]string) (config.Config, []observability.ReplayBinary, error) {
	reg := runners.NewRegistry()
	var swapped []observability.ReplayBinary
	names := make([]string, 0, len(bins))
	for name := range bins {
		names = append(names, name)
	}
	sort.Strings(names)
	cfg = cfg.Clone()
	for _, name := range names {
		path := bins[name]
		if path == "" {
			continue
		}
		a, err := reg.Lookup(name)
		if err != nil {
			return cfg, nil, fault.Errorf(fault.KindUsage, err, "%v", err)
		}
		if abs, err := filepath.Abs(path); err == nil && strings.ContainsRune(path, os.PathSeparator) {
			path = abs
		}
		cfg.Runners.Edit(a.Name(), func(s *runners.Settings) { s.Command = path })
		swapped = append(swapped, observability.ReplayBinary{CLI: a.Name(), Path: path})
	}
	return cfg, swapped, nil
}

// compare fills in the replay's record how it compares with the run it
// replays: run by finish, once the relay is closed and the commits'
// trees are known. verdict is the replay's.
func (r *run) compare(p *replaying, verdict *observability.Verdict) error {
	res := relay.PlayResult{}
	if p.player != nil {
		res = p.player.Result()
	}
	origTrees, origErr := r.treesOf(p.of)
	r.record.mu.Lock()
	defer r.record.mu.Unlock()
	rp := r.rec.Replay
	rp.Answered, rp.Missed, rp.Unused = res.Answered, res.Missed, res.Unused
	rp.RequestsMatch = res.Missed == 0 && res.Unused == 0
	rp.OriginalTrees = origTrees
	rp.Trees = nil
	for _, c := range r.rec.Commits {
		rp.Trees = append(rp.Trees, c.Tree)
	}
	rp.OriginalFindings, rp.Findings = reviewLines(p.of), reviewLines(r.rec)
	if d := res.Divergence; d != nil {
		rp.Divergence = &observability.Divergence{Seat: d.Seat, Route: d.Route, Method: d.Method, Path: d.Path, Seq: d.Seq,
			Recorded: d.Recorded, Replayed: d.Replayed, Diff: d.Diff}
	}
	var diffs []string
	if d := rp.Divergence; d != nil {
		what := fmt.Sprintf("recorded request %d", d.Seq)
		if d.Seq == 0 {
			what = "no recorded request (the cassette held no more of the seat's)"
		}
		diffs = append(diffs, fmt.Sprintf("the %s seat's request %s %s matched no recorded request (compared with %s); %d request(s) in all were not in the cassette", d.Seat, d.Method, d.Path, what, res.Missed))
	}
	if res.Unused > 0 {
		diffs = append(diffs, fmt.Sprintf("%d recorded request(s) were never asked for", res.Unused))
	}
	if origErr != nil {
		diffs = append(diffs, fmt.Sprintf("the run's trees cannot be compared: %v", origErr))
	} else if !slices.Equal(rp.OriginalTrees, rp.Trees) {
		diffs = append(diffs, fmt.Sprintf("the commits differ: the run's trees [%s], the replay's [%s]", shortList(rp.OriginalTrees), shortList(rp.Trees)))
	}
	if !slices.Equal(rp.OriginalFindings, rp.Findings) {
		diffs = append(diffs, "the reviews differ: the run's "+strings.Join(orNone(rp.OriginalFindings), "; ")+"; the replay's "+strings.Join(orNone(rp.Findings), "; "))
	}
	if *verdict != p.of.Verdict {
		diffs = append(diffs, fmt.Sprintf("the verdict differs: the run's %s, the replay's %s", p.of.Verdict, *verdict))
	}
	rp.Differences, rp.Same = diffs, len(diffs) == 0
	return nil
}

// treesOf is the trees of rec's commits: as its record keeps them, else
// read from the repository.
func (r *run) treesOf(rec *observability.Record) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	for _, c := range rec.Commits {
		if c.Tree != "" {
			out = append(out, c.Tree)
			continue
		}
		tree, err := r.sb.Repo.Run(ctx, "rev-parse", "--verify", "--end-of-options", c.SHA+"^{tree}")
		if err != nil {
			return out, fmt.Errorf("run %s's record keeps no tree for commit %s, and the repository does not hold it", rec.ID, text.ShortSHA(c.SHA))
		}
		out = append(out, strings.TrimSpace(tree))
	}
	return out, nil
}

// reviewLines are rec's reviews as a replay compares them, one line
// each: round, reviewer, seat, verdict, then each finding's id, severity
// and status.
func reviewLines(rec *observability.Record) []string {
	var out []string
	for _, fb := range rec.ReviewFeedback {
		line := fmt.Sprintf("round %d %s %s %s", fb.Iteration, fb.Reviewer, fb.Domain, fb.Verdict)
		for _, f := range fb.Findings {
			line += fmt.Sprintf(" %s:%s:%s", f.ID, f.Severity, f.Status)
		}
		out = append(out, line)
	}
	return out
}

func orNone(lines []string) []string {
	if len(lines) == 0 {
		return []string{"none"}
	}
	return lines
}
