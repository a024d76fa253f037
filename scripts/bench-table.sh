#!/usr/bin/env bash
# Runs spawn's benchmarks and prints one table: each figure as spawn against
# its limit measured in the same run (the bare CLI, raw git, cat, true...),
# and their ratio. A figure whose benchmark is missing or failed prints n/a;
# the failure is shown under the table and the script exits 1.
#
#   BENCHTIME=5x  go test -benchtime for every benchmark (default 5x)
#   SMOKE=1       a quick pass (-benchtime 1x, the cheap figures only) that
#                 proves the benchmarks and this table still work
#   GO=go         the go command
set -uo pipefail

GO=${GO:-go}
BENCHTIME=${BENCHTIME:-5x}
SMOKE=${SMOKE:-0}
cd "$(dirname "$0")/.."

out=$(mktemp)
errs=$(mktemp)
trap 'rm -f "$out" "$errs"' EXIT
failed=0

# bench PKG REGEX [TAG [ENV...]]: runs the benchmarks; TAG is appended to
# their names (BenchmarkStream@1MB) so runs of one benchmark stay apart.
bench() {
	local pkg=$1 re=$2 tag=${3:-} log
	shift 3 2>/dev/null || shift $#
	log=$(mktemp)
	if ! env "$@" "$GO" test -run '^$' -bench "$re" -benchtime "$BENCHTIME" "$pkg" >"$log" 2>&1; then
		failed=1
		{ echo "--- $pkg -bench $re $tag failed:"; tail -20 "$log"; } >>"$errs"
	fi
	sed -n "s/^\(Benchmark[^ /-]*\)/\1$tag/p" "$log" >>"$out"
	rm -f "$log"
}

if [ "$SMOKE" = 1 ]; then
	BENCHTIME=1x
	bench ./spawn 'BenchmarkSoloRun$|BenchmarkVersionStartup$|BenchmarkSeatTurn$'
	bench ./spawn/runs 'BenchmarkList1000$'
	bench ./internal/cli 'BenchmarkLs1000Runs$'
	bench ./spawn/sandbox 'BenchmarkWorktree$'
	bench ./internal/proc 'BenchmarkAgentStart$'
	bench ./prompts 'BenchmarkParseReviewAdversarial$'
	bench ./watcher 'BenchmarkStream$' @1MB SPAWN_BENCH_STREAM_MB=1
	bench ./internal/cli 'BenchmarkStreamWhole$' @1MB SPAWN_BENCH_STREAM_MB=1
else
	bench ./spawn 'BenchmarkSoloRun$|BenchmarkPingpongOverhead$|BenchmarkConcurrent8$|BenchmarkReviewerBytes$|BenchmarkVersionStartup$|BenchmarkSeatTurn$'
	bench ./spawn/runs 'BenchmarkList1000$'
	bench ./internal/cli 'BenchmarkLs1000Runs$'
	bench ./spawn/sandbox 'BenchmarkWorktree$|BenchmarkTurnCommit$'
	bench ./internal/proc 'BenchmarkAgentStart$'
	bench ./prompts 'BenchmarkParseReviewAdversarial$'
	bench ./watcher 'BenchmarkStream$' @1MB SPAWN_BENCH_STREAM_MB=1
	bench ./watcher 'BenchmarkStream$' @100MB SPAWN_BENCH_STREAM_MB=100
	BENCHTIME=1x bench ./watcher 'BenchmarkStream$' @1GB SPAWN_BENCH_STREAM_MB=1000
	bench ./internal/cli 'BenchmarkStreamWhole$' @100MB SPAWN_BENCH_STREAM_MB=100
	BENCHTIME=1x bench ./internal/cli 'BenchmarkStreamWhole$' @300MB SPAWN_BENCH_STREAM_MB=300
fi

# The load average beside every figure: the machine may be shared.
echo "spawn benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a), -benchtime $BENCHTIME"
echo
awk '
# A result line: BenchmarkName[/sub]-P  N  value unit  value unit ...
{
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 3; i + 1 <= NF; i += 2) m[name, $(i + 1)] = $i
}
function has(k, u) { return ((k, u) in m) }
function ms(k, u) { return has(k, u) ? m[k, u] / 1e6 : "" }
function v(k, u) { return has(k, u) ? m[k, u] : "" }
function fmt(x, unit) {
	if (x == "") return "n/a"
	if (unit == "text") return x
	if (unit == "x") return sprintf("%.2f", x)
	if (x >= 100) return sprintf("%.0f %s", x, unit)
	return sprintf("%.1f %s", x, unit)
}
function row(figure, s, l, unit, lunit,    ratio) {
	if (lunit == "") lunit = unit
	ratio = (s != "" && l != "" && l + 0 != 0) ? sprintf("%.2fx", s / l) : "n/a"
	printf "| %-48s | %14s | %14s | %7s |\n", figure, fmt(s, unit), fmt(l, lunit), ratio
}
function one(figure, s, unit, limit) {
	printf "| %-48s | %14s | %14s | %7s |\n", figure, fmt(s, unit), limit, "-"
}
END {
	# row and one keep their locals in extra parameters: awk variables are
	# global otherwise.
	printf "| %-48s | %14s | %14s | %7s |\n", "figure", "spawn", "limit", "ratio"
	printf "|%s|%s|%s|%s|\n", "--------------------------------------------------", "----------------", "----------------", "---------"
	row("solo turn vs bare claude", ms("BenchmarkSoloRun/spawn", "ns/op"), ms("BenchmarkSoloRun/claude", "ns/op"), "ms")
	one("  its claude process, under the sandbox", v("BenchmarkSoloRun/spawn", "agent-ms"), "ms", "-")
	one("  the rest: spawn (setup, commit, finish)", v("BenchmarkSoloRun/spawn", "spawn-ms"), "ms", "-")
	n = split("claude codex gemini", cli, " ")
	for (i = 1; i <= n; i++) {
		k = "BenchmarkSeatTurn/" cli[i]
		row("coder turn: " cli[i] " under spawn vs bare", ms(k "/spawn", "ns/op"), ms(k "/bare", "ns/op"), "ms")
		one("  of it, spawn itself (setup, commit, finish)", v(k "/spawn", "spawn-ms"), "ms", "-")
	}
	# Every coder with every reviewer of another family, two rounds each.
	np = split("claude-codex claude-gemini codex-claude codex-gemini gemini-claude gemini-codex", pairs, " ")
	for (i = 1; i <= np; i++) {
		p = "BenchmarkPingpongOverhead/" pairs[i]
		split(pairs[i], seat, "-")
		row("pingpong " seat[1] "/" seat[2] ": wall vs the agents alone", v(p, "wall-ms"), v(p, "agents-ms"), "ms")
		one("  spawn own time per agent process", v(p, "overhead-ms/proc"), "ms", "10 ms")
		one("    of it, waiting for git, bwrap and its helper", v(p, "waited-ms/proc"), "ms", "-")
		one("    of it, spawn itself (its own code)", v(p, "code-ms/proc"), "ms", "-")
		one("    waits per agent process (git, probe, helper)", (has(p, "waits/proc") ? sprintf("%.1f", v(p, "waits/proc")) : ""), "text", "-")
		one("    a bare git process (git --version) beside", v(p, "git-exec-ms"), "ms", "-")
		one("  spawn own time, % of the wall time", v(p, "overhead-%"), "%", "2 %")
		one("  before first agent / between two / after last", \
			(has(p, "setup-ms") ? sprintf("%.0f / %.0f / %.0f ms", v(p, "setup-ms"), v(p, "between-ms"), v(p, "finish-ms")) : ""), "text", "-")
	}
	row("agent process start and end: reaper vs exec", v("BenchmarkAgentStart", "reaper-ms"), v("BenchmarkAgentStart", "exec-ms"), "ms")
	row("provisioning (worktree) vs git worktree add", v("BenchmarkWorktree", "spawn-ms"), v("BenchmarkWorktree", "git-ms"), "ms")
	row("per-turn git, 300 files, vs raw git", v("BenchmarkTurnCommit/small", "spawn-ms"), v("BenchmarkTurnCommit/small", "git-ms"), "ms")
	row("per-turn git, 50k files, vs raw git", v("BenchmarkTurnCommit/50k", "spawn-ms"), v("BenchmarkTurnCommit/50k", "git-ms"), "ms")
	n = split("1MB 100MB 1GB", sz, " ")
	for (i = 1; i <= n; i++) {
		k = "BenchmarkStream@" sz[i]
		row("stream " sz[i] " MB/s vs cat", v(k, "MB/s"), v(k, "cat-MB/s"), "MB/s")
		one("  peak RSS at " sz[i], v(k, "rss-MB"), "MB", has(k, "cat-rss-MB") ? fmt(v(k, "cat-rss-MB"), "MB") : "-")
	}
	# The whole spawn run process (bubblewrap, the watcher, the transcript,
	# the events, the narration) against cat of the same bytes.
	n = split("1MB 100MB 300MB", sz, " ")
	nc = split("claude codex gemini", clis, " ")
	for (i = 1; i <= n; i++) {
		# A size this pass does not run (SMOKE runs 1MB alone, the full
		# table 100MB and 300MB) has no rows; a failed run is listed below.
		ran = 0
		for (j = 1; j <= nc; j++) if (has("BenchmarkStreamWhole@" sz[i] "/" clis[j], "MB/s")) ran = 1
		if (!ran) continue
		for (j = 1; j <= nc; j++) {
			k = "BenchmarkStreamWhole@" sz[i] "/" clis[j]
			row("spawn run, " clis[j] " stream " sz[i] " MB/s vs cat", v(k, "MB/s"), v(k, "cat-MB/s"), "MB/s")
			one("  peak RSS of spawn, load " v(k, "load"), v(k, "rss-MB"), "MB", "-")
			one("  the same run with the recorded stream alone", v(k, "base-ms"), "ms", "-")
		}
	}
	row("8 concurrent solo runs vs 8 bare claude", v("BenchmarkConcurrent8", "spawn-ms"), v("BenchmarkConcurrent8", "claude-ms"), "ms")
	row("  CPU time of one run vs one bare claude", v("BenchmarkConcurrent8", "spawn-cpu-ms/run"), v("BenchmarkConcurrent8", "claude-cpu-ms/run"), "ms")
	one("  load before the runs", v("BenchmarkConcurrent8", "load"), "x", "-")
	k = "BenchmarkReviewerBytes"
	for (r = 2; r <= 5; r++) {
		row("reviewer round " r ": prompt / full re-review", v(k, "r" r "-prompt-x"), 0.40, "x")
		row("reviewer round " r ": request / fresh full review", v(k, "r" r "-request-x"), 1.00, "x")
	}
	one("registry List of 1,000 runs", ms("BenchmarkList1000", "ns/op"), "ms", "-")
	row("spawn ls of 1,000 runs vs its registry List", ms("BenchmarkLs1000Runs", "ns/op"), ms("BenchmarkList1000", "ns/op"), "ms")
	row("spawn version start-up vs exec true", ms("BenchmarkVersionStartup/spawn", "ns/op"), ms("BenchmarkVersionStartup/true", "ns/op"), "ms")
	row("spawn-shim start-up vs exec true", ms("BenchmarkVersionStartup/shim", "ns/op"), ms("BenchmarkVersionStartup/true", "ns/op"), "ms")
	# The slowest of the adversarial review answers, per byte, against
	# itself at an eighth of the size: a linear scan is near 1.
	worst = ""
	for (k in m) {
		split(k, kp, SUBSEP)
		if (index(kp[1], "BenchmarkParseReviewAdversarial/") == 1 && kp[2] == "x-vs-eighth" && (worst == "" || m[k] + 0 > worst + 0)) worst = m[k]
	}
	row("review parse, adversarial: 1 MiB vs 8 x 128 KiB", worst, 1.00, "x")
}' "$out"

if [ "$failed" != 0 ]; then
	echo
	cat "$errs"
	exit 1
fi
