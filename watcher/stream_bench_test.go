package watcher

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// catAgent is claude whose process is `cat file`: the watcher follows,
// parses, redacts and tees a recorded stream as fast as cat can write it.
type catAgent struct {
	runners.Claude
	file string
}

func (a *catAgent) Command(runners.Turn) (runners.Command, error) {
	return runners.Command{Path: "cat", Args: []string{a.file}}, nil
}

// writeRecordedStream writes about mb megabytes of claude stream-json in
// the shape of a recorded session: an init line, then turns of a text
// block and a tool call (Bash, Read, Edit) followed by its result (about
// 2 KB of source or test output, with quotes, tabs and line breaks to
// escape; one in four as an array of text blocks), and a result line.
func writeRecordedStream(b *testing.B, path string, mb int) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := func(v any) {
		line, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	enc(map[string]any{"type": "system", "subtype": "init", "session_id": "bench-session", "model": "claude-sonnet-4-5", "permissionMode": "acceptEdits", "cwd": "/tmp/x", "tools": []string{"Bash", "Read", "Edit", "Write"}})
	var body strings.Builder
	for i := range 40 {
		fmt.Fprintf(&body, "%4d\tfunc f%d(s string) error { return fmt.Errorf(\"bad %%q: %%w\", s, err) } // \\path\n", i, i)
	}
	text := body.String()
	limit := int64(mb) << 20
	for i := 0; ; i++ {
		size, _ := f.Seek(0, io.SeekCurrent)
		if size+int64(w.Buffered()) >= limit {
			break
		}
		id := fmt.Sprintf("toolu_%012d", i)
		msg := fmt.Sprintf("msg_%012d", i)
		var tool map[string]any
		switch i % 3 {
		case 0:
			tool = map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "go test ./...", "description": "run the tests"}}
		case 1:
			tool = map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": fmt.Sprintf("/tmp/x/pkg/f%d.go", i%50)}}
		default:
			tool = map[string]any{"type": "tool_use", "id": id, "name": "Edit", "input": map[string]any{"file_path": fmt.Sprintf("/tmp/x/pkg/f%d.go", i%50), "old_string": "return nil", "new_string": "return err"}}
		}
		enc(map[string]any{"type": "assistant", "session_id": "bench-session", "message": map[string]any{
			"id": msg, "model": "claude-sonnet-4-5", "role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": "Let me look at that."}, tool},
			"usage":   map[string]any{"input_tokens": 12, "cache_read_input_tokens": 3000, "output_tokens": 80},
		}})
		var content any = text
		if i%4 == 3 {
			content = []any{map[string]any{"type": "text", "text": text}}
		}
		enc(map[string]any{"type": "user", "session_id": "bench-session", "message": map[string]any{
			"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": false}},
		}})
	}
	enc(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": "Done.", "session_id": "bench-session", "num_turns": 3, "total_cost_usd": 1.5, "usage": map[string]any{"input_tokens": 10, "output_tokens": 10}})
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// resetPeakRSS makes VmHWM start again from the current resident size.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// peakRSSMB is this process's VmHWM in MiB.
func peakRSSMB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				b.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// BenchmarkStream pushes a recorded-shape claude stream of
// SPAWN_BENCH_STREAM_MB (default 100) through Supervise as spawn runs it:
// the agent (cat) writes its stdout file, the watcher follows it, parses
// every line, tracks the session, redacts and tees the transcript to a file.
// Metrics: MB/s of the whole, rss-MB (the benchmark process's peak resident
// size during the runs, the Go runtime included), cat-MB/s (`cat file >
// copy` on the same file) and x-vs-cat (spawn's time over cat's).
func BenchmarkStream(b *testing.B) {
	mb := testenv.StreamMB(b)
	dir := b.TempDir()
	stream := filepath.Join(dir, "stream.jsonl")
	writeRecordedStream(b, stream, mb)
	fi, err := os.Stat(stream)
	if err != nil {
		b.Fatal(err)
	}
	size := fi.Size()
	env := append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-bench-0123456789abcdef", "GITHUB_TOKEN=ghp_benchtoken0123456789", "GEMINI_API_KEY=AIzaBench\"quoted\\key")
	red := observability.NewRedactor(env)
	agent := &catAgent{file: stream}

	// cat's own time for the same bytes, on the same disk.
	var catTime time.Duration
	for range 3 {
		start := time.Now()
		cmd := exec.Command("sh", "-c", `cat "$1" > "$2"`, "sh", stream, filepath.Join(dir, "copy"))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("cat: %v: %s", err, out)
		}
		if d := time.Since(start); catTime == 0 || d < catTime {
			catTime = d
		}
	}

	var rss float64
	b.SetBytes(size)
	b.ResetTimer()
	for i := range b.N {
		resetPeakRSS(b)
		transcript, err := os.Create(filepath.Join(dir, fmt.Sprintf("transcript-%d", i%2)))
		if err != nil {
			b.Fatal(err)
		}
		errlog := &bytes.Buffer{}
		s, err := Supervise(context.Background(), agent, runners.Turn{Prompt: "bench"}, Policy{}, Hooks{
			Env:      env,
			Redactor: red,
			Streams:  func(int) (io.Writer, io.Writer, error) { return transcript, errlog, nil },
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := transcript.Close(); err != nil {
			b.Fatal(err)
		}
		if s.Result == nil || s.Result.Text != "Done." || s.Last().WatchErr != nil || s.Last().ParseErr != nil {
			b.Fatalf("stream not read whole: result %+v, watch %v, parse %v", s.Result, s.Last().WatchErr, s.Last().ParseErr)
		}
		rss = max(rss, peakRSSMB(b))
	}
	b.StopTimer()
	perOp := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(size)/1e6/perOp.Seconds(), "MB/s")
	b.ReportMetric(float64(size)/1e6/catTime.Seconds(), "cat-MB/s")
	b.ReportMetric(perOp.Seconds()/catTime.Seconds(), "x-vs-cat")
	b.ReportMetric(rss, "rss-MB")
}
