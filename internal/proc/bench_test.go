package proc

import (
	"os/exec"
	"testing"
	"time"
)

// BenchmarkAgentStart is what the reaper costs an agent process: `true`
// started with Start and waited for, against `true` started and waited for
// by os/exec, interleaved in each iteration. Metrics: reaper-ms, exec-ms
// and x-vs-exec.
func BenchmarkAgentStart(b *testing.B) {
	var reaped, direct time.Duration
	for range b.N {
		start := time.Now()
		p, err := Start(Cmd{Path: "true", Env: env()})
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); err != nil || code != 0 {
			b.Fatalf("true under the reaper: exit %d: %v", code, err)
		}
		reaped += time.Since(start)
		start = time.Now()
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
		direct += time.Since(start)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(ms(reaped), "reaper-ms")
	b.ReportMetric(ms(direct), "exec-ms")
	b.ReportMetric(reaped.Seconds()/direct.Seconds(), "x-vs-exec")
}
