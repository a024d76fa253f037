package spawn

import (
	"testing"
	"time"
)

// BenchmarkGitHubModeVsPingpong runs the same two-round story (threeFindings)
// in github mode against the fake GitHub and in pingpong mode, interleaved,
// and reports each one's wall time and their ratio: what publishing the
// loop as a pull request costs.
func BenchmarkGitHubModeVsPingpong(b *testing.B) {
	var gh, pp time.Duration
	for range b.N {
		sc, _ := threeFindings(b)
		start := time.Now()
		r := runGitHub(b, sc, nil, nil)
		gh += time.Since(start)
		if r.err != nil {
			b.Fatal(r.err)
		}
		sc, _ = threeFindings(b)
		start = time.Now()
		p := runTeam(b, "pingpong", sc, nil)
		pp += time.Since(start)
		if p.err != nil {
			b.Fatal(p.err)
		}
	}
	b.ReportMetric(float64(gh.Milliseconds())/float64(b.N), "github-ms/run")
	b.ReportMetric(float64(pp.Milliseconds())/float64(b.N), "pingpong-ms/run")
	b.ReportMetric(float64(gh)/float64(pp), "ratio")
}
