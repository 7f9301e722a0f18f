#!/usr/bin/env bash
# Runs every check main must pass: formatting, vet, unit tests with the race
# detector, and the end-to-end tests against the real binary (short mode).
# Usage: ./scripts/test.sh            (CI and local)
#        FULL=1 ./scripts/test.sh     (e2e without -short)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

short="-short"
[ "${FULL:-}" = 1 ] && short=""

echo "== unit tests (race; one package at a time: several start members on free ports)"
go test -race -count=1 -p 1 $(go list ./... | grep -v /tests/)
# The failpoint registry exists only under its build tag.
go test -race -count=1 -tags failpoints ./pkg/failpoint

echo "== e2e and compatibility tests (real processes; one package at a time)"
go test -race -count=1 $short -p 1 -timeout 20m ./tests/...
