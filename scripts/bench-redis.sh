#!/usr/bin/env bash
# What one Redis core can do for us: the server-side cost of each of our hot-path scripts, measured
# with redis-benchmark against a private redis-server (make bench calls it through
# scripts/bench.sh). Feeds the capacity figures of docs/scaling.md.
#
#   scripts/bench-redis.sh            # N=200000 calls per script, pipelines of 32
#
# For each script: Redis's own accounting (INFO commandstats usec_per_call: time inside the
# server per call, independent of the client) and what that means for one core (1e6 / usec);
# plus the calls/s redis-benchmark saw, which on this 2-core machine is bounded by the client
# sharing the cores. Cases:
#   gate accept     : every call a new buyer of a sale with endless stock (the write path:
#                     HINCRBY, HSET, XADD, ...)
#   gate variants   : the same on a sale with 8 variants and a limit of 1 (a size drop: the
#                     variant's field and the outbox's v; no held hash), and on one with a
#                     limit of 2, buying 1 unit and 2 (plus the held hash, the outbox's q)
#   gate sold out   : every call refused by stock 0 (after sell-out the gateways answer from
#                     memory; this is the cost for the few racing the flag)
#   throttle new key: the sliding-log script on keys seen for the first time (admitted)
#   throttle repeat : one key per 100 calls, limit 5/s (mostly refused in Redis)
#   token issue     : a purchase token for a new user
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200000}
P=${P:-32}
command -v redis-server >/dev/null || apt-get install -y -q redis-server >/dev/null
TMP=$(mktemp -d)
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no --dir "$TMP" --logfile "$TMP/redis.log" --daemonize yes
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
cli() { redis-cli -p "$PORT" "$@"; }

load() { cli script load "$(cat "lua/$1.lua")"; }
GATE=$(load gate)
THROTTLE=$(load throttle)
TOKEN=$(load token_issue)
now_ms=$(($(date +%s) * 1000))
cli hset 'seckill:{sale:open}:meta' stock 1000000000 starts_ms 0 ends_ms $((now_ms + 86400000)) state open >/dev/null
cli hset 'seckill:{sale:gone}:meta' stock 0 starts_ms 0 ends_ms $((now_ms + 86400000)) state open >/dev/null
# A sale with 8 variants (sizes 36-43) and a per-user limit of 2 (docs/gate.md, "Variants").
cli hset 'seckill:{sale:var}:meta' stock 8000000000 starts_ms 0 ends_ms $((now_ms + 86400000)) state open \
	limit 2 variants 8 v:size-36 1000000000 v:size-37 1000000000 v:size-38 1000000000 v:size-39 1000000000 \
	v:size-40 1000000000 v:size-41 1000000000 v:size-42 1000000000 v:size-43 1000000000 >/dev/null
cli hset 'seckill:{sale:sizes}:meta' stock 8000000000 starts_ms 0 ends_ms $((now_ms + 86400000)) state open \
	variants 8 v:size-36 1000000000 v:size-37 1000000000 v:size-38 1000000000 v:size-39 1000000000 \
	v:size-40 1000000000 v:size-41 1000000000 v:size-42 1000000000 v:size-43 1000000000 >/dev/null

# measure NAME ARGS... : one redis-benchmark run of one command; prints a table row
measure() {
	local name=$1
	shift
	cli config resetstat >/dev/null
	local out rps us
	out=$(redis-benchmark -p "$PORT" -n "$N" -c 16 -P "$P" -r 100000000 -q "$@" 2>&1 | tr '\r' '\n' | grep 'requests per second' | tail -1 || true)
	rps=$(echo "$out" | awk -F': ' '{print $2}' | awk '{printf "%d", $1}')
	us=$(cli info commandstats | tr -d '\r' | awk -F'usec_per_call=' '/^cmdstat_evalsha:/ {split($2, a, ","); print a[1]}')
	fails=$(cli info commandstats | tr -d '\r' | awk -F'failed_calls=' '/^cmdstat_evalsha:/ {print $2+0}')
	if [ -z "$us" ] || [ "${fails:-0}" -gt 0 ]; then
		echo "| $name | n/a (script failed: ${fails:-?} errors) | | |"
		return
	fi
	echo "| $name | $us | $(awk -v u="$us" 'BEGIN {printf "%d", 1e6 / u}') | ${rps:-n/a} |"
}

cat <<EOF

Machine: $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GB RAM; $(redis-server --version | awk '{print $3}'); $(date -u +%Y-%m-%dT%H:%MZ)
Command: scripts/bench-redis.sh (redis-benchmark -n $N -c 16 -P $P on 127.0.0.1, private redis-server)

| script (case) | µs inside Redis per call | calls/s one Redis core can serve | calls/s measured (client on the same cores) |
|---|---:|---:|---:|
EOF
measure "gate: accept (new buyer)" evalsha "$GATE" 4 'seckill:{sale:open}:meta' 'seckill:{sale:open}:buyers' 'seckill:{sale:open}:tokens' 'seckill:{sale:open}:outbox' open u__rand_int__ o__rand_int__ "" relay
SIZES=('seckill:{sale:sizes}:meta' 'seckill:{sale:sizes}:buyers' 'seckill:{sale:sizes}:tokens' 'seckill:{sale:sizes}:outbox' 'seckill:{sale:sizes}:held')
measure "gate: accept, sale with 8 variants, limit 1 (new buyer)" evalsha "$GATE" 5 "${SIZES[@]}" sizes u__rand_int__ o__rand_int__ "" relay "" size-40 ""
VAR=('seckill:{sale:var}:meta' 'seckill:{sale:var}:buyers' 'seckill:{sale:var}:tokens' 'seckill:{sale:var}:outbox' 'seckill:{sale:var}:held')
measure "gate: accept, sale with 8 variants, limit 2 (new buyer, 1 unit)" evalsha "$GATE" 5 "${VAR[@]}" var u__rand_int__ o__rand_int__ "" relay "" size-40 1
measure "gate: accept, sale with 8 variants, limit 2 (new buyer, 2 units)" evalsha "$GATE" 5 "${VAR[@]}" var v__rand_int__ o__rand_int__ "" relay "" size-41 2
measure "gate: sold out" evalsha "$GATE" 4 'seckill:{sale:gone}:meta' 'seckill:{sale:gone}:buyers' 'seckill:{sale:gone}:tokens' 'seckill:{sale:gone}:outbox' gone u__rand_int__ o__rand_int__ "" relay
measure "throttle: new key (admitted)" evalsha "$THROTTLE" 2 'seckill:rl:{user:__rand_int__}' 'seckill:rl:{user:__rand_int__}:ban' 5 1000000 0 1 0
N=$((N / 2)) measure "throttle: hot key, limit 5/s (refused)" evalsha "$THROTTLE" 2 'seckill:rl:{user:hot}' 'seckill:rl:{user:hot}:ban' 5 1000000 0 1 0
measure "token issue (new user)" evalsha "$TOKEN" 2 'seckill:{sale:open}:meta' 'seckill:{sale:open}:tokens' u__rand_int__ abcdefghijklmnopqrstuv 120000 300000
# The gate cases must have taken the paths they are named after.
echo
echo "Check: gate accept recorded $(cli hlen 'seckill:{sale:open}:buyers') buyers and $(cli xlen 'seckill:{sale:open}:outbox') outbox entries for $N calls; the sold-out sale has $(cli hlen 'seckill:{sale:gone}:buyers') buyers."
