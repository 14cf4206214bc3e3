#!/usr/bin/env bash
# The fast tier (make unit): go test -short over the whole module, with no server needed.
# Prints the failures as go test does, then one line: how many tests passed and how long the
# run took (build included: on a warm build cache most of it is linking the test binaries, so
# they are linked without DWARF and symbol table (-ldflags='-s -w': stack traces keep their
# function names and lines) and without go test's own vet pass (make unit runs go vet first):
# 45 s instead of 89 s on the 2-core machine of BENCHMARKS.md).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s%N)
$GO test -short -count=1 -vet=off -ldflags='-s -w' -v ./... >"$out" 2>&1
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
ms=$(((end - start) / 1000000))
printf 'unit: %d tests passed, %d failed, %d skipped (they need servers) in %d.%01ds\n' \
	"$passed" "$failed" "$skipped" $((ms / 1000)) $((ms % 1000 / 100))
exit $rc
