package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// State is what the registry knows about a run's life, from its record
// and its live lock.
type State string

// The states of a run.
const (
	// StateRunning: a live process holds the run's lock. Its record says
	// running, or it has no record yet (the run is starting).
	StateRunning State = "running"
	// StateAbandoned: the record says running and nobody holds the lock:
	// the process that ran it died. Acquire it to repair it.
	StateAbandoned State = "abandoned"
	// StateFinished: the record has any status other than running.
	StateFinished State = "finished"
	// StateBroken: no process holds the lock and the record is missing or
	// cannot be read (Entry.Err says why). A run being created is broken
	// for the microseconds before its lock appears: Acquire a broken run
	// before acting on it (removing it), which makes such a Create fail.
	StateBroken State = "broken"
)

// Entry is one run as List and Find see it.
type Entry struct {
	Paths
	// Summary is what the run's record says, nil when it cannot be read.
	Summary *Summary
	// Err says why Summary is nil, or why the lock could not be probed
	// (State is then what the record says, never StateAbandoned).
	Err   error
	State State
	// Holder is who holds the live lock (StateRunning) or who last held it
	// and died (StateAbandoned); nil when unknown.
	Holder *Holder
}

// Summary is the part of a run's record that listing runs needs. List
// reads only these members of record.json (a record is several KB, mostly
// what the agents said); Paths.ReadRecord reads the whole record.
type Summary struct {
	ID         string                `json:"id"`
	Task       string                `json:"task"`
	Mode       observability.Mode    `json:"mode"`
	Status     observability.Status  `json:"status"`
	Verdict    observability.Verdict `json:"verdict"`
	ExitCode   int                   `json:"exit_code"`
	Branch     string                `json:"branch"`
	StartedAt  time.Time             `json:"started_at"`
	FinishedAt *time.Time            `json:"finished_at"`
	PRURL      *string               `json:"pr_url"`
	Error      *observability.Error  `json:"error"`
	// CostUSD is the record's usage.cost_usd.
	CostUSD float64 `json:"cost_usd"`
	// Rounds is the highest iteration of the record's review_feedback, 0
	// when the run was never reviewed.
	Rounds int `json:"rounds"`
}

// Errors of Find and Acquire; the errors returned match them with
// errors.Is and say one sentence a user can act on.
var (
	// ErrNotFound: no run matches the reference.
	ErrNotFound = errors.New("no such run")
	// ErrAmbiguous: a prefix matches more than one run.
	ErrAmbiguous = errors.New("ambiguous run reference")
	// ErrLive: another live process holds the run's lock.
	ErrLive = errors.New("run is live")
)

// RefError says why a reference names no single run. It matches
// ErrNotFound or ErrAmbiguous.
type RefError struct {
	Ref string
	// Candidates are, for ErrAmbiguous, the newest matching ids (at most
	// five); Matches counts them all.
	Candidates []string
	Matches    int
	Err        error
}

// Error says, in one sentence, which runs the reference matched and what
// to do.
func (e *RefError) Error() string {
	if errors.Is(e.Err, ErrAmbiguous) {
		more := ""
		if e.Matches > len(e.Candidates) {
			more = fmt.Sprintf(" and %d more", e.Matches-len(e.Candidates))
		}
		return fmt.Sprintf("%q matches %d runs (%s%s); give more of the id", e.Ref, e.Matches, strings.Join(e.Candidates, ", "), more)
	}
	return fmt.Sprintf("no run matches %q; `spawn ls` lists the runs", e.Ref)
}

// Unwrap returns ErrNotFound or ErrAmbiguous.
func (e *RefError) Unwrap() error { return e.Err }

// LiveError says that a live process holds a run's lock. It matches ErrLive.
type LiveError struct {
	ID     string
	Holder *Holder // nil when the lock file could not be read
}

// Error says, in one sentence, which process holds the run.
func (e *LiveError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("run %s is live: another spawn process holds it", e.ID)
	}
	return fmt.Sprintf("run %s is live: spawn %s holds it", e.ID, e.Holder)
}

// Unwrap returns ErrLive.
func (e *LiveError) Unwrap() error { return ErrLive }

// maxCandidates is how many ids an ambiguity names.
const maxCandidates = 5

// Last is the reference Find reads as the newest run.
const Last = "last"

// ids returns the ids of every run, newest first. A registry directory
// that does not exist holds no run.
func (r *Registry) ids() ([]string, error) {
	des, err := os.ReadDir(r.Dir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	ids := make([]string, 0, len(des))
	for _, de := range des {
		if de.IsDir() && validID(de.Name()) == nil {
			ids = append(ids, de.Name())
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids, nil
}

// List returns every run, newest first (by id). A run whose record cannot
// be read is listed, broken, with the reason in its Err; List fails only
// when the registry directory cannot be read.
func (r *Registry) List() ([]Entry, error) {
	ids, err := r.ids()
	if err != nil {
		return nil, err
	}
	// Reading a run is a few system calls and a walk over its record:
	// spread the runs over the processors.
	entries := make([]Entry, len(ids))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 1+len(ids)/64) {
		wg.Go(func() {
			var buf []byte
			for i := int(next.Add(1) - 1); i < len(ids); i = int(next.Add(1) - 1) {
				entries[i] = r.entry(ids[i], &buf)
			}
		})
	}
	wg.Wait()
	return entries, nil
}

// Find returns the run ref names: a full id, a prefix of exactly one id,
// or Last (the newest run). It fails with a *RefError matching ErrNotFound
// or ErrAmbiguous.
func (r *Registry) Find(ref string) (Entry, error) {
	ids, err := r.ids()
	if err != nil {
		return Entry{}, err
	}
	if ref == Last {
		if len(ids) == 0 {
			return Entry{}, &RefError{Ref: ref, Err: ErrNotFound}
		}
		return r.entry(ids[0], nil), nil
	}
	var matches []string
	for _, id := range ids {
		if id == ref {
			return r.entry(id, nil), nil
		}
		if ref != "" && strings.HasPrefix(id, ref) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return Entry{}, &RefError{Ref: ref, Err: ErrNotFound}
	case 1:
		return r.entry(matches[0], nil), nil
	}
	return Entry{}, &RefError{Ref: ref, Candidates: matches[:min(len(matches), maxCandidates)], Matches: len(matches), Err: ErrAmbiguous}
}

// entry reads one run: its record's summary, and its lock when the
// record leaves the state open (says running, or is missing). buf, when
// not nil, is a buffer to read the record into, kept for the next call.
func (r *Registry) entry(id string, buf *[]byte) Entry {
	if buf == nil {
		buf = new([]byte)
	}
	e := Entry{Paths: r.paths(id)}
	e.Summary, e.Err = readSummary(e.RecordPath(), buf)
	if e.Summary != nil && e.Summary.Status != observability.StatusRunning {
		e.State = StateFinished
		return e
	}
	held, err := probe(e.lockPath())
	if err != nil {
		e.Err = errors.Join(e.Err, err)
		if e.Summary != nil {
			e.State = StateRunning // unverified: never call live work abandoned
		} else {
			e.State = StateBroken
		}
		return e
	}
	switch {
	case held:
		e.State = StateRunning
	case e.Summary != nil:
		e.State = StateAbandoned
	default:
		e.State = StateBroken
		return e
	}
	h, err := readHolder(e.lockPath())
	e.Holder = h
	e.Err = errors.Join(e.Err, err)
	return e
}

// readSummary reads the summary of a record.json, reading the file into
// *buf (grown as needed); the summary does not refer to it.
func readSummary(path string, buf *[]byte) (*Summary, error) {
	var err error
	*buf, err = readInto(path, *buf)
	if err != nil {
		return nil, fmt.Errorf("read record: %w", err)
	}
	s, err := decodeSummary(*buf)
	if err == nil && s.Status == "" {
		err = errors.New("it has no status")
	}
	if err != nil {
		return nil, fmt.Errorf("read record %s: %w", path, err)
	}
	return s, nil
}

// readInto reads the file at path into buf[:0], growing it as needed.
// It is os.ReadFile without the allocation and the stat.
func readInto(path string, buf []byte) (_ []byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return buf[:0], err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	if cap(buf) == 0 {
		buf = make([]byte, 0, 64<<10)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// ReadRecord reads and decodes the run's whole record.json.
func (p Paths) ReadRecord() (*observability.Record, error) {
	path := p.RecordPath()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read record: %w", err)
	}
	var rec observability.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("read record %s: %w", path, err)
	}
	if rec.Status == "" {
		return nil, fmt.Errorf("read record %s: it has no status", path)
	}
	return &rec, nil
}
