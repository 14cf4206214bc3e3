#!/usr/bin/env bash
# make run: starts the backend, the sample shop and the gateway (background, logs and pids under
# .run/), creates and preheats the demo sales, and prints what to try. make stop ends it.
#
#   scripts/run.sh [start]   everything above
#   scripts/run.sh stop      stop the gateway, the shop and the backend
#   scripts/run.sh secrets   only make sure the secrets exist (prints the file holding them)
#
# Secrets: a random purchase-token key, admin token, shop token (role shop: payment
# confirmations) and webhook secret, made on the first run into .run/secrets.env (mode 600) and
# kept across runs (a file from an older run gets the missing ones added); .run/env exports
# them. Set SECKILL_TOKEN_KEY / SECKILL_ADMIN_TOKEN / SECKILL_SHOP_TOKEN /
# SECKILL_WEBHOOK_SECRETS in the environment to use your own instead.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUN="${SECKILL_RUN_DIR:-$ROOT/.run}"
cd "$ROOT"

stop_procs() {
	for name in gateway shop backend; do
		if [ -f "$RUN/$name.pid" ]; then
			kill "$(cat "$RUN/$name.pid")" 2>/dev/null || true
			rm -f "$RUN/$name.pid"
		fi
	done
}

# random_hex N: N random bytes as 2N hex digits (coreutils only).
random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

# ensure_secrets: make .run/secrets.env once, and make .run/env (which scripts/stack.sh rewrites
# on every start) export what it holds.
ensure_secrets() {
	mkdir -p "$RUN"
	local file="$RUN/secrets.env"
	if [ ! -s "$file" ]; then
		(
			umask 077
			{
				echo "# Made by scripts/run.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ); kept across runs. Delete it for new ones."
				echo "export SECKILL_TOKEN_KEY=$(random_hex 32)"
				echo "export SECKILL_ADMIN_TOKEN=$(random_hex 24)"
			} >"$file.tmp"
		)
		mv "$file.tmp" "$file"
		echo "[run] new secrets in $file" >&2
	fi
	chmod 600 "$file"
	# The sample shop's secrets (added to a file made before the shop existed): its backend token
	# of role shop, and the secret the backend signs its webhooks to the shop with.
	grep -q '^export SECKILL_SHOP_TOKEN=' "$file" || echo "export SECKILL_SHOP_TOKEN=$(random_hex 24)" >>"$file"
	grep -q '^export SECKILL_WEBHOOK_SECRETS=' "$file" || echo "export SECKILL_WEBHOOK_SECRETS=$(random_hex 32)" >>"$file"
	# Replace (not add to) what an earlier run put there: the file may have been made anew.
	touch "$RUN/env"
	{
		grep -v -e '^# secrets: ' -e '^export SECKILL_TOKEN_KEY=' -e '^export SECKILL_ADMIN_TOKEN=' \
			-e '^export SECKILL_SHOP_TOKEN=' -e '^export SECKILL_WEBHOOK_SECRETS=' "$RUN/env" || true
		echo "# secrets: $file"
		grep '^export ' "$file"
	} >"$RUN/env.tmp"
	chmod 600 "$RUN/env.tmp"
	mv "$RUN/env.tmp" "$RUN/env"
}

case "${1:-start}" in
stop) stop_procs; echo "[run] gateway, shop and backend stopped"; exit 0 ;;
secrets) ensure_secrets; echo "$RUN/secrets.env"; exit 0 ;;
start) ;;
*) echo "usage: $0 start|stop|secrets" >&2; exit 2 ;;
esac

# Your own secrets in the environment win over the generated ones.
own_key=${SECKILL_TOKEN_KEY:-} own_admin=${SECKILL_ADMIN_TOKEN:-}
own_shop=${SECKILL_SHOP_TOKEN:-} own_hooks=${SECKILL_WEBHOOK_SECRETS:-} own_tokens=${SECKILL_ADMIN_TOKENS:-}
ensure_secrets
# shellcheck disable=SC1091
source "$RUN/env"
export SECKILL_TOKEN_KEY=${own_key:-$SECKILL_TOKEN_KEY}
export SECKILL_ADMIN_TOKEN=${own_admin:-$SECKILL_ADMIN_TOKEN}
export SECKILL_SHOP_TOKEN=${own_shop:-$SECKILL_SHOP_TOKEN}
export SECKILL_WEBHOOK_SECRETS=${own_hooks:-$SECKILL_WEBHOOK_SECRETS}
# The backend's tokens: the admin (SECKILL_ADMIN_TOKEN, named admin) and the shop's, of role
# shop. Not admin:<token>:admin in here as well: the backend refuses one name given twice.
export SECKILL_ADMIN_TOKENS=${own_tokens:+$own_tokens,}shop:$SECKILL_SHOP_TOKEN:shop
export SECKILL_BACKEND=127.0.0.1:8081
# The backend's admin API has a listener of its own, on loopback; the gateway never proxies it.
export SECKILL_BACKEND_ADMIN_LISTEN=127.0.0.1:8082
ADMIN=http://$SECKILL_BACKEND_ADMIN_LISTEN
# The demo's own deployment namespace (backend and gateway): its relay leaves alone the sales
# of test runs sharing this Redis, and theirs leave the demo's alone.
export SECKILL_NAMESPACE=${SECKILL_NAMESPACE:-demo}
# The demo's shop listens on this machine: let webhooks reach 127.0.0.1 (only), which a real
# deployment refuses (docs/backend.md, "Webhooks"). Set it to "" to try the refusal; metadata
# and link-local addresses are refused whatever it lists.
export SECKILL_WEBHOOK_ALLOW_CIDRS=${SECKILL_WEBHOOK_ALLOW_CIDRS-127.0.0.1/32}
# The cockpit's accepted and refused per second come from the gateway's metrics, which Caddy
# serves on its admin endpoint (the Caddyfile's `admin`); without this it shows no refusals.
export SECKILL_GATEWAY_METRICS=${SECKILL_GATEWAY_METRICS:-http://127.0.0.1:2019/metrics}
# Each ended sale's fairness report is signed with the demo's key, whose private half is in
# the source: the report and its key set say "demo" (docs/operator.md, "The fairness report").
# Set SECKILL_REPORT_KEY to your own key's base64 seed, or to "" to publish no report.
export SECKILL_REPORT_KEY=${SECKILL_REPORT_KEY-demo}

# The sample shop (examples/shop): the gateway's :8088 site proxies to it and checks its
# sessions with the keys it publishes; the backend sends it the order webhooks, signed with the
# first of SECKILL_WEBHOOK_SECRETS, and it confirms payments with SECKILL_SHOP_TOKEN. Its
# signing key is kept in .run/shop-key.pem, so sessions survive a restart.
export SECKILL_SHOP=127.0.0.1:3000
export SECKILL_SHOP_PUBLIC_URL=${SECKILL_SHOP_PUBLIC_URL:-http://localhost:8088}
export SECKILL_WEBHOOK_URL=http://$SECKILL_SHOP/webhooks

stop_procs
nohup bin/seckill-backend >"$RUN/backend.log" 2>&1 & echo $! >"$RUN/backend.pid"
# -demo: its sign-in takes no password (it says so in .run/shop.log); it will not start without.
nohup bin/seckill-shop -demo -listen "$SECKILL_SHOP" -public-url "$SECKILL_SHOP_PUBLIC_URL" -backend-admin "$ADMIN" \
	-key-file "$RUN/shop-key.pem" -sales "${SALE:-demo},${ROOM_SALE:-demo-room}" >"$RUN/shop.log" 2>&1 & echo $! >"$RUN/shop.pid"
nohup bin/caddy run --config Caddyfile --adapter caddyfile >"$RUN/gateway.log" 2>&1 & echo $! >"$RUN/gateway.pid"

wait_http() {
	for _ in $(seq 100); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.2; done
	echo "[run] $2 did not come up; see $RUN/$2.log" >&2; tail -20 "$RUN/$2.log" >&2; exit 1
}
wait_http http://127.0.0.1:8081/healthz backend
wait_http http://127.0.0.1:8080/healthz gateway
wait_http "http://$SECKILL_SHOP/healthz" shop
wait_http http://127.0.0.1:8088/healthz gateway
# The admin listener answers every request (401 without the token) once it is up. A backend
# built before it had a listener of its own serves the admin API on the order port.
admin_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/admin/sales" 2>/dev/null || true)" != 000 ]; }
for _ in $(seq 50); do admin_up "$ADMIN" && break; sleep 0.2; done
if ! admin_up "$ADMIN"; then ADMIN=http://$SECKILL_BACKEND; fi

SALE=${SALE:-demo}
auth=(-H "Authorization: Bearer $SECKILL_ADMIN_TOKEN")
starts=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
ends=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
curl -fsS "${auth[@]}" -X POST "$ADMIN/admin/sales" \
	-d "{\"id\":\"$SALE\",\"stock\":100,\"starts_at\":\"$starts\",\"ends_at\":\"$ends\",\"pay_within\":\"15m\"}" >/dev/null 2>&1 ||
	echo "[run] sale $SALE exists already; preheating it again"
curl -fsS "${auth[@]}" -X POST "$ADMIN/admin/sales/$SALE/preheat" >/dev/null

# A second sale behind a waiting room (docs/room.md): proof of work on, its pre-queue open for
# 15 minutes before the start, which is 5 minutes from now. seckill_token's require_admission
# gives its tokens only to users the room admitted.
ROOM_SALE=${ROOM_SALE:-demo-room}
room_starts=$(date -u -d '+5 minutes' +%Y-%m-%dT%H:%M:%SZ)
curl -fsS "${auth[@]}" -X POST "$ADMIN/admin/sales" \
	-d "{\"id\":\"$ROOM_SALE\",\"stock\":50,\"starts_at\":\"$room_starts\",\"ends_at\":\"$ends\",\"pay_within\":\"15m\",\"room\":{\"rate\":5,\"oversubscribe\":1.5,\"session\":\"2m\",\"prequeue\":\"15m\",\"difficulty\":[12,16]}}" >/dev/null 2>&1 ||
	echo "[run] sale $ROOM_SALE exists already; preheating it again (its room keeps its seed)"
curl -fsS "${auth[@]}" -X POST "$ADMIN/admin/sales/$ROOM_SALE/preheat" >/dev/null

# A third sale in draw mode (docs/draw.md): four sizes of 3 units, entries open now and close
# 10 minutes after the first run; the backend draws at the close by itself (or now:
# seckillctl draw run demo-draw), winners buy their size within 5 minutes, and units nobody
# claimed go to the next ranks in a new wave.
DRAW_SALE=${DRAW_SALE:-demo-draw}
draw_opens=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
draw_closes=$(date -u -d '+10 minutes' +%Y-%m-%dT%H:%M:%SZ)
curl -fsS "${auth[@]}" -X POST "$ADMIN/admin/sales" \
	-d "{\"id\":\"$DRAW_SALE\",\"variants\":[{\"id\":\"s38\",\"stock\":3},{\"id\":\"s40\",\"stock\":3},{\"id\":\"s42\",\"stock\":3},{\"id\":\"s44\",\"stock\":3}],\"starts_at\":\"$draw_closes\",\"ends_at\":\"$ends\",\"pay_within\":\"15m\",\"draw\":{\"opens_at\":\"$draw_opens\",\"closes_at\":\"$draw_closes\",\"claim_within\":\"5m\",\"difficulty\":[0,0]}}" >/dev/null 2>&1 ||
	echo "[run] sale $DRAW_SALE exists already; preheating it again (its draw keeps its seed)"
curl -fsS "${auth[@]}" -X POST "$ADMIN/admin/sales/$DRAW_SALE/preheat" >/dev/null

cat <<EOF

The flash-sale edge is running.
  shop      http://localhost:8088/  THE SAMPLE SHOP THROUGH THE GATEWAY (production shape): open it
            in a browser and sign in (any user name: a demo). Shop pages, the waiting room and the
            purchase are one origin; the gateway knows you by the shop's signed session cookie.
            The shop itself: http://$SECKILL_SHOP (logs .run/shop.log; webhooks it received:
            curl -H "Authorization: Bearer \$SECKILL_SHOP_TOKEN" http://$SECKILL_SHOP/webhooks)
  gateway   http://127.0.0.1:8080   header identity (X-User-ID) for scripts and benchmarks
            (logs .run/gateway.log; metrics http://127.0.0.1:2019/metrics)
  backend   http://127.0.0.1:8081   order API (logs .run/backend.log)
            $ADMIN   admin API, loopback only
  cockpit   $ADMIN/admin/ui   the live page of every sale (sign in with the admin token)
  sale      "$SALE": 100 units, open now for two hours
  room sale "$ROOM_SALE": 50 units behind a waiting room (proof of work), starts 5 minutes after
            the first run; its pre-queue is open now. Waiting page (a browser; the demo
            identity is ?user=<id>, sent as X-User-ID):
            http://127.0.0.1:8080/seckill/$ROOM_SALE/queue?user=alice
  draw sale "$DRAW_SALE": four sizes (s38 s40 s42 s44) of 3 units, drawn at the close, 10 minutes
            after the first run. Entry page: http://127.0.0.1:8080/seckill/$DRAW_SALE/draw?user=alice
  secrets   $RUN/secrets.env (made once, kept across runs; .run/env exports them)
    admin token   $SECKILL_ADMIN_TOKEN
    token key     $SECKILL_TOKEN_KEY
    shop token    $SECKILL_SHOP_TOKEN   (role shop: payment confirmations)
    webhook secret in SECKILL_WEBHOOK_SECRETS (the backend signs, the shop checks)

The :8080 site believes the X-User-ID header (demo, scripts). :8088 is the production shape
with a shop that signs its sessions (JWT), as deploy/Caddyfile.production is for your shop;
deploy/Caddyfile.production-session is for a shop with an opaque session service (README.md,
"Production").

Try it with curl on :8080:
  # 1. get a one-time purchase token
  TOKEN=\$(curl -s -X POST -H 'X-User-ID: alice' http://127.0.0.1:8080/seckill/$SALE/token | sed 's/.*"token":"\([^"]*\)".*/\1/')
  # 2. buy with it: 202 and an order id
  curl -s -X POST -H 'X-User-ID: alice' -H "X-Seckill-Token: \$TOKEN" http://127.0.0.1:8080/seckill/$SALE/buy
  # 3. poll the order (queued, then created)
  curl -s -H 'X-User-ID: alice' http://127.0.0.1:8080/orders/ORDER_ID
  # 4. the sale as the backend sees it
  curl -s -H 'Authorization: Bearer $SECKILL_ADMIN_TOKEN' $ADMIN/admin/sales/$SALE
  # 5. the room sale: its seed commitment, then the waiting room's state
  curl -s http://127.0.0.1:8080/seckill/$ROOM_SALE/room
  # a token without an admission is refused (403 not_admitted)
  curl -s -X POST -H 'X-User-ID: alice' http://127.0.0.1:8080/seckill/$ROOM_SALE/token
  # 6. the draw sale: enter (size s40), see your entry, run the draw now, check it
  curl -s -X POST -H 'X-User-ID: alice' -d '{"variant":"s40"}' http://127.0.0.1:8080/seckill/$DRAW_SALE/draw
  curl -s -H 'X-User-ID: alice' http://127.0.0.1:8080/seckill/$DRAW_SALE/draw
  SECKILL_ADMIN_URL=$ADMIN SECKILL_ADMIN_TOKEN=$SECKILL_ADMIN_TOKEN bin/seckillctl draw run $DRAW_SALE
  bin/seckill-bench verify-draw -url http://127.0.0.1:8080 -sale $DRAW_SALE -proof-user alice
  # a whole crowd, with every invariant checked afterwards
  bin/seckill-bench -only edge -users 2000 -stock 100 -conns 64 -gateway http://127.0.0.1:8080 -backend $ADMIN -admin-token $SECKILL_ADMIN_TOKEN

Stop everything with: make stop
EOF
