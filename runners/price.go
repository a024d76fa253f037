package runners

import (
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
)

// PricesAsOf is the date of the price table EstimateCost uses.
const PricesAsOf = "2026-11-26"

// newOpus matches the opus models priced at 5/25: opus 4.5 and later
// minor versions (claude-opus-4-5, claude-opus-4-8[1m]; not the dated
// claude-opus-4-20250514), and opus 5 on.
var newOpus = lazy.MustCompile(`opus-(?:4-(?:[5-9]|[1-9][0-9])(?:[^0-9]|$)|[5-9](?:[^0-9]|$))`)

// Price is a model's list price in US dollars per million tokens, input
// and output, as of PricesAsOf, by family: opus 4.5 and later 5/25,
// earlier opus 15/75, sonnet 3/15, haiku 0.8/4, gemini pro 1.25/10, gemini
// flash 0.3/2.5, gpt-5 and its codex models 1.25/10, their mini 0.25/2 and
// nano 0.05/0.4; an unknown model as the earlier opus, so that an estimate
// errs on the side of stopping early.
func Price(model string) (in, out float64) {
	m := strings.ToLower(model)
	switch {
	case newOpus.MatchString(m):
		return 5, 25
	case strings.Contains(m, "sonnet"):
		return 3, 15
	case strings.Contains(m, "haiku"):
		return 0.8, 4
	case strings.Contains(m, "gemini") && strings.Contains(m, "flash"):
		return 0.3, 2.5
	case strings.Contains(m, "gemini"):
		return 1.25, 10
	case strings.HasPrefix(m, "gpt-") && strings.Contains(m, "nano"):
		return 0.05, 0.4
	case strings.HasPrefix(m, "gpt-") && strings.Contains(m, "mini"):
		return 0.25, 2
	case strings.HasPrefix(m, "gpt-5"), strings.Contains(m, "codex"):
		return 1.25, 10
	}
	return 15, 75
}

// EstimateCost prices usage at its model's Price, in US dollars. The
// CLI's own total, when it reports one, replaces the estimate.
func EstimateCost(model string, u Usage) float64 {
	in, out := Price(model)
	return (float64(u.InputTokens)*in + float64(u.OutputTokens)*out) / 1e6
}
