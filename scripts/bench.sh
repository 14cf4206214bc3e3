#!/usr/bin/env bash
# make bench: the whole-sale comparison (seckill-bench: pessimistic lock, optimistic lock, the
# full edge and Caddy's plain respond under the same crowd, then the full edge under an open
# arrival rate, every invariant checked), then every area's own benchmark script
# (scripts/bench-*.sh) that exists.
#
# Results: bench-results/ (result.json, report.html; git-ignored). BENCHMARKS.md records them.
# Extra seckill-bench flags: BENCH_FLAGS="-users 50000 -duration 15s" make bench
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUN_DIR=${SECKILL_RUN_DIR:-$ROOT/.run}
# shellcheck disable=SC1091
[ -f "$RUN_DIR/env" ] && source "$RUN_DIR/env"

status=0
echo "== the whole sale: seckill-bench (nproc $(nproc), $(free -m | awk '/^Mem:/{print $2}') MiB)"
go build -o bin/seckill-bench ./cmd/seckill-bench
# shellcheck disable=SC2086
bin/seckill-bench -bin bin -out bench-results ${BENCH_FLAGS:-} || status=$?

for script in scripts/bench-*.sh; do
	[ -e "$script" ] || continue
	echo
	echo "== $script"
	bash "$script" || status=$?
done
exit "$status"
