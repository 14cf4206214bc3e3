#!/usr/bin/env bash
# make bench (scripts/bench.sh runs every scripts/bench-*.sh): the targets for the waiting
# room at scale (docs/room.md, BENCHMARKS.md "Waiting room"):
#  - Redis commands per poll over a run of 100 000 waiters through two gateways whose front
#    moves, with the room's invariants 6-9 checked (seckill-bench room -only scale);
#  - the last 10 % of the units against the first 10 % with half the waiters absent, without the
#    presence rule and with it (seckill-bench room -only lastunits; one stack per setting);
#  - each gateway's memory for a room of 100 000 and 1 000 000 waiters (BenchmarkGatewayRoomMemory)
#    and Redis's per waiter, with and without the presence set (BenchmarkRoomMemoryPerWaiter*).
# About fifteen minutes on a quiet machine. Extra flags: ROOM_SCALE_FLAGS="-scale-waiters 20000"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUN_DIR=${SECKILL_RUN_DIR:-$ROOT/.run}
# shellcheck disable=SC1091
[ -f "$RUN_DIR/env" ] && source "$RUN_DIR/env"
mkdir -p bin bench-results/room-scale
go build -o bin/seckill-bench ./cmd/seckill-bench
go build -o bin/caddy ./cmd/caddy
go build -o bin/seckill-backend ./cmd/seckill-backend
status=0
# shellcheck disable=SC2086
bin/seckill-bench room -bin bin -only scale,lastunits -out bench-results/room-scale ${ROOM_SCALE_FLAGS:-} || status=$?
go test -tags integration -run '^$' -bench 'GatewayRoomMemory' -benchtime 1x ./caddymodule/room/ | tee bench-results/room-scale/gateway-memory.txt || status=$?
SECKILL_ROOM_WAITERS=${SECKILL_ROOM_WAITERS:-1000000} go test -tags integration -run '^$' -bench 'RoomMemoryPerWaiter' -benchtime 1x -timeout 30m ./caddymodule/room/ |
	tee bench-results/room-scale/redis-memory.txt || status=$?
exit "$status"
