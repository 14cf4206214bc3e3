#!/usr/bin/env bash
# make run: starts the backend and the gateway (background, logs and pids under .run/),
# creates and preheats a demo sale, and prints what to try. make stop ends it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUN="$ROOT/.run"
cd "$ROOT"

stop_procs() {
	for name in gateway backend; do
		if [ -f "$RUN/$name.pid" ]; then
			kill "$(cat "$RUN/$name.pid")" 2>/dev/null || true
			rm -f "$RUN/$name.pid"
		fi
	done
}

if [ "${1:-start}" = stop ]; then stop_procs; echo "[run] gateway and backend stopped"; exit 0; fi

# shellcheck disable=SC1091
source "$RUN/env"
# Demo defaults, clearly not secrets: override them in the environment for anything real.
export SECKILL_ADMIN_TOKEN=${SECKILL_ADMIN_TOKEN:-demo-admin-token}
export SECKILL_TOKEN_KEY=${SECKILL_TOKEN_KEY:-demo-token-key-change-me-0123456789}
export SECKILL_BACKEND=127.0.0.1:8081
export SECKILL_BASELINES=1
# The demo's own deployment namespace (backend and gateway): its relay leaves alone the sales
# of test runs sharing this Redis, and theirs leave the demo's alone.
export SECKILL_NAMESPACE=${SECKILL_NAMESPACE:-demo}

stop_procs
nohup bin/seckill-backend >"$RUN/backend.log" 2>&1 & echo $! >"$RUN/backend.pid"
nohup bin/caddy run --config Caddyfile --adapter caddyfile >"$RUN/gateway.log" 2>&1 & echo $! >"$RUN/gateway.pid"

wait_http() {
	for _ in $(seq 100); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.2; done
	echo "[run] $2 did not come up; see $RUN/$2.log" >&2; tail -20 "$RUN/$2.log" >&2; exit 1
}
wait_http http://127.0.0.1:8081/healthz backend
wait_http http://127.0.0.1:8080/healthz gateway

SALE=${SALE:-demo}
auth=(-H "Authorization: Bearer $SECKILL_ADMIN_TOKEN")
starts=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
ends=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
curl -fsS "${auth[@]}" -X POST http://127.0.0.1:8081/admin/sales \
	-d "{\"id\":\"$SALE\",\"stock\":100,\"starts_at\":\"$starts\",\"ends_at\":\"$ends\",\"pay_within\":\"15m\"}" >/dev/null 2>&1 ||
	echo "[run] sale $SALE exists already; preheating it again"
curl -fsS "${auth[@]}" -X POST "http://127.0.0.1:8081/admin/sales/$SALE/preheat" >/dev/null

cat <<EOF

The flash-sale edge is running.
  gateway   http://127.0.0.1:8080   (logs .run/gateway.log; metrics http://127.0.0.1:2019/metrics)
  backend   http://127.0.0.1:8081   (logs .run/backend.log)
  sale      "$SALE": 100 units, open now for two hours
  admin token (demo value): $SECKILL_ADMIN_TOKEN

Try it:
  # 1. get a one-time purchase token
  TOKEN=\$(curl -s -X POST -H 'X-User-ID: alice' http://127.0.0.1:8080/seckill/$SALE/token | sed 's/.*"token":"\([^"]*\)".*/\1/')
  # 2. buy with it: 202 and an order id
  curl -s -X POST -H 'X-User-ID: alice' -H "X-Seckill-Token: \$TOKEN" http://127.0.0.1:8080/seckill/$SALE/buy
  # 3. poll the order (queued, then created)
  curl -s -H 'X-User-ID: alice' http://127.0.0.1:8080/orders/ORDER_ID
  # 4. the sale as the backend sees it
  curl -s -H 'Authorization: Bearer $SECKILL_ADMIN_TOKEN' http://127.0.0.1:8081/admin/sales/$SALE
  # a whole crowd, with every invariant checked afterwards
  bin/seckill-bench -only edge -users 2000 -stock 100 -conns 64 -gateway http://127.0.0.1:8080 -backend http://127.0.0.1:8081

Stop everything with: make stop
EOF
