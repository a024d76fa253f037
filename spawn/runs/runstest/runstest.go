// Package runstest holds the run registry's test fixtures: realistic
// records and registries of many runs, for the benchmarks of spawn/runs
// and of the commands that read it.
package runstest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// Record returns a pingpong record of about 8 KB, as a long-used
// repository holds them: two rounds of
// review with findings, four command lines, commits.
func Record(id string, started time.Time, status observability.Status) *observability.Record {
	rec := observability.New(id, "add a /healthz endpoint that reports the build version and the uptime, with a test", observability.ModePingpong, started)
	rec.Repo = "/home/dev/src/service"
	rec.Base = "main"
	rec.Branch = "spawn/add-a-healthz-endpoint-" + id
	rec.SandboxPath = "/home/dev/src/service/.spawn/worktrees/" + id
	for i, role := range []observability.Role{observability.RoleCoder, observability.RoleReviewer, observability.RoleCoder, observability.RoleReviewer} {
		llm := map[observability.Role]observability.LLM{observability.RoleCoder: observability.LLMClaude, observability.RoleReviewer: observability.LLMGemini}[role]
		stdout, stderr := runs.Paths{}.Transcript(i+1, role)
		rec.CommandLines = append(rec.CommandLines, observability.CommandLine{
			LLM: llm, Role: role, Iteration: i/2 + 1,
			Argv:      []string{string(llm), "-p", "--output-format", "stream-json", "--verbose", "--model", "some-model", "--settings", "/tmp/spawn-settings.json"},
			WorkDir:   rec.SandboxPath,
			StartedAt: started.Add(time.Duration(i) * time.Minute), DurationMS: 61234, Pid: 4242 + i,
			Stdout: stdout, Stderr: stderr,
		})
	}
	for round := 1; round <= 2; round++ {
		fb := observability.ReviewFeedback{
			Iteration: round, Reviewer: observability.LLMGemini, Domain: "all", Verdict: observability.ReviewRequestChanges,
			Summary:     "The endpoint works but the uptime is computed from the wrong clock and the test does not cover the version string.",
			RawResponse: `{"verdict":"request_changes","summary":"The endpoint works but ...","findings":[...]}`,
			DiffBytes:   4096,
		}
		for f := range 3 {
			fb.Findings = append(fb.Findings, observability.Finding{
				ID: fmt.Sprintf("f%d%d", round, f), Severity: observability.SeverityMedium, Domain: "technical_feasibility",
				File: "internal/health/handler.go", Line: 40 + f, Title: "uptime uses wall clock",
				Detail:     "time.Now().Sub(start) uses the wall clock, which jumps; use a monotonic reading taken at start.",
				Suggestion: "keep the time.Time from time.Now() at start and call time.Since on it", Status: observability.FindingOpen,
			})
		}
		rec.ReviewFeedback = append(rec.ReviewFeedback, fb)
		rec.Commits = append(rec.Commits, observability.Commit{SHA: "0123456789abcdef0123456789abcdef01234567", Message: "health: add /healthz", Iteration: round, LLM: observability.LLMClaude})
	}
	rec.Usage = observability.Usage{CostUSD: 0.4242, InputTokens: 123456, OutputTokens: 7890, Turns: 17}
	if status != observability.StatusRunning {
		rec.Finish(status, 0, started.Add(7*time.Minute))
		rec.Verdict = observability.VerdictApproved
	}
	return rec
}

// Fill writes n run directories under spawnDir (a repository's .spawn),
// one a minute from 2025-01-01 09:00 UTC, as spawn leaves them: each with
// its lock file (not held), a transcript and events; every 100th broken
// (no record); and, when abandonEvery > 0, every abandonEvery-th
// abandoned (its record says running and nobody holds its lock).
func Fill(tb testing.TB, spawnDir string, n, abandonEvery int) {
	tb.Helper()
	start := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	dir := runs.Open(spawnDir).Dir()
	for i := range n {
		at := start.Add(time.Duration(i) * time.Minute)
		id := runs.NewID(at)
		p := runs.Paths{ID: id, Dir: filepath.Join(dir, id)}
		if err := os.MkdirAll(p.Dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		stdout, _ := p.Transcript(1, observability.RoleCoder)
		for path, content := range map[string]string{
			filepath.Join(p.Dir, "lock"): "",
			stdout:                       `{"type":"result"}` + "\n",
			p.EventsPath():               `{"kind":"started"}` + "\n",
		} {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		if i%100 == 99 {
			continue
		}
		status := observability.StatusSucceeded
		if abandonEvery > 0 && i%abandonEvery == abandonEvery/2-1 {
			status = observability.StatusRunning
		}
		if err := observability.WriteFile(p.RecordPath(), Record(id, at, status), nil); err != nil {
			tb.Fatal(err)
		}
	}
}
