#!/usr/bin/env bash
# The purchase's script inside Redis against the peer's, side by side: the combined zones-and-gate
# scripts the gateway runs for a purchase with two throttle zones (lua/throttled.go; an accepted
# purchase of a new buyer, both zones admitting): "common", gate_common.lua's, which a common
# sale's purchase runs, and "combined", gate.lua's, which every other sale's runs; and the
# nginx + Lua peer's purchase script (bench/nginxgate/peer_gate.lua), on one private
# redis-server, ROUNDS rounds, alternating.
# The cost is Redis's own INFO commandstats usec_per_call of EVALSHA; the commands each script
# ran are listed beside it.
#
#   scripts/bench-combined.sh                 # N=30000 calls a case, 8 clients, pipelines of 16
#   PIN=1 scripts/bench-combined.sh           # redis-server on CPU 1, redis-benchmark on CPU 0
#   EXTRA=old.lua scripts/bench-combined.sh   # a third script with the combined one's arguments
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-30000}
ROUNDS=${ROUNDS:-3}
command -v redis-server >/dev/null || apt-get install -y -q redis-server >/dev/null
srv=() cli_pin=()
if [ "${PIN:-0}" = 1 ]; then srv=(taskset -c 1) cli_pin=(taskset -c 0); fi
TMP=$(mktemp -d)
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"${srv[@]}" redis-server --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no --dir "$TMP" --logfile "$TMP/redis.log" --daemonize yes
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
cli() { redis-cli -p "$PORT" "$@"; }
go run scripts/lua-source.go throttled:gate >"$TMP/combined.lua"
go run scripts/lua-source.go throttled:gate_common >"$TMP/common.lua"
COMBINED=$(cli script load "$(cat "$TMP/combined.lua")")
COMMON=$(cli script load "$(cat "$TMP/common.lua")")
PEER=$(cli script load "$(cat bench/nginxgate/peer_gate.lua)")
EXTRA_SHA=
if [ -n "${EXTRA:-}" ]; then EXTRA_SHA=$(cli script load "$(cat "$EXTRA")"); fi
now_ms=$(($(date +%s) * 1000))
sale() { # a sale with endless stock, open for a day
	cli hset "seckill:{sale:$1}:meta" stock 1000000000 starts_ms 0 ends_ms $((now_ms + 86400000)) state open >/dev/null
	cli pexpireat "seckill:{sale:$1}:meta" $((now_ms + 86400000)) >/dev/null
	cli xgroup create "seckill:{sale:$1}:outbox" relay '$' MKSTREAM >/dev/null
}
keys() { local s=$1; echo "seckill:{sale:$s}:meta seckill:{sale:$s}:buyers seckill:{sale:$s}:tokens seckill:{sale:$s}:outbox seckill:{sale:$s}:held seckill:{sale:$s}:room seckill:{sale:$s}:room:live seckill:{sale:$s}:draw:entries"; }
# Two zones (ip, user): limit 100 per 10 s, compact logs; random keys, so every call is admitted.
ZONES="seckill:rl:{ip:__rand_int__} seckill:rl:{ip:__rand_int__}:ban seckill:rl:{user:__rand_int__} seckill:rl:{user:__rand_int__}:ban"
ZARGS="100 10000000 0 1 0 5 1000000 5 600000 300000000 2 01"
measure() {
	local name=$1
	shift
	cli config resetstat >/dev/null
	"${cli_pin[@]}" redis-benchmark -p "$PORT" -n "$N" -c 8 -P 16 -r 100000000 -q "$@" >/dev/null 2>&1
	local usec inner
	usec=$(cli info commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
	inner=$(cli info commandstats | tr -d '\r' | grep '^cmdstat_' | grep -v 'cmdstat_evalsha:\|cmdstat_config\|cmdstat_info' |
		sed 's/^cmdstat_\([a-z|]*\):calls=\([0-9]*\).*/\1=\2/' | tr '\n' ' ')
	printf '  %-9s %7s µs a call | %s\n' "$name" "$usec" "$inner"
}
for r in $(seq "$ROUNDS"); do
	echo "round $r (load average $(cut -d' ' -f1 /proc/loadavg))"
	sale "m$r"
	# shellcheck disable=SC2046
	measure common evalsha "$COMMON" 8 $(keys "m$r" | cut -d' ' -f1-4) $ZONES "m$r" u__rand_int__ o__rand_int__ "" "" $ZARGS
	sale "c$r"
	# shellcheck disable=SC2046
	measure combined evalsha "$COMBINED" 12 $(keys "c$r") $ZONES "c$r" u__rand_int__ o__rand_int__ "" relay "" "" "" 1 $ZARGS
	cli set "peer:{p$r}:stock" 1000000000 >/dev/null
	measure peer evalsha "$PEER" 3 "peer:{p$r}:stock" "peer:{p$r}:buyers" "peer:{p$r}:outbox" u__rand_int__ o__rand_int__
	if [ -n "$EXTRA_SHA" ]; then
		sale "x$r"
		# shellcheck disable=SC2046
		measure extra evalsha "$EXTRA_SHA" 12 $(keys "x$r") $ZONES "x$r" u__rand_int__ o__rand_int__ "" relay "" "" "" 1 $ZARGS
	fi
	echo "  accepted: common $(cli hlen "seckill:{sale:m$r}:buyers"), combined $(cli hlen "seckill:{sale:c$r}:buyers"), peer $(cli hlen "peer:{p$r}:buyers") of $N calls each"
done
