#!/usr/bin/env bash
# Benchmark of hot-sale stock sharding (docs/scaling.md): purchase decisions per second of ONE
# hot sale on a private 3-master Redis Cluster (started on loopback by the benchmark itself),
# unsharded (shards=1: every decision on one master) against sharded over 3 shards on the 3
# masters (shards=3). ROUNDS rounds (default 5) of BENCHTIME each (default 3s); in each round
# both run one after the other, in alternating order (the machine's load drifts), each on a
# fresh cluster. Prints every run, then the medians and the ratio. See BENCHMARKS.md for what
# a 2-core machine can show.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
BENCHTIME=${BENCHTIME:-3s}
RUN_DIR=${SECKILL_RUN_DIR:-$PWD/.run}
# shellcheck disable=SC1091
[ -f "$RUN_DIR/env" ] && source "$RUN_DIR/env"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -tags integration -c -o "$tmp/gate.test" ./caddymodule/gate/
echo "bench-shard: nproc $(nproc), $(free -m | awk '/^Mem:/{print $2}') MiB, $ROUNDS rounds of $BENCHTIME, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
run() { (cd caddymodule/gate && "$tmp/gate.test" -test.run '^$' -test.bench "HotSaleOnACluster/shards=$1\$" -test.benchtime "$BENCHTIME") | grep -E '^Benchmark' | tee -a "$tmp/out"; }
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then run 1; run 3; else run 3; run 1; fi
done
awk '
/^BenchmarkHotSaleOnACluster\/shards=/ {
	split($1, a, "shards="); k = a[2]; sub(/-[0-9]+$/, "", k)
	for (i = 1; i <= NF; i++) if ($(i+1) == "decisions/s") v[k] = v[k] " " $i
}
function median(s,   arr, n, i, j, t) {
	n = split(s, arr, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (arr[j] + 0 < arr[i] + 0) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
	return (n % 2) ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
}
END {
	print ""
	print "| one hot sale on a 3-master cluster | decisions/s (median) | vs shards=1 |"
	print "|---|---:|---:|"
	base = median(v["1"])
	for (k = 1; k <= 3; k += 2) if (v[k] != "") printf "| shards=%d | %.0f | %.2f |\n", k, median(v[k]), median(v[k]) / base
}' "$tmp/out"
