package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/observability"
)

// BenchmarkStreamWhole measures the stream as a person's `spawn run`
// handles it: the spawn binary, built as `make build` builds it, runs
// `spawn run --mode solo --coder <cli>` in a scratch repository under
// bubblewrap (the record must say so), and the coder's CLI (the command
// of the user's spawn-team.toml) is a script that cats a stream of
// SPAWN_BENCH_STREAM_MB megabytes (default 100) grown from one recorded
// with the pinned CLI (see writeGrownStream) and exits 0. Everything spawn
// does with the stream is in the figure: following the agent's output,
// parsing it, the redacted transcript, the events folded into the record
// and events.ndjson, and the narration on stderr (a file here, as in CI).
// Sub-benchmarks per CLI: claude, codex, gemini. Each iteration runs spawn
// then `cat stream > file` on the same bytes, so the two see the same load.
//
// Metrics: MB/s (the stream's size over spawn's whole wall time),
// cat-MB/s, x-vs-cat (spawn's time over cat's), rss-MB (the peak resident
// size of the spawn process, its VmHWM), base-ms (the same run with the recorded stream as it is, a
// few KB: what a run costs without the stream) and load (the 1-minute load
// average before the runs). With SPAWN_BENCH_BASELINE naming another spawn
// binary (one built from an older commit), each iteration runs it too, in
// turn with this one, and baseline-MB/s is its figure. cpu-ms is the CPU
// time (user and system) of a spawn run and of what it waited for, a
// figure the machine's other work sways less than the wall time; with a
// baseline, baseline-cpu-ms is its.
func BenchmarkStreamWhole(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("bubblewrap is Linux's")
	}
	if testing.Short() {
		b.Skip("-short")
	}
	mb := testenv.StreamMB(b)
	bin := testenv.Spawn(b)
	baseline := os.Getenv("SPAWN_BENCH_BASELINE")
	for _, cli := range streamCLIs() {
		b.Run(cli.name, func(b *testing.B) {
			// The agent's folder: its command's, which the sandbox shows it.
			agentDir := b.TempDir()
			stream := filepath.Join(agentDir, "stream.jsonl")
			writeGrownStream(b, cli, stream, mb)
			small := filepath.Join(agentDir, "recorded.jsonl")
			rec, err := os.ReadFile(filepath.Join(testenv.Root(b), "testdata", "transcripts", cli.transcript))
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(small, rec, 0o644); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(stream)
			if err != nil {
				b.Fatal(err)
			}
			size := fi.Size()
			// The agent answers a version probe, else writes the stream
			// its feed links to and exits 0.
			script := filepath.Join(agentDir, cli.name)
			feed := filepath.Join(agentDir, "feed")
			if err := os.WriteFile(script, []byte("#!/bin/sh\ncase \"$1\" in --version) echo 0.0.0; exit 0;; esac\nexec cat "+feed+"\n"), 0o755); err != nil {
				b.Fatal(err)
			}
			env := testenv.Env(b,
				"ANTHROPIC_API_KEY=sk-ant-bench-0123456789abcdef",
				"OPENAI_API_KEY=sk-bench-0123456789abcdefghij",
				"GEMINI_API_KEY=AIzaBench0123456789abcdefghij",
				"GITHUB_TOKEN=ghp_benchtoken0123456789")
			home, _ := strings.CutPrefix(env[slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "XDG_CONFIG_HOME=") })], "XDG_CONFIG_HOME=")
			if err := os.MkdirAll(filepath.Join(home, "spawn"), 0o755); err != nil {
				b.Fatal(err)
			}
			toml := fmt.Sprintf("[runners.%s]\ncommand = %q\n", cli.name, script)
			if err := os.WriteFile(filepath.Join(home, "spawn", "spawn-team.toml"), []byte(toml), 0o644); err != nil {
				b.Fatal(err)
			}
			repo := testenv.Repo(b)
			run := &wholeRun{bin: bin, cli: cli.name, repo: repo, env: env, feed: feed}

			// What a run costs without the stream: the recorded one, as it is.
			base := time.Duration(0)
			for range 2 {
				d, _, _ := run.spawn(b, small, int64(len(rec)))
				if base == 0 || d < base {
					base = d
				}
			}
			load, loadKnown := testenv.LoadAverage()
			var spawnTime, catTime, baselineTime, spawnCPU, baselineCPU time.Duration
			var rss, baselineRSS int64
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				d, kb, cpu := run.spawn(b, stream, size)
				spawnTime += d
				spawnCPU += cpu
				rss = max(rss, kb)
				catTime += catTo(b, stream, filepath.Join(b.TempDir(), "copy"))
				if baseline != "" {
					old := *run
					old.bin = baseline
					d, kb, cpu := old.spawn(b, stream, size)
					baselineTime += d
					baselineCPU += cpu
					baselineRSS = max(baselineRSS, kb)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(size)/1e6/(spawnTime.Seconds()/n), "MB/s")
			b.ReportMetric(float64(size)/1e6/(catTime.Seconds()/n), "cat-MB/s")
			b.ReportMetric(spawnTime.Seconds()/catTime.Seconds(), "x-vs-cat")
			b.ReportMetric(float64(rss)/1024, "rss-MB")
			b.ReportMetric(float64(base.Milliseconds()), "base-ms")
			b.ReportMetric(float64(spawnCPU.Milliseconds())/n, "cpu-ms")
			if loadKnown {
				b.ReportMetric(load, "load")
			}
			if baseline != "" {
				b.ReportMetric(float64(size)/1e6/(baselineTime.Seconds()/n), "baseline-MB/s")
				b.ReportMetric(float64(baselineCPU.Milliseconds())/n, "baseline-cpu-ms")
				b.ReportMetric(float64(baselineRSS)/1024, "baseline-rss-MB")
			}
		})
	}
}

// wholeRun runs the spawn binary for BenchmarkStreamWhole.
type wholeRun struct {
	bin, cli, repo string
	env            []string
	feed           string // the file the agent script cats: a link to the stream of the run
}

// spawn runs `spawn run --mode solo` with the agent writing stream (of
// size bytes), checks that the run succeeded under bubblewrap with the
// whole stream in its transcript, and returns its wall time, its peak
// RSS in KiB and its CPU time (with what it waited for).
func (r *wholeRun) spawn(b *testing.B, stream string, size int64) (time.Duration, int64, time.Duration) {
	b.Helper()
	b.StopTimer()
	if err := os.Remove(r.feed); err != nil && !errors.Is(err, os.ErrNotExist) {
		b.Fatal(err)
	}
	if err := os.Symlink(stream, r.feed); err != nil {
		b.Fatal(err)
	}
	before := runDirs(b, r.repo)
	out, err := os.Create(filepath.Join(b.TempDir(), "out"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(r.bin, "run", "--mode", "solo", "--coder", r.cli, "create hello.txt")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.repo, r.env, out, out
	b.StartTimer()
	start := time.Now()
	err = cmd.Start()
	var peak int64
	if err == nil {
		stop := make(chan struct{})
		done := make(chan int64)
		go func() { done <- watchPeakRSS(cmd.Process.Pid, stop) }()
		err = cmd.Wait()
		close(stop)
		peak = <-done
	}
	d := time.Since(start)
	b.StopTimer()
	if cerr := out.Close(); err != nil || cerr != nil {
		said, _ := os.ReadFile(out.Name())
		b.Fatalf("spawn run: %v %v\n%s", err, cerr, said)
	}
	dirs := slices.DeleteFunc(runDirs(b, r.repo), func(d string) bool { return slices.Contains(before, d) })
	if len(dirs) != 1 {
		b.Fatalf("want one new run, found %v", dirs)
	}
	dir := filepath.Join(r.repo, ".spawn", "runs", dirs[0])
	data, err := os.ReadFile(filepath.Join(dir, "record.json"))
	if err != nil {
		b.Fatal(err)
	}
	var rec observability.Record
	if err := json.Unmarshal(data, &rec); err != nil {
		b.Fatal(err)
	}
	if rec.Status != observability.StatusSucceeded || rec.Isolation == nil || rec.Isolation.Mode != "bwrap" || len(rec.CommandLines) != 1 {
		b.Fatalf("run %s: status %s, isolation %+v, %d command lines: want succeeded under bwrap, one", rec.ID, rec.Status, rec.Isolation, len(rec.CommandLines))
	}
	transcript := filepath.Join(dir, rec.CommandLines[0].Stdout)
	fi, err := os.Stat(transcript)
	if err != nil {
		b.Fatal(err)
	}
	if fi.Size() != size {
		b.Fatalf("the transcript holds %d bytes, the agent wrote %d", fi.Size(), size)
	}
	// The transcripts are the size of the stream: gone once checked.
	if err := os.Remove(transcript); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return d, peak, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// watchPeakRSS reads the peak resident size (VmHWM, KiB) of the process
// pid every 10 ms until stop is closed, and returns the last it read. The
// wait4 rusage cannot say it: a child started by a Go program inherits
// the parent's peak, which exec keeps.
func watchPeakRSS(pid int, stop <-chan struct{}) int64 {
	status := fmt.Sprintf("/proc/%d/status", pid)
	var peak int64
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if data, err := os.ReadFile(status); err == nil {
			for l := range strings.Lines(string(data)) {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil {
						peak = max(peak, kb)
					}
				}
			}
		}
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}

// runDirs lists the run directories of repo's registry.
func runDirs(b *testing.B, repo string) []string {
	b.Helper()
	entries, err := os.ReadDir(filepath.Join(repo, ".spawn", "runs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		b.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// catTo times `cat stream > copy`; the copy is removed.
func catTo(b *testing.B, stream, copyPath string) time.Duration {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	out, err := os.Create(copyPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("cat", stream)
	cmd.Stdout = out
	start := time.Now()
	err = cmd.Run()
	d := time.Since(start)
	if err := errors.Join(err, out.Close(), os.Remove(copyPath)); err != nil {
		b.Fatalf("cat: %v", err)
	}
	return d
}

// streamCLI is one agent CLI's recorded stream, as BenchmarkStreamWhole
// grows it: the recorded lines before the repeated turn (head), the turn
// itself, and the last line (the result).
type streamCLI struct {
	name       string
	transcript string // in testdata/transcripts
	head       int    // lines before the turn
	// ids matches the recorded ids of the turn's messages and tool calls;
	// each repetition gets ids of its own.
	ids *regexp.Regexp
	// output is where a tool call's recorded output is in a line of the
	// turn ("" for a line without one).
	output func(line map[string]any) (string, bool)
}

// streamCLIs are the three CLIs' formats: claude's stream-json, codex's
// exec --json events and gemini's stream-json.
func streamCLIs() []streamCLI {
	return []streamCLI{
		{
			name: "claude", transcript: "claude-b_allow_git.stdout.jsonl", head: 1,
			ids: regexp.MustCompile(`"(toolu_[A-Za-z0-9]+|msg_fake_[0-9a-f]+_[0-9]+)"`),
			output: func(l map[string]any) (string, bool) {
				msg, _ := l["message"].(map[string]any)
				content, _ := msg["content"].([]any)
				for _, c := range content {
					if block, _ := c.(map[string]any); block["type"] == "tool_result" {
						s, ok := block["content"].(string)
						return s, ok
					}
				}
				return "", false
			},
		},
		{
			name: "codex", transcript: "codex-coder.stdout.jsonl", head: 2,
			ids: regexp.MustCompile(`"(item_[0-9]+)"`),
			output: func(l map[string]any) (string, bool) {
				item, _ := l["item"].(map[string]any)
				s, ok := item["aggregated_output"].(string)
				return s, ok && l["type"] == "item.completed"
			},
		},
		{
			name: "gemini", transcript: "gemini-w_yolo.stdout.jsonl", head: 2,
			ids: regexp.MustCompile(`"([a-z_]+__[a-z_]+_[0-9]+_[0-9]+)"`),
			output: func(l map[string]any) (string, bool) {
				s, ok := l["output"].(string)
				return s, ok && l["type"] == "tool_result"
			},
		},
	}
}

// writeGrownStream writes to path about mb megabytes of cli's recorded
// stream: its head, then its recorded turn again and again, each time with
// ids of its own and every tool output replaced by the next 2 KB of a
// source file of spawn's (quotes, tabs and line breaks to escape, as a
// Read or a test run returns), then its recorded result line. Everything
// else of every line is the recorded bytes.
func writeGrownStream(b *testing.B, cli streamCLI, path string, mb int) {
	b.Helper()
	root := testenv.Root(b)
	rec, err := os.ReadFile(filepath.Join(root, "testdata", "transcripts", cli.transcript))
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(rec), "\n"), "\n")
	if len(lines) < cli.head+2 {
		b.Fatalf("%s: %d lines, want a head of %d, a turn and a result", cli.transcript, len(lines), cli.head)
	}
	head, turn, last := lines[:cli.head], lines[cli.head:len(lines)-1], lines[len(lines)-1]
	src, err := os.ReadFile(filepath.Join(root, "watcher", "process.go"))
	if err != nil {
		b.Fatal(err)
	}
	// The turn as a template: each tool output's recorded value (JSON
	// encoded as the CLI wrote it) is cut out, to be filled in anew.
	type part struct{ before, after string }
	parts := make([]part, len(turn))
	outputs := 0
	for i, l := range turn {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			b.Fatalf("%s line %d: %v", cli.transcript, cli.head+i+1, err)
		}
		s, ok := cli.output(v)
		if !ok {
			parts[i] = part{before: l}
			continue
		}
		enc := jsonString(b, s)
		before, after, found := strings.Cut(l, enc)
		if !found {
			b.Fatalf("%s line %d: the output %s is not in the line as written", cli.transcript, cli.head+i+1, enc)
		}
		parts[i] = part{before: before, after: after}
		outputs++
	}
	if outputs == 0 {
		b.Fatalf("%s: no tool output in the recorded turn", cli.transcript)
	}

	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, l := range head {
		w.WriteString(l)
	}
	limit := int64(mb) << 20
	written := int64(0)
	chunk := 0
	for rep := 0; written < limit; rep++ {
		suffix := fmt.Sprintf(`_r%d"`, rep)
		for _, p := range parts {
			var line string
			if p.after == "" && !strings.HasSuffix(p.before, "\n") {
				b.Fatalf("%s: a line of the turn has no end", cli.transcript)
			}
			if p.after == "" {
				line = p.before
			} else {
				from := chunk * 2048 % (len(src) - 2048)
				chunk++
				line = p.before + jsonString(b, string(src[from:from+2048])) + p.after
			}
			line = cli.ids.ReplaceAllStringFunc(line, func(id string) string { return strings.TrimSuffix(id, `"`) + suffix })
			n, _ := w.WriteString(line)
			written += int64(n)
		}
	}
	w.WriteString(last)
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		b.Fatal(err)
	}
}

// jsonString is s encoded as the CLIs write a JSON string: no HTML
// escaping.
func jsonString(b *testing.B, s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		b.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
