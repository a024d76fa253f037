#!/usr/bin/env bash
# Records a cassette from the real model APIs, for spawn's tests to replay
# without a key (`make cassette`): spawn runs a two-round pingpong (the
# pinned claude coding, the pinned gemini reviewing) on the repository
# scripts/cassette-repo.sh makes, with your keys, and the run's record,
# configuration and cassette are copied to testdata/cassettes/NAME/.
# Every key in your environment is redacted from all three (spawn's
# redactor); read them before you commit them. It costs cents.
#
#   ANTHROPIC_API_KEY=... GEMINI_API_KEY=... scripts/record-cassette.sh [NAME]
#
#   NAME      the cassette's folder (default: paid-pingpong)
#   SPAWN     the spawn binary (default: bin/spawn, built by make)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
name=${1:-paid-pingpong}
spawn=${SPAWN:-$root/bin/spawn}
if [ -z "${ANTHROPIC_API_KEY:-}" ] || [ -z "${GEMINI_API_KEY:-}" ]; then
	echo "record-cassette: set ANTHROPIC_API_KEY and GEMINI_API_KEY (real, paid keys) to record from the real APIs" >&2
	exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
base=$(scripts/cassette-repo.sh "$work/calc")
mkdir -p "$work/home" "$work/tmp"
# The pinned CLIs first on PATH; a HOME and TMPDIR of the recording's
# own, so that nothing of yours reaches the prompts.
export PATH="$root/agents/node_modules/.bin:$PATH" HOME="$work/home" TMPDIR="$work/tmp"
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
unset XDG_CONFIG_HOME SPAWN_CONFIG
set +e
"$spawn" run --json --quiet --repo "$work/calc" --mode pingpong --max-iterations 2 --max-cost 1 \
	"Fix the bug in calc.go: Total must return the sum of xs (it starts from 1). Keep the change minimal and add no files." >"$work/record.json"
rc=$?
set -e
id=$(sed -n 's/^  "id": "\(.*\)",$/\1/p' "$work/record.json" | head -1)
if [ -z "$id" ]; then
	echo "record-cassette: spawn run made no run (exit $rc); its record: $work/record.json" >&2
	exit 1
fi
run="$work/calc/.spawn/runs/$id"
for f in record.json config.json cassette.jsonl.gz; do
	[ -f "$run/$f" ] || { echo "record-cassette: the run kept no $f; is [observability] cassette off in your spawn-team.toml?" >&2; exit 1; }
done
out="testdata/cassettes/$name"
rm -rf "$out"
mkdir -p "$out"
cp "$run/record.json" "$run/config.json" "$run/cassette.jsonl.gz" "$out/"
echo "recorded run $id (spawn exit $rc) on base $base into $out:"
ls -l "$out"
echo "go test -run TestRecordedCassettesReplayWithoutAKey ./spawn/ replays it without a key; commit $out to keep it"
