#!/usr/bin/env bash
# Distributed lock benchmarks (redislock/bench_test.go): this package and bsm/redislock side by
# side in one run, on a private redis-server each benchmark starts, COUNT runs, medians.
#
#   scripts/bench-lock.sh                 # all, -count 5, -benchtime 3s (about 2 minutes)
#   COUNT=10 BENCH=WakeUp scripts/bench-lock.sh
#
# Prints the raw `go test -bench` output, then a Markdown table of medians per benchmark and
# metric (the form BENCHMARKS.md uses). Set BENCHSTAT=1 to also run benchstat (module proxy).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-3s}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

echo "# $(date -u +%FT%TZ)  nproc=$(nproc)  mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "# go test -tags integration -run '^\$' -bench '$BENCH' -benchtime $BENCHTIME -count $COUNT ./redislock/"
go test -tags integration -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" -count "$COUNT" ./redislock/ | tee "$raw"

echo
echo "Medians of $COUNT runs:"
echo
# One line per (benchmark, metric, value), ns/op left out (an iteration runs every
# implementation); then the median of each (benchmark, metric), one table row each.
echo "| benchmark | metric | median |"
echo "|---|---|---:|"
awk '/^Benchmark/ && $2 ~ /^[0-9]+$/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 3; i < NF; i += 2) if ($(i+1) != "ns/op") print name "\t" $(i+1) "\t" $i
}' "$raw" | sort -t$'\t' -k1,1 -k2,2 -k3,3g | awk -F'\t' '
	function flush() {
		if (n == 0) return
		m = (n % 2) ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
		if (m >= 100) printf "| %s | %s | %.0f |\n", b, u, m; else printf "| %s | %s | %.3g |\n", b, u, m
		n = 0
	}
	{ if ($1 != b || $2 != u) { flush(); b = $1; u = $2 }; v[++n] = $3 }
	END { flush() }'

if [[ "${BENCHSTAT:-0}" == 1 ]]; then
	go run golang.org/x/perf/cmd/benchstat@latest "$raw"
fi
