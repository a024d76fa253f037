package mcpserver

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// maxResultBytes bounds a Result as JSON: about 15k tokens (4 bytes a
// token), under the 20k a host's context can spare for one tool answer
// (hosts cap answers near 25k).
const maxResultBytes = 60_000

// Result is the outcome of a run that ended: spawn_result's answer. It is
// the record's verdict, branch, commits and findings, cut to fit a model's
// context; the full record is at Record.
type Result struct {
	ID       string `json:"id"`
	State    string `json:"state" jsonschema:"finished, abandoned (its spawn died) or broken"`
	Task     string `json:"task" jsonschema:"the task, cut to 2,000 characters"`
	Mode     string `json:"mode"`
	Status   string `json:"status" jsonschema:"succeeded, failed, interrupted..."`
	Verdict  string `json:"verdict" jsonschema:"approved, changes_requested, none..."`
	ExitCode int    `json:"exit_code" jsonschema:"spawn run's exit code: 0 done, 1 not approved, 2 bad input, 3 agent failed, 4 timeout, 130 interrupted"`
	Branch   string `json:"branch" jsonschema:"the branch that holds the work; merge it or open a PR from it"`
	Base     string `json:"base"`
	Rounds   int    `json:"rounds" jsonschema:"review rounds"`
	// Commits are the run's commits, oldest first.
	Commits          []ResultCommit  `json:"commits"`
	OpenFindings     []ResultFinding `json:"open_findings" jsonschema:"review findings still open at the end, most severe first"`
	ResolvedFindings []ResultFinding `json:"resolved_findings" jsonschema:"review findings the coder resolved"`
	PRURL            string          `json:"pr_url,omitempty"`
	CostUSD          float64         `json:"cost_usd"`
	DurationSeconds  int64           `json:"duration_seconds"`
	Error            string          `json:"error,omitempty" jsonschema:"why the run did not succeed"`
	Notes            []string        `json:"notes,omitempty"`
	// CoderSummary is the coder's last message.
	CoderSummary string `json:"coder_summary,omitempty" jsonschema:"the coder's last message, cut to 2,000 characters"`
	Record       string `json:"record" jsonschema:"the path of the full record (record.json), for what this result leaves out"`
	Cassette     string `json:"cassette,omitempty" jsonschema:"the path of the run's cassette (its model traffic, redacted): spawn replay <id> runs the run again from it without a model"`
	Omitted      string `json:"omitted,omitempty" jsonschema:"what was left out to keep this answer small"`
}

// ResultCommit is one commit of a run.
type ResultCommit struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
	Round   int    `json:"round"`
}

// ResultFinding is one review finding.
type ResultFinding struct {
	ID         string `json:"id"`
	Severity   string `json:"severity"`
	Domain     string `json:"domain,omitempty"`
	Location   string `json:"location,omitempty" jsonschema:"file:line"`
	Title      string `json:"title"`
	Detail     string `json:"detail,omitempty"`
	Suggestion string `json:"suggestion,omitempty"`
}

// readResult reads run e's record as a Result.
func readResult(e runs.Entry, now time.Time) (Result, error) {
	rec, err := e.ReadRecord()
	if err != nil {
		return Result{}, fmt.Errorf("cannot read the record of run %s: %w", e.ID, err)
	}
	res := resultOf(rec, e.RecordPath(), now)
	res.State = string(e.State)
	return trim(res), nil
}

// resultOf is rec as a Result, before trimming.
func resultOf(rec *observability.Record, path string, now time.Time) Result {
	res := Result{
		ID: rec.ID, Task: clip(rec.Task, 2000), Mode: string(rec.Mode), Status: string(rec.Status), Verdict: string(rec.Verdict),
		ExitCode: rec.ExitCode, Branch: rec.Branch, Base: rec.Base, CostUSD: rec.Usage.CostUSD, Notes: rec.Notes, Record: path,
		Commits: []ResultCommit{}, OpenFindings: []ResultFinding{}, ResolvedFindings: []ResultFinding{},
	}
	end := now
	if rec.FinishedAt != nil {
		end = *rec.FinishedAt
	}
	res.DurationSeconds = int64(end.Sub(rec.StartedAt).Seconds())
	if rec.PRURL != nil {
		res.PRURL = *rec.PRURL
	}
	if rec.Cassette != nil {
		res.Cassette = filepath.Join(filepath.Dir(path), rec.Cassette.Path)
	}
	if rec.Error != nil {
		res.Error = clip(rec.Error.Message, 2000)
	}
	if n := len(rec.CoderMessages); n > 0 {
		res.CoderSummary = clip(rec.CoderMessages[n-1].Text, 2000)
	}
	for _, c := range rec.Commits {
		res.Commits = append(res.Commits, ResultCommit{SHA: c.SHA, Subject: clip(firstLine(c.Message), 200), Round: c.Iteration})
	}
	// Every finding as last reported, in the order first reported.
	last := map[string]observability.Finding{}
	var order []string
	for _, fb := range rec.ReviewFeedback {
		res.Rounds = max(res.Rounds, fb.Iteration)
		for _, f := range fb.Findings {
			if _, seen := last[f.ID]; !seen {
				order = append(order, f.ID)
			}
			last[f.ID] = f
		}
	}
	for _, id := range order {
		f := last[id]
		rf := ResultFinding{ID: f.ID, Severity: string(f.Severity), Domain: f.Domain, Title: clip(f.Title, 200)}
		if f.File != "" {
			rf.Location = f.File
			if f.Line > 0 {
				rf.Location = fmt.Sprintf("%s:%d", f.File, f.Line)
			}
		}
		if f.Status == observability.FindingOpen {
			rf.Detail, rf.Suggestion = clip(f.Detail, 800), clip(f.Suggestion, 400)
			res.OpenFindings = append(res.OpenFindings, rf)
		} else {
			res.ResolvedFindings = append(res.ResolvedFindings, rf)
		}
	}
	sort.SliceStable(res.OpenFindings, func(i, j int) bool {
		return observability.Severity(res.OpenFindings[i].Severity).Rank() > observability.Severity(res.OpenFindings[j].Severity).Rank()
	})
	return res
}

// trim cuts res until it fits maxResultBytes: first the resolved
// findings, then the oldest commits, then the least severe open findings'
// details, then those findings. Omitted says what went.
func trim(res Result) Result {
	var resolved, commits, details, open int
	fits := func() bool {
		var parts []string
		for _, p := range []struct {
			n    int
			what string
		}{{resolved, "resolved findings"}, {commits, "oldest commits"}, {details, "open findings' details"}, {open, "least severe open findings"}} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
			}
		}
		res.Omitted = ""
		if len(parts) > 0 {
			res.Omitted = fmt.Sprintf("left out to stay under %d bytes: %s; the record has everything", maxResultBytes, strings.Join(parts, ", "))
		}
		b, err := json.Marshal(res)
		return err != nil || len(b) <= maxResultBytes // a Result always encodes
	}
	for !fits() && len(res.ResolvedFindings) > 0 {
		n := (len(res.ResolvedFindings) + 1) / 2
		res.ResolvedFindings = res.ResolvedFindings[:len(res.ResolvedFindings)-n]
		resolved += n
	}
	for !fits() && len(res.Commits) > 1 {
		n := len(res.Commits) / 2
		res.Commits = res.Commits[n:]
		commits += n
	}
	for i := len(res.OpenFindings) - 1; i >= 0 && !fits(); i-- {
		res.OpenFindings[i].Detail, res.OpenFindings[i].Suggestion = "", ""
		details++
	}
	for !fits() && len(res.OpenFindings) > 1 {
		n := len(res.OpenFindings) / 2
		res.OpenFindings = res.OpenFindings[:len(res.OpenFindings)-n]
		open += n
	}
	return res
}
