#!/usr/bin/env bash
# Runs every Fuzz* target of the repository for a short time each (default 10s), with the
# integration tag: some targets drive the real Redis, so the stack must be running.
#
# Go's fuzz coordinator before Go 1.27 can end a duration-bounded run with a bare
# "context deadline exceeded" when a starved worker misses the stop (go.dev/issue/75804): no
# input failed and nothing was written to testdata/fuzz. Such a run is retried once; a real
# finding ("Failing input written to", a panic, a t.Fatal) fails at once, and a second bare
# deadline fails too, so a target that never completes cannot pass.
set -euo pipefail
t=${1:-10s}
cd "$(dirname "$0")/.."
found=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# bare_deadline LOG: the run failed with the coordinator's deadline and nothing else.
bare_deadline() {
	grep -q 'context deadline exceeded' "$1" &&
		! grep -q -e 'Failing input written to' -e 'panic:' -e '_test.go:[0-9]*:' "$1"
}
while IFS= read -r file; do
	dir=$(dirname "$file")
	for fn in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
		found=1
		for attempt in 1 2; do
			if [ "$attempt" = 1 ]; then
				echo "fuzz: ./$dir $fn for $t"
			else
				echo "fuzz: ./$dir $fn for $t, again: the last run ended on the coordinator deadline alone"
			fi
			if go test -tags integration -run='^$' -fuzz="^${fn}\$" -fuzztime="$t" "./$dir" 2>&1 | tee "$log"; then
				break
			fi
			if [ "$attempt" = 1 ] && bare_deadline "$log"; then
				continue
			fi
			exit 1
		done
	done
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' 2>/dev/null || true)
[ $found = 1 ] || echo "fuzz: no fuzz targets yet"
