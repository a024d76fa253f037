package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// `spawn demo` is what `make demo` shows a new user: offline, the real
// claude fixes the bug, the real gemini asks for a test with negative
// numbers, claude adds it in its resumed session, gemini approves.
func TestDemoFixesTheBugAndIsApproved(t *testing.T) {
	claude, gemini := testenv.Claude(t), testenv.Gemini(t)
	dir := t.TempDir()
	r := spawnMain(t, testenv.Env(t), "", "demo", "--claude", claude, "--gemini", gemini, "--dir", dir, "--json")
	require.Equal(t, 0, r.code, r.stderr)

	var rec struct {
		Status         string            `json:"status"`
		Verdict        string            `json:"verdict"`
		ReviewFeedback []json.RawMessage `json:"review_feedback"`
		Branch         string            `json:"branch"`
		Sandbox        string            `json:"sandbox_path"`
		Commits        []struct {
			Message string `json:"message"`
		} `json:"commits"`
		CommandLines []struct {
			Argv []string `json:"argv"`
		} `json:"command_lines"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rec))
	assert.Equal(t, "succeeded", rec.Status)
	assert.Equal(t, "approved", rec.Verdict)
	assert.Len(t, rec.ReviewFeedback, 2)
	require.Len(t, rec.Commits, 2)
	assert.Equal(t, "spawn: Fix the failing test in calc.go", rec.Commits[0].Message)
	assert.Equal(t, "spawn: address review round 1: Fix the failing test in calc.go", rec.Commits[1].Message)
	repo := filepath.Join(dir, "calc")
	assert.Contains(t, testenv.Git(t, repo, "show", rec.Branch+":calc.go"), "return a + b")
	assert.Contains(t, testenv.Git(t, repo, "show", rec.Branch+":calc_test.go"), "func TestAddNegative")
	assert.Contains(t, testenv.Git(t, repo, "show", "main:calc.go"), "return a - b", "the user's branch keeps the bug")
	require.Len(t, rec.CommandLines, 4, "coder, reviewer, coder resumed, reviewer resumed")
	assert.Contains(t, rec.CommandLines[0].Argv, claude, "the real claude ran (under bwrap when installed)")
	assert.Contains(t, rec.CommandLines[1].Argv, gemini, "the real gemini ran (under bwrap when installed)")
	assert.False(t, strings.Contains(r.stdout, "test-key"), "no API key in the output")

	// The demo's run replays from its cassette, its go test timings and
	// all: the same commits, findings and verdict, every request matched.
	rp := spawnMain(t, testenv.Env(t), "", "replay", "last", "--repo", repo, "--json")
	require.Equal(t, 0, rp.code, rp.stderr)
	var replayed struct {
		Replay struct {
			Same          bool `json:"same"`
			RequestsMatch bool `json:"requests_match"`
		} `json:"replay"`
	}
	require.NoError(t, json.Unmarshal([]byte(rp.stdout), &replayed))
	assert.True(t, replayed.Replay.Same)
	assert.True(t, replayed.Replay.RequestsMatch)
}

// Without --json, `spawn demo` shows what happened rather than dumping the
// record: the agents' narration on stderr; on stdout the summary with the
// rounds and the findings' titles, the branch's diff, where the record is,
// and that the demo folder is kept, and where.
func TestDemoShowsTheWorkNotTheRecord(t *testing.T) {
	claude, gemini := testenv.Claude(t), testenv.Gemini(t)
	dir := t.TempDir()
	r := spawnMain(t, testenv.Env(t), "", "demo", "--claude", claude, "--gemini", gemini, "--dir", dir)
	require.Equal(t, 0, r.code, r.stderr)

	assert.Regexp(t, `(?m)^  coder +tool: +Edit calc.go$`, r.stderr, "the narration says what the coder did")
	assert.Regexp(t, `(?m)^  reviewer +review: round 1, all: request_changes, 1 finding, 0 resolved$`, r.stderr)
	assert.NotContains(t, r.stdout, `"schema"`, "the record is not dumped")
	// The fix round's commit says what it addressed and leads back to the
	// run.
	branch := regexp.MustCompile(`(?m)^  branch: +(\S+)$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, branch, r.stdout)
	body := testenv.Git(t, filepath.Join(dir, "calc"), "log", "-1", "--format=%B", branch[1])
	assert.Contains(t, body, "Addresses the findings of review round 1:\n- medium: No test with negative numbers (calc.go:6)\n")
	assert.Regexp(t, `(?m)^Spawn-Run: \d{8}-\d{6}-[0-9a-f]{4}\nSpawn-Round: 2$`, body)
	out := strings.ReplaceAll(r.stdout, dir, "$DIR")
	for _, n := range []struct{ re, with string }{
		{`\d{8}-\d{6}-[0-9a-f]{4}`, "$ID"},
		{`\b[0-9a-f]{7,40}\b`, "$SHA"},
		{`in \d[\w.]*s\n`, "in $DURATION\n"},
	} {
		out = regexp.MustCompile(n.re).ReplaceAllLiteralString(out, n.with)
	}
	golden(t, "demo.txt", out)
}

// A demo without claude says how to get it and which flag points at it.
func TestDemoWithoutClaudeNamesTheFlag(t *testing.T) {
	r := spawnMain(t, testenv.Env(t), "", "demo", "--claude", "no-such-claude", "--dir", t.TempDir())
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "the claude CLI (no-such-claude) was not found")
	assert.Contains(t, r.stderr, "--claude agents/node_modules/.bin/claude")
}

// showDemo prints the GitHub demo's output (make demo-github).
var showDemo = flag.Bool("show-demo", false, "print what the GitHub demo prints")

// The GitHub demo (make demo-github): the same loop as a pull request's
// life on a fake GitHub: opened, reviewed inline, replied to, resolved,
// ready. The fake GitHub is test code: the spawn binary's demo refuses
// github mode and says where it is.
func TestDemoInGitHubModeShowsThePullRequestsLife(t *testing.T) {
	claude, gemini := testenv.Claude(t), testenv.Gemini(t)
	refused := spawnMain(t, testenv.Env(t), "", "demo", "--mode", "github", "--claude", claude, "--gemini", gemini, "--dir", t.TempDir())
	assert.Equal(t, 2, refused.code)
	assert.Contains(t, refused.stderr, "run `make demo-github` in spawn's checkout")

	dir := t.TempDir()
	if *showDemo { // the demo keeps its folder, as it says
		var err error
		dir, err = os.MkdirTemp("", "spawn-demo-github-")
		require.NoError(t, err)
	}
	var out, errw bytes.Buffer
	code := mainWith([]string{"spawn", "demo", "--mode", "github", "--claude", claude, "--gemini", gemini, "--dir", dir},
		testenv.Env(t), strings.NewReader(""), &out, &errw, func(ctx context.Context, d *deps, opts *demoOptions) error {
			opts.Forge = &fakeForge{}
			return runDemo(ctx, d, opts)
		})
	r := result{code, out.String(), errw.String()}
	if *showDemo {
		fmt.Print(r.stderr, r.stdout)
	}
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "approved (exit 0)")
	assert.Regexp(t, `pull request #1 "Fix the failing test in calc.go" from spawn/\S+ into main, ready for review`, r.stdout)
	assert.Regexp(t, `review \d+ by spawn-demo: COMMENTED, 1 inline comment`, r.stdout)
	assert.Regexp(t, `reply in the thread of calc.go:6: Fixed in [0-9a-f]{7,}`, r.stdout)
	assert.Contains(t, r.stdout, "thread on calc.go:6: resolved")
	assert.Contains(t, r.stdout, "success (round 2: approved)")
	assert.Contains(t, r.stdout, "pull:      ")
	assert.NotContains(t, r.stdout+r.stderr, demoToken, "the token is redacted")

	// spawn show prints the pull request and its thread: resolved, after
	// the reply that names the fix and the round that verified it.
	show := spawnMain(t, testenv.Env(t), "", "show", "--repo", filepath.Join(dir, "calc"), "last")
	require.Equal(t, 0, show.code, show.stderr)
	assert.Regexp(t, `pull:      #1 spawn/\S+ -> main  \S+/pull/1`, show.stdout)
	assert.Regexp(t, `threads:   resolved   calc.go:6 +spawn-demo +Fixed in [0-9a-f]{12}: verified by review round 2`, show.stdout)
}
