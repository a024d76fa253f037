package prompts

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

func TestDomains(t *testing.T) {
	want := []Domain{"security", "technical_feasibility", "task_granularity", "dependency_completeness", "general_polish"}
	assert.Equal(t, want, Domains())

	d := Domains()
	d[0] = "changed"
	assert.Equal(t, Security, Domains()[0], "Domains must return a new slice")

	focus := map[string]bool{}
	for _, d := range Domains() {
		assert.NotEmpty(t, d.Focus(), d)
		assert.False(t, focus[d.Focus()], "%s: focus text shared with another domain", d)
		focus[d.Focus()] = true
	}
	assert.Empty(t, Domain("performance").Focus())
	assert.Empty(t, Domain("Security").Focus(), "Focus is for the exact constants")
}

func TestParseDomain(t *testing.T) {
	for in, want := range map[string]Domain{
		"security":                  Security,
		"  Technical_Feasibility\n": TechnicalFeasibility,
		"TASK_GRANULARITY":          TaskGranularity,
		"dependency_completeness":   DependencyCompleteness,
		"general_polish":            GeneralPolish,
	} {
		got, err := ParseDomain(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "perf", "technical-feasibility", "general polish"} {
		_, err := ParseDomain(in)
		assert.ErrorContains(t, err, "want one of security, technical_feasibility, task_granularity, dependency_completeness, general_polish", in)
	}
}

func TestSeverityNames(t *testing.T) {
	assert.Equal(t, "critical, high, medium, low, info", severityNames(", "))
	for _, s := range observability.Severities() {
		sev, ok := severityOf(string(s))
		assert.True(t, ok, s)
		assert.Equal(t, s, sev)
	}
	_, ok := severityOf("urgent")
	assert.False(t, ok)
}
