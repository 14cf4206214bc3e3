#!/usr/bin/env bash
# make bench (scripts/bench.sh runs every scripts/bench-*.sh): the waiting room's fairness
# scenario and poll benchmark (seckill-bench room; docs/room.md, BENCHMARKS.md "Waiting room").
# A private stack whose gateway is bench/fairness.Caddyfile; about three minutes.
# Extra flags: ROOM_BENCH_FLAGS="-runs 1 -buyers 200" make bench
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
# shellcheck disable=SC2086
exec bin/seckill-bench room -bin bin -out bench-results/room ${ROOM_BENCH_FLAGS:-}
