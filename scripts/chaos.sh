#!/usr/bin/env bash
# make chaos: a flash sale through two gateways and two consumers of a private deployment (its
# own Redis, RabbitMQ and Postgres servers on free loopback ports; the shared stack is never
# touched) while a schedule kills and restarts every part, then every invariant is checked.
# See docs/chaos.md.
#
#   make chaos                              one run of the default schedule (about 2 minutes)
#   CHAOS_RUNS=3 make chaos                 several runs in a row; fails unless all pass
#   CHAOS_FLAGS=-redis-crash make chaos     kill -9 Redis instead of stopping it (measures loss)
#
# Results: chaos-results/run-<n>.json (git-ignored); logs of a failed run stay in its -dir.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
runs=${CHAOS_RUNS:-1}
mkdir -p bin chaos-results
go build -o bin/caddy ./cmd/caddy
go build -o bin/seckill-backend ./cmd/seckill-backend
go build -o bin/seckill-chaos ./cmd/seckill-chaos
pass=0
for i in $(seq "$runs"); do
	echo "== chaos run $i of $runs (nproc $(nproc), $(date -u +%FT%TZ))"
	# shellcheck disable=SC2086
	if bin/seckill-chaos -bin bin -out "chaos-results/run-$i.json" ${CHAOS_FLAGS:-}; then
		pass=$((pass + 1))
	fi
done
echo "chaos: $pass of $runs runs passed"
[ "$pass" -eq "$runs" ]
