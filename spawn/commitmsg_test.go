package spawn

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// A maintainer reading `git log` of a merged spawn branch sees whole words
// in the subject, what a fix round addressed, and trailers that lead back
// to the run's record.
func TestSpawnCommitsReadWellInGitLog(t *testing.T) {
	long := "Make the importer skip rows whose amount column is empty instead of crashing with a parse error"
	subject, msg := commitMessage("20261123-070000-ab12", long, 1, nil)
	assert.Equal(t, "spawn: Make the importer skip rows whose amount column is empty instead", subject)
	assert.LessOrEqual(t, len([]rune(subject)), subjectWidth)
	assert.Equal(t, subject+"\n\nTask: "+long+"\n\nSpawn-Run: 20261123-070000-ab12\nSpawn-Round: 1\n", msg)

	subject, msg = commitMessage("20261123-070000-ab12", "Fix the failing test in calc.go", 2, []observability.Finding{
		{Severity: observability.SeverityMedium, File: "calc_test.go", Line: 5, Title: "No test with negative numbers"},
		{Severity: observability.SeverityLow, Title: "Explain the fix\nin a comment"},
	})
	assert.Equal(t, "spawn: address review round 1: Fix the failing test in calc.go", subject)
	assert.Equal(t, subject+"\n\n"+
		"Addresses the findings of review round 1:\n"+
		"- medium: No test with negative numbers (calc_test.go:5)\n"+
		"- low: Explain the fix in a comment (the whole change)\n\n"+
		"Spawn-Run: 20261123-070000-ab12\nSpawn-Round: 2\n", msg)

	subject, _ = commitMessage("x", "Rename the field, then update every caller of it in the package and its tests", 1, nil)
	assert.Equal(t, "spawn: Rename the field, then update every caller of it in the package", subject, "no ... and no cut word")

	subject, msg = commitMessage("x", "short task", 1, nil)
	assert.Equal(t, "spawn: short task", subject)
	assert.False(t, strings.Contains(msg, "Task:"), "a task that fits the subject is not repeated")
}
