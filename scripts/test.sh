#!/usr/bin/env bash
# Runs every check main must pass: formatting, vet, the module files, unit
# tests with the race detector, and the end-to-end tests against the real
# binary (short mode), over every module of the go.work workspace (the
# "work" package pattern), and deploy/ on its own.
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
go vet work

# Each module's go.mod and go.sum are what go mod tidy makes of them, as
# the module is seen on its own (GOWORK=off: tidy ignores the workspace).
# The cross-module checks (lean client, one version, shared dependency
# versions, set-version.sh) are the tests of ./tests/modules, run below.
echo "== go mod tidy (every module)"
for mod in $(go list -m -f '{{.Dir}}') deploy; do
  if ! diff=$(cd "$mod" && GOWORK=off go mod tidy -diff 2>&1); then
    echo "go mod tidy would change $mod:"; echo "$diff"; exit 1
  fi
done

short="-short"
[ "${FULL:-}" = 1 ] && short=""

echo "== unit tests (race; one package at a time: several start members on free ports)"
go test -race -count=1 -p 1 $(go list work | grep -v /tests/)
# The failpoint registry exists only under its build tag.
go test -race -count=1 -tags failpoints ./pkg/failpoint

# Each fuzz target runs briefly beyond its committed seed corpus (which the
# unit tests above already ran). Go fuzzes one target per invocation.
# FUZZTIME=10m ./scripts/test.sh fuzzes longer. The default is a count of
# executions, not a duration: Go 1.26's fuzz coordinator can fail a target
# with a bare "context deadline exceeded" when a duration ends while a worker
# is mid-input (golang/go#75804, fixed in Go 1.27); a count never hits it.
fuzztime="${FUZZTIME:-1000x}"
echo "== fuzz targets (${fuzztime} each)"
grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' server pkg client |
  sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*#\1 \2#' | sort |
  while read -r dir target; do
    if ! out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "${fuzztime}" -fuzzminimizetime 10s -parallel 1 "./$dir" 2>&1); then
      echo "$out"; echo "FAIL $target ./$dir (the failing input is under ./$dir/testdata/fuzz/$target)"; exit 1
    fi
    echo "ok   $target ./$dir"
  done

# deploy/ is a module of its own outside the workspace (its tests need
# k8s.io/api and Prometheus' rule parser, which cairn's users should never
# download, and which would raise shared dependency versions in a
# workspace build); its replace directives point it at the local modules.
echo "== deployment assets (deploy/: manifests, systemd unit, rules, dashboard, license)"
(cd deploy && GOWORK=off go vet ./... && GOWORK=off go test -race -count=1 ./...)

echo "== e2e and compatibility tests (real processes; one package at a time)"
go test -race -count=1 $short -p 1 -timeout 20m ./tests/...
