#!/usr/bin/env bash
# fuzz-short.sh: a short pass of every fuzz target in the module, for `make test`.
#
# go test -fuzz takes one target per invocation, so this finds each
# `func FuzzXxx(f *testing.F)` in the module's *_test.go files and runs it for
# FUZZTIME (default 4000x: a count of executions) in its package. Seeds come from f.Add and from the
# package's testdata/fuzz/FuzzXxx/ files; an input that fails is written there
# by go test, ready to be committed as a regression seed. Exits non-zero if
# any target fails.
#
# FUZZTIME is a count, not a duration: with a duration, go1.26's fuzzing
# coordinator can report its own deadline as a failure ("context deadline
# exceeded", no failing input written; go.dev/issue/75804, fixed in go1.27).
# A count has no deadline, so only a real failure fails the pass.
#
# Minimizing is capped at FUZZMINIMIZE executions (default 100x): go test
# otherwise spends up to a minute shrinking every new interesting input, and
# with seeds as large as the recorded transcripts a short pass would do
# little else.
#
# Usage: scripts/fuzz-short.sh            (from anywhere in the repository)
#        FUZZTIME=200000x scripts/fuzz-short.sh
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-4000x}
FUZZMINIMIZE=${FUZZMINIMIZE:-100x}

# "dir target" pairs, sorted; agents/ holds the CLIs' node_modules, not Go.
mapfile -t targets < <(
	grep -rE --include='*_test.go' --exclude-dir=agents --exclude-dir=.git \
		'^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
		sed -E 's|^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*$|\1 \2|' |
		sort -u
)
if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz-short: no fuzz targets found" >&2
	exit 1
fi

failed=()
start=$SECONDS
for t in "${targets[@]}"; do
	read -r dir name <<<"$t"
	echo "fuzz-short: $dir $name ($FUZZTIME)"
	if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZE" "./$dir/"; then
		failed+=("$dir $name")
	fi
done
echo "fuzz-short: ${#targets[@]} targets in $((SECONDS - start))s"
if [ "${#failed[@]}" -gt 0 ]; then
	printf 'fuzz-short: FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
