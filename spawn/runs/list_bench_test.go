package runs_test

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/runstest"
)

// BenchmarkList1000 lists a registry of 1,003 runs: 1,000 written as a
// long-used repository would have them (see runstest.Fill), and three live
// runs this process holds.
func BenchmarkList1000(b *testing.B) {
	spawnDir := b.TempDir()
	runstest.Fill(b, spawnDir, 1000, 50)
	reg := runs.Open(spawnDir)
	for i := range 3 {
		run, err := reg.Create(runs.NewID(time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)))
		if err != nil {
			b.Fatal(err)
		}
		rec := runstest.Record(run.ID, time.Now(), observability.StatusRunning)
		if err := observability.WriteFile(run.RecordPath(), rec, nil); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := run.Close(); err != nil {
				b.Error(err)
			}
		})
	}
	entries, err := reg.List()
	if err != nil {
		b.Fatal(err)
	}
	count := map[runs.State]int{}
	for _, e := range entries {
		count[e.State]++
	}
	want := map[runs.State]int{runs.StateFinished: 970, runs.StateAbandoned: 20, runs.StateBroken: 10, runs.StateRunning: 3}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		b.Fatalf("states %v, want %v", count, want)
	}
	// CPU time as well as wall time: on a loaded machine the wall time
	// says more about the other processes than about List.
	cpu0 := cpuTime(b)
	n := 0
	for b.Loop() {
		if _, err := reg.List(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(n), "cpu-ns/op")
	size, err := observability.Encode(runstest.Record(runs.NewID(time.Now()), time.Now(), observability.StatusSucceeded), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(size)), "record-bytes")
}

// BenchmarkDecodeRecord compares decoding a whole realistic record with
// reading only its summary, the reason List skims.
func BenchmarkDecodeRecord(b *testing.B) {
	rec := runstest.Record("20250101-000000-abcd", time.Now(), observability.StatusSucceeded)
	data, err := observability.Encode(rec, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var r observability.Record
			if err := json.Unmarshal(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("summary", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := runs.DecodeSummary(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
