package spawn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/infinite-improbability-drive/spawn/internal/relay"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

// The files of a run directory that spawn replay reads.
const (
	// cassetteName is the run's model traffic (relay.Recorder's).
	cassetteName = "cassette.jsonl.gz"
	// configName is the run's effective configuration (config.Encode's),
	// secrets redacted.
	configName = "config.json"
)

// startCassette writes the run's effective configuration into its
// directory and, unless [observability] cassette is off, has the relay
// record every exchange into the run's cassette, redacted with the
// run's redactor; the record names it. In a replay, the relay answers
// from the replayed run's cassette instead. It adds to the run's
// cleanups what fills in the commits' trees and closes the cassette,
// which run after the relay is closed. Last, it writes the record, the
// run's first write of it, and waits for it.
func (r *run) startCassette() error {
	b, err := config.Encode(r.opts.Config)
	if err == nil {
		err = os.WriteFile(filepath.Join(r.dir.Dir, configName), r.red.Bytes(b), 0o600)
	}
	if err != nil {
		return fault.Errorf(fault.KindInternal, err, "cannot keep the run's configuration: %v", err)
	}
	r.cleanups = append(r.cleanups, r.fillTrees)
	if p := r.opts.replay; p != nil {
		p.player = relay.NewPlayer(p.exchanges, p.recorded, r.cassetteContext, r.red.String, observability.Redacted)
		r.conf.relay.Play(p.player)
		r.record.mu.Lock()
		r.rec.Replay = &observability.Replay{Of: p.of.ID, Cassette: p.path, Binaries: p.binaries,
			OriginalVerdict: p.of.Verdict, OriginalDurationMS: p.of.DurationMS}
		r.record.mu.Unlock()
	}
	if !r.opts.Config.Observability.Cassette {
		return r.saveRecord()
	}
	path := filepath.Join(r.dir.Dir, cassetteName)
	full := func(limit int64) {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: fmt.Sprintf("the run's cassette reached its bound of %d MiB; recording stopped there and the run goes on (spawn replay answers what it holds)", limit>>20)})
	}
	rec, err := relay.NewRecorder(path, relay.CassetteHeader{Context: r.cassetteContext()}, relay.DefaultCassetteLimit, r.red.String, full)
	if err != nil {
		return fault.Errorf(fault.KindInternal, err, "cannot start the run's cassette: %v", err)
	}
	r.conf.relay.Record(rec)
	r.record.mu.Lock()
	r.rec.Cassette = &observability.Cassette{Path: cassetteName, LimitBytes: relay.DefaultCassetteLimit}
	r.record.mu.Unlock()
	r.cleanups = append(r.cleanups, func(context.Context) error {
		sum, err := rec.Close()
		r.record.mu.Lock()
		r.rec.Cassette.Bytes, r.rec.Cassette.Exchanges, r.rec.Cassette.Truncated = sum.Bytes, sum.Exchanges, sum.Truncated
		r.record.mu.Unlock()
		return err
	})
	return r.saveRecord()
}

// saveRecord writes the record as it is now.
func (r *run) saveRecord() error {
	if err := r.record.save(); err != nil {
		return fault.Errorf(fault.KindInternal, err, "%v", err)
	}
	return nil
}

// cassetteContext is what differs between this run and another run of
// the same work, as its agents' requests show it (relay.Context): the
// worktree's path (in tool calls and results, claude's project folder,
// gemini's workspace), the agents' private directory (their homes and
// temporary files), the repository's path, the run's id and branch, the
// user's HOME and TMPDIR, and the run's commits (claude's git status
// names them), and the kernel's release (claude's system prompt names
// it: a replay on another machine has another).
func (r *run) cassetteContext() relay.Context {
	c := relay.Context{Literals: map[string]string{
		"sandbox": r.sb.Path,
		"agents":  r.conf.root,
		"repo":    r.pre.plan.Repo.Dir,
		"branch":  r.sb.Branch,
		"run":     r.rec.ID,
		"home":    r.opts.environ.Home,
		"tmp":     r.opts.environ.TmpDir,
		"kernel":  kernelRelease(),
	}}
	// Where each CLI is installed, as its requests may name it (gemini
	// lists its built-in skills by path): without it a cassette would
	// replay only from the checkout that recorded it.
	for _, s := range r.pre.seats.all() {
		c.Installs = append(c.Installs, installDir(s.bin))
	}
	r.record.mu.Lock()
	defer r.record.mu.Unlock()
	for _, cm := range r.rec.Commits {
		c.Objects = append(c.Objects, cm.SHA)
	}
	return c
}

// kernelRelease is the running kernel's release ("6.1.0-18-amd64"), ""
// when it cannot be read.
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// fillTrees records each commit's tree, read from the repository the
// run's branch is published in: what a replay of the run compares.
func (r *run) fillTrees(ctx context.Context) error {
	r.record.mu.Lock()
	var shas []string
	for _, c := range r.rec.Commits {
		shas = append(shas, c.SHA)
	}
	r.record.mu.Unlock()
	if len(shas) == 0 {
		return nil
	}
	trees, err := r.sb.Repo.Trees(ctx, shas)
	if err != nil {
		return fmt.Errorf("find the trees of the run's commits: %w", err)
	}
	r.record.mu.Lock()
	for i, c := range r.rec.Commits {
		if t, ok := trees[c.SHA]; ok {
			r.rec.Commits[i].Tree = t
		}
	}
	r.record.mu.Unlock()
	return nil
}

// readConfig reads a run's effective configuration from its directory.
func readConfig(dir string) (config.Config, error) {
	b, err := os.ReadFile(filepath.Join(dir, configName))
	if err != nil {
		return config.Config{}, err
	}
	return config.Decode(b)
}
