#!/usr/bin/env bash
# Backend benchmark: orders written per second by the batched writer (500 orders per
# transaction) against one order per transaction, side by side in one run, each measured
# three times; prints the medians as a Markdown table (BENCHMARKS.md, section "## Backend").
#
#   writer   WriteBatch straight from memory: the database part alone
#   consumer messages pre-published to RabbitMQ, consumed and written (end to end)
#
# Needs the stack (make stack). COUNT=5 for more runs.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_DIR=${SECKILL_RUN_DIR:-.run}
# shellcheck disable=SC1091
[ -f "$RUN_DIR/env" ] && source "$RUN_DIR/env"
COUNT=${COUNT:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Rounds interleave the four measurements, so each batched/one-per-tx pair shares the machine's
# mood of the moment (the 2-core machine is shared and noisy).
for i in $(seq "$COUNT"); do
	echo "[bench-backend] round $i/$COUNT: go test -bench 'BenchmarkWriter|BenchmarkConsumer' ./backend/" >&2
	go test -tags integration -run '^$' -bench 'BenchmarkWriter|BenchmarkConsumer' -benchtime 1x -count 1 ./backend/ | tee -a "$out" >&2
done

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }
rate() { grep "^Benchmark$1-" "$out" | awk '{for (i=1;i<=NF;i++) if ($i=="orders/s") print $(i-1)}' | median; }
runs() { grep "^Benchmark$1-" "$out" | awk '{for (i=1;i<=NF;i++) if ($i=="orders/s") printf "%s ", $(i-1)}'; }

wb=$(rate Writer/batched-500); w1=$(rate Writer/one-per-tx)
cb=$(rate Consumer/batched-500); c1=$(rate Consumer/one-per-tx)
echo
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u +%Y-%m-%dT%H:%MZ); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| path | batched, 500 per tx (orders/s) | one per tx (orders/s) | ratio | runs (batched / one) |"
echo "|---|---|---|---|---|"
printf "| writer (Postgres only) | %.0f | %.0f | %.1fx | %s/ %s|\n" "$wb" "$w1" "$(awk -v a="$wb" -v b="$w1" 'BEGIN {print a/b}')" "$(runs Writer/batched-500)" "$(runs Writer/one-per-tx)"
printf "| consumer (RabbitMQ -> Postgres) | %.0f | %.0f | %.1fx | %s/ %s|\n" "$cb" "$c1" "$(awk -v a="$cb" -v b="$c1" 'BEGIN {print a/b}')" "$(runs Consumer/batched-500)" "$(runs Consumer/one-per-tx)"
