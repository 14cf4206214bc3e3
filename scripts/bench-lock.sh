#!/usr/bin/env bash
# Distributed lock benchmarks (redislock/bench_test.go): this package and bsm/redislock side by
# side in one run, on a private redis-server each benchmark starts, COUNT runs, medians.
#
#   scripts/bench-lock.sh                 # all, -count 5 (about 2 minutes)
#   COUNT=10 BENCH=WakeUp scripts/bench-lock.sh
#
# Prints the raw `go test -bench` output, then a Markdown table of medians per benchmark and
# metric (the form BENCHMARKS.md uses). Set BENCHSTAT=1 to also run benchstat (module proxy).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-1s}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

echo "# $(date -u +%FT%TZ)  nproc=$(nproc)  mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "# go test -run '^\$' -bench '$BENCH' -benchtime $BENCHTIME -count $COUNT ./redislock/"
go test -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" -count "$COUNT" ./redislock/ | tee "$raw"

echo
echo "Medians of $COUNT runs:"
echo
# One line per (benchmark, unit, value); then the median of each (benchmark, unit).
awk '/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 3; i < NF; i += 2) print name "\t" $(i+1) "\t" $i
}' "$raw" | sort -t$'\t' -k1,1 -k2,2 -k3,3g | awk -F'\t' '
	function flush() {
		if (n == 0) return
		m = (n % 2) ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
		cell[key] = m; n = 0
	}
	{
		k = $1 SUBSEP $2
		if (k != key) { flush(); key = k; if (!($1 in seen)) { seen[$1] = 1; names[++nn] = $1 }; if (!($2 in useen)) { useen[$2] = 1; units[++nu] = $2 } }
		v[++n] = $3
	}
	END {
		flush()
		printf "| benchmark |"; for (u = 1; u <= nu; u++) printf " %s |", units[u]; print ""
		printf "|---|"; for (u = 1; u <= nu; u++) printf "---:|"; print ""
		for (i = 1; i <= nn; i++) {
			printf "| %s |", names[i]
			for (u = 1; u <= nu; u++) {
				c = names[i] SUBSEP units[u]
				if (!(c in cell)) printf " |"; else if (cell[c] >= 100) printf " %.0f |", cell[c]; else printf " %.3g |", cell[c]
			}
			print ""
		}
	}'

if [[ "${BENCHSTAT:-0}" == 1 ]]; then
	go run golang.org/x/perf/cmd/benchstat@latest "$raw"
fi
