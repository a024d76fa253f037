package runners

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCostEstimatesFollowTheModelsPrices(t *testing.T) {
	u := Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}
	tests := []struct {
		model string
		want  float64
	}{
		{"claude-opus-4-8", 30},
		{"claude-opus-4-8[1m]", 30},
		{"claude-opus-4-5-20251101", 30},
		{"claude-opus-4-1-20250805", 90},
		{"claude-opus-4-20250514", 90},
		{"claude-sonnet-4-5", 18},
		{"claude-haiku-4-5", 4.8},
		{"gemini-2.5-pro", 11.25},
		{"gemini-2.5-flash", 2.8},
		{"gpt-5-codex", 11.25},
		{"gpt-5-mini", 2.25},
		{"some-new-model", 90},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, EstimateCost(tt.model, u), 1e-9, tt.model)
	}
}
