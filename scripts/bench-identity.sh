#!/usr/bin/env bash
# Identity at the edge (docs/bench.md, "Identity at the edge"; BENCHMARKS.md): the
# demo path, local JWT (seckill_identity), cached forward_auth (seckill_session) and Caddy's
# forward_auth with keep-alive on and off, side by side on one gateway, ROUNDS rounds (cases
# rotated each round), pinned (PIN=1, the default: the load generator on CPU 0, the gateway,
# Redis, the backend and the session stand-in on CPU 1). Prints the medians: req/s, CPU µs
# per request of the gateway and of the session stand-in, the ratios to the demo path, the
# session-service calls per rush, and the targets (met/MISSED). About two minutes.
#
#   scripts/bench-identity.sh                       # ROUNDS=3, PIN=1, results in bench-results/identity
#   PIN=0 ROUNDS=5 scripts/bench-identity.sh
#   IDENTITY_BENCH_FLAGS="-sessions 5000 -duration 10s -throttle=false" scripts/bench-identity.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUN_DIR=${SECKILL_RUN_DIR:-$ROOT/.run}
# shellcheck disable=SC1091
[ -f "$RUN_DIR/env" ] && source "$RUN_DIR/env"
ROUNDS=${ROUNDS:-3}
PIN=${PIN:-1}
OUT=${OUT:-bench-results/identity}
mkdir -p bin
go build -o bin/seckill-bench ./cmd/seckill-bench
go build -o bin/caddy ./cmd/caddy
go build -o bin/seckill-backend ./cmd/seckill-backend
flags=(-rounds "$ROUNDS")
if [ "$PIN" = 1 ]; then flags+=(-pin); fi
# shellcheck disable=SC2086
exec bin/seckill-bench identity -bin bin -out "$OUT" "${flags[@]}" ${IDENTITY_BENCH_FLAGS:-}
