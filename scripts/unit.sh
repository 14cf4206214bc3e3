#!/usr/bin/env bash
# The pure tier (make unit): every test file without the integration build tag, over the whole
# module, with no server, browser or built binary needed (CONTRIBUTING.md, "Tests").
#
# go test's cache is on: a package whose sources and test inputs did not change is not run
# again, so after a change only the packages it reaches are built and run. The cache sees the
# files, directories and environment variables a test reads, not what a subprocess reads: the
# tests that run `go list` (internal/testlayout, internal/doccheck) open every directory of the
# module first (testlayout.Watch), so they run again after a change to any Go file and come
# from the cache otherwise.
#
# Prints the failures as go test does, then one line: how many tests passed and how long the
# run took, building included. The binaries are linked without DWARF and symbol table
# (-ldflags='-s -w': stack traces keep their function names and lines) and without go test's
# own vet pass (make unit runs go vet first).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s%N)
$GO test -short -vet=off -ldflags='-s -w' -v ./... >"$out" 2>&1
rc=$?
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
