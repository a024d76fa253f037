package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7d":     7 * 24 * time.Hour,
		"12h":    12 * time.Hour,
		"90m":    90 * time.Minute,
		"1d12h":  36 * time.Hour,
		"0d30m":  30 * time.Minute,
		"1h30m":  90 * time.Minute,
		"365d":   365 * 24 * time.Hour,
		"2d1.5h": 49*time.Hour + 30*time.Minute,
	} {
		got, err := parseAge(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "7", "d", "-1d", "7days", "1w", "0d", "0s", "1d-2d", "x7d", "-5m"} {
		_, err := parseAge(in)
		assert.Error(t, err, in)
	}
}

func TestCleanWithoutARunToCleanIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"clean", "--repo", dir},
		{"clean", "--repo", dir, "--older-than", "7"},
		{"clean", "--repo", dir, "--older-than", "1w"},
	} {
		r := spawnMain(t, nil, "", args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Empty(t, r.stdout)
		assert.Regexp(t, `^spawn: [^\n]+\n$`, r.stderr, "one sentence")
	}
}
