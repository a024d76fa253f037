package observability

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordKeys is the record's contract: every one of these keys is present.
var recordKeys = []string{
	"schema", "id", "task", "mode", "status", "verdict", "exit_code", "repo", "base", "branch",
	"sandbox_path", "isolation", "seats", "started_at", "finished_at", "duration_ms", "command_lines",
	"permissions_requested", "permissions_granted", "review_feedback", "security_findings",
	"commits", "pr_url", "pull_request", "github_threads", "github_reviews", "resolved_comments", "questions", "coder_replies", "coder_messages",
	"messages", "resumes", "github_statuses", "usage", "error", "notes", "cassette", "replay",
}

func TestNewRecordHasEveryKeyAndEmptyLists(t *testing.T) {
	rec := New("id1", "task", "solo", time.Date(2026, 11, 21, 1, 0, 0, 0, time.UTC))
	b, err := Encode(rec, nil)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Len(t, m, len(recordKeys))
	for _, k := range recordKeys {
		require.Contains(t, m, k)
	}
	for _, k := range []string{"command_lines", "permissions_requested", "permissions_granted", "review_feedback",
		"security_findings", "commits", "github_reviews", "resolved_comments", "questions", "coder_replies", "coder_messages", "messages", "resumes", "github_statuses", "github_threads", "notes", "seats"} {
		assert.Equal(t, "[]", string(m[k]), k)
	}
	for _, k := range []string{"pr_url", "pull_request", "error", "finished_at", "isolation", "cassette", "replay"} {
		assert.Equal(t, "null", string(m[k]), k)
	}
	assert.JSONEq(t, `"spawn.record/v1"`, string(m["schema"]))
	assert.JSONEq(t, `"running"`, string(m["status"]))
	assert.JSONEq(t, `"none"`, string(m["verdict"]))
	assert.JSONEq(t, `{"cost_usd":0,"input_tokens":0,"output_tokens":0,"turns":0,"relayed_cost_usd":0,"by_agent":[]}`, string(m["usage"]))
}

func TestFinishStampsDuration(t *testing.T) {
	start := time.Date(2026, 11, 21, 1, 0, 0, 0, time.UTC)
	rec := New("id", "t", "solo", start)
	rec.Finish(StatusTimedOut, 5, start.Add(1500*time.Millisecond))
	assert.Equal(t, int64(1500), rec.DurationMS)
	assert.Equal(t, StatusTimedOut, rec.Status)
	assert.Equal(t, 5, rec.ExitCode)
	require.NotNil(t, rec.FinishedAt)
}

func TestRedactorReplacesSecretValues(t *testing.T) {
	env := []string{
		"ANTHROPIC_API_KEY=sk-ant-canary-0123456789",
		"GITHUB_TOKEN=ghp_with\"quote\\slash",
		"DB_PASSWORD=hunter2hunter2",
		"my_secret_thing=s3cr3t-value",
		"PATH=/usr/bin:/bin", // not a secret name
		"API_KEY=short",      // too short to redact safely
		"NOEQUALS",
	}
	r := NewRedactor(env)
	in := "key sk-ant-canary-0123456789 pw hunter2hunter2 s3cr3t-value in /usr/bin short"
	out := r.String(in)
	assert.Equal(t, "key [REDACTED] pw [REDACTED] [REDACTED] in /usr/bin short", out)

	// Inside JSON the escaped form of a secret is caught too.
	b, err := json.Marshal(map[string]string{"tok": "ghp_with\"quote\\slash"})
	require.NoError(t, err)
	assert.NotContains(t, string(r.Bytes(b)), "quote")
	assert.Contains(t, string(r.Bytes(b)), Redacted)

	var zero *Redactor
	assert.Equal(t, "x", zero.String("x"))
}

func TestIsSecretName(t *testing.T) {
	for _, n := range []string{"ANTHROPIC_API_KEY", "GH_TOKEN", "client_secret", "PGPASSWORD", "KEYRING"} {
		assert.True(t, IsSecretName(n), n)
	}
	for _, n := range []string{"HOME", "PATH", "GEMINI_MODEL"} {
		assert.False(t, IsSecretName(n), n)
	}
}

func TestWriteFileIsAtomicAndRedacted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "record.json")
	rec := New("id", "use the token tok-canary-987654321 please", "solo", time.Now())
	red := NewRedactor([]string{"MY_TOKEN=tok-canary-987654321"})
	require.NoError(t, WriteFile(path, rec, red))
	rec.Status = StatusSucceeded
	require.NoError(t, WriteFile(path, rec, red))

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "tok-canary-987654321")
	var back Record
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, StatusSucceeded, back.Status)
	assert.True(t, strings.Contains(back.Task, Redacted))

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}

// A resumed run's duration counts the time it ran, not the hours it sat
// stopped before it was resumed.
func TestAResumedRunsDurationLeavesOutTheTimeItSatStopped(t *testing.T) {
	start := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	rec := New("20260102-090000-abcd", "task", ModeSolo, start)
	rec.Finish(StatusInterrupted, 130, start.Add(2*time.Minute))
	assert.Equal(t, int64(2*60*1000), rec.DurationMS)
	resumed := start.Add(5 * time.Hour)
	rec.Resumes = append(rec.Resumes, Resume{At: resumed, FromStatus: StatusInterrupted, FromDurationMS: rec.DurationMS})
	rec.Finish(StatusSucceeded, 0, resumed.Add(3*time.Minute))
	assert.Equal(t, int64(5*60*1000), rec.DurationMS, "2 minutes, then 3 after the resume")
}
