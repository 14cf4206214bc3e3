#!/usr/bin/env bash
# The cost of a purchase decision on a sale with variants against a single-stock one, side by
# side in one run (caddymodule/gate/variants_bench_test.go: a private redis-server,
# blocks of every case in turn, medians over the blocks). Three runs; BENCHMARKS.md, "Variants".
#
#   scripts/bench-variants.sh           # RUNS=3 BLOCKS=40
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
BLOCKS=${BLOCKS:-40}
echo "Machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "Command: go test -tags integration -run '^\$' -bench DecisionVariantsVsSingleStock -benchtime ${BLOCKS}x ./caddymodule/gate/ ($RUNS runs)"
for i in $(seq "$RUNS"); do
	echo "run $i:"
	go test -tags integration -count=1 -run '^$' -bench DecisionVariantsVsSingleStock -benchtime "${BLOCKS}x" ./caddymodule/gate/ |
		tr '\t' '\n' | grep -E 'us/call|/single' | sed 's/^ */  /'
done
