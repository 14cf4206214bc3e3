#!/usr/bin/env bash
# The pure tier (make unit): every test file without the integration build tag, over the whole
# module, with no server, browser or built binary needed (CONTRIBUTING.md, "Tests").
#
# go test's cache is on: a package whose sources and test inputs did not change is not run
# again, so after a change only the packages it reaches are built and run. The cache sees the
# files and environment variables a test reads, not what a subprocess reads: the tests that
# run `go list` (which packages link what, the README's layout table, the tier of every test
# file) are kept in the packages of UNCACHED and run again every time with -count=1.
#
# Prints the failures as go test does, then one line: how many tests passed and how long the
# run took, building included. The binaries are linked without DWARF and symbol table
# (-ldflags='-s -w': stack traces keep their function names and lines) and without go test's
# own vet pass (make unit runs go vet first).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
UNCACHED=(./internal/doccheck ./internal/testlayout)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s%N)
pkgs=$($GO list ./... | grep -vxF -f <(for p in "${UNCACHED[@]}"; do $GO list "$p"; done))
# shellcheck disable=SC2086
$GO test -short -vet=off -ldflags='-s -w' -v $pkgs >"$out" 2>&1
rc=$?
$GO test -short -count=1 -vet=off -ldflags='-s -w' -v "${UNCACHED[@]}" >>"$out" 2>&1 || rc=$?
end=$(date +%s%N)
# The package lines; on a failure, everything but the passing and skipping tests' markers.
if [ $rc -eq 0 ]; then
	grep -E '^(ok|FAIL)\s' "$out"
else
	grep -vE '^(=== (RUN|PAUSE|CONT|NAME)|\s*--- (PASS|SKIP)|PASS$)|no test files' "$out"
fi
passed=$(grep -cE '^--- PASS' "$out")
failed=$(grep -cE '^--- FAIL' "$out")
skipped=$(grep -cE '^--- SKIP' "$out")
cached=$(grep -cE '^ok\s.*\(cached\)' "$out")
ms=$(((end - start) / 1000000))
printf 'unit: %d tests passed, %d failed, %d skipped, in %d.%01ds (%d packages from the test cache)\n' \
	"$passed" "$failed" "$skipped" $((ms / 1000)) $((ms % 1000 / 100)) "$cached"
exit $rc
