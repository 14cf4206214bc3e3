#!/usr/bin/env bash
# make bench-draw (and make bench, which runs every scripts/bench-*.sh): draws
# (BENCHMARKS.md "Draws"): a draw entry against a room entry side by
# side (pinned, private services), the draw of a million entries over eight sizes, and five
# fairness runs of 100 000 entrants through two gateways. About ten minutes.
# Extra flags: DRAW_BENCH_FLAGS="-entries 200000 -runs 1" make bench-draw
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUN_DIR=${SECKILL_RUN_DIR:-$ROOT/.run}
# shellcheck disable=SC1091
[ -f "$RUN_DIR/env" ] && source "$RUN_DIR/env"
mkdir -p bin
go build -o bin/seckill-bench ./cmd/seckill-bench
go build -o bin/caddy ./cmd/caddy
go build -o bin/seckill-backend ./cmd/seckill-backend
PIN_FLAGS="-pin -private-services"
[ "${PIN:-1}" = 0 ] && PIN_FLAGS="-private-services"
# shellcheck disable=SC2086
exec bin/seckill-bench draw -bin bin -out bench-results/draw $PIN_FLAGS ${DRAW_BENCH_FLAGS:-}
