#!/usr/bin/env bash
# Creates the repository a committed cassette was recorded in, the same
# commit id on every machine: fixed contents, identity and dates. `make
# cassette` records in it; spawn's tests replay the cassettes of
# testdata/cassettes/ in it (its HEAD must be their record's base).
#
#   scripts/cassette-repo.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/cassette-repo.sh DIR}
mkdir -p "$dir"
cd "$dir"
export GIT_AUTHOR_NAME="spawn cassette" GIT_AUTHOR_EMAIL="cassette@spawn.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
git init --quiet --initial-branch=main
git config user.name "$GIT_AUTHOR_NAME"
git config user.email "$GIT_AUTHOR_EMAIL"
git config commit.gpgsign false
cat >README.md <<'MD'
# calc

A tiny Go package with one function, Total.
MD
cat >go.mod <<'MOD'
module example.com/calc

go 1.22
MOD
cat >calc.go <<'GO'
// Package calc adds numbers.
package calc

// Total returns the sum of xs.
func Total(xs []int) int {
	t := 1
	for _, x := range xs {
		t += x
	}
	return t
}
GO
git add README.md go.mod calc.go
git commit --quiet -m "calc: Total"
git rev-parse HEAD
