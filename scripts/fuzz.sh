#!/usr/bin/env bash
# Runs every Fuzz* target of the repository for a short time each (default 10s).
set -euo pipefail
t=${1:-10s}
cd "$(dirname "$0")/.."
found=0
while IFS= read -r file; do
	dir=$(dirname "$file")
	for fn in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
		found=1
		echo "fuzz: ./$dir $fn for $t"
		go test -run='^$' -fuzz="^${fn}\$" -fuzztime="$t" "./$dir"
	done
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' 2>/dev/null || true)
[ $found = 1 ] || echo "fuzz: no fuzz targets yet"
