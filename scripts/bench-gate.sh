#!/usr/bin/env bash
# Benchmark of seckill_gate against Caddy's plain `respond "ok"`, side by side in one Caddy
# process on this machine, with wrk (apt-get install -y wrk).
#
#   respond    :P_RESPOND   respond "ok"
#   pipelined  :P_PIPE      seckill_gate, redis pipelined (the default)
#   pooled     :P_POOL      seckill_gate, redis pooled
#
# Before sell-out: a sale with stock far above what a run can sell, so every request wins (a
# distinct user per request, from a wrk Lua script); the relay runs and publishes every winner
# to a RabbitMQ vhost made for the run, where the messages are left in the queue (no consumer);
# the vhost is deleted at the end. After sell-out: a sale with stock 0 (the first answer comes
# from Redis, then from the gateway's memory).
#
# ROUNDS rounds (default 3), DURATION per wrk run (default 8s), CONNS connections (500),
# THREADS wrk threads (2). RELAY=off runs the gates without a relay (the winners stay in the
# outbox, deleted at the end): the gate's own cost, without RabbitMQ competing for the CPU.
# Prints a markdown table of medians and the ratios to `respond`, then (RELAY_BENCH=0 to skip)
# the relay's own cost per outbox entry: BenchmarkRelay drains a pre-filled outbox of 20 000
# entries, corked (one write per round, the gateway's setup) and uncorked, three times each.
#
# PIN=1 runs wrk on CPU 0 and Caddy on CPU 1 (taskset; PIN_LOAD and PIN_SERVERS override the
# CPUs), so the gateway's cost is measured apart from the load; give it a private Redis on the
# server CPU (SECKILL_REDIS_ADDR) to keep Redis there too. The relay's backlog (outbox entries
# not yet published) is read right after each before-sell-out run and shown in seconds of that
# run's accepts.
set -euo pipefail
cd "$(dirname "$0")/.."
SRV=() LOADP=()
if [ -n "${PIN:-}" ]; then
	SRV=(taskset -c "${PIN_SERVERS:-1}")
	LOADP=(taskset -c "${PIN_LOAD:-0}")
fi

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8s}
CONNS=${CONNS:-500}
THREADS=${THREADS:-2}
REDIS_ADDR=${SECKILL_REDIS_ADDR:-127.0.0.1:16379}
AMQP_URL=${SECKILL_AMQP_URL:-amqp://guest:guest@127.0.0.1:16672/}
MGMT=${SECKILL_AMQP_MGMT_URL:-http://guest:guest@127.0.0.1:16673}

command -v wrk >/dev/null || { echo "bench-gate: wrk is not installed (apt-get install -y wrk)" >&2; exit 1; }
RELAY=${RELAY:-on}
relay_opt=served_only
[ "$RELAY" = off ] && relay_opt=disabled
RHOST=${REDIS_ADDR%:*}
RPORT=${REDIS_ADDR##*:}
rcli() { redis-cli -h "$RHOST" -p "$RPORT" "$@"; }
rcli ping >/dev/null || { echo "bench-gate: Redis at $REDIS_ADDR is not reachable (make stack)" >&2; exit 1; }

BIN=bin/caddy
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/caddy

work=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
P_RESPOND=$(free_port); P_PIPE=$(free_port); P_POOL=$(free_port); P_ADMIN=$(free_port)
run_id=$(date +%s)-$$
vhost="bench-gate-$run_id"
SALE_OPEN="bgopen-$run_id"
SALE_SOLD="bgsold-$run_id"

# A vhost of its own, so the relay's messages never mix with anyone else's.
mgmt_user=${MGMT#*//}; mgmt_user=${mgmt_user%@*}; mgmt_host=${MGMT##*@}
curl -sf -u "$mgmt_user" -X PUT "http://$mgmt_host/api/vhosts/$vhost" >/dev/null
curl -sf -u "$mgmt_user" -X PUT -H 'content-type: application/json' \
	-d '{"configure":".*","write":".*","read":".*"}' "http://$mgmt_host/api/permissions/$vhost/guest" >/dev/null
amqp_vhost="${AMQP_URL%/}/$vhost"

caddy_pid=
cleanup() {
	[ -n "$caddy_pid" ] && kill "$caddy_pid" 2>/dev/null && wait "$caddy_pid" 2>/dev/null || true
	curl -sf -u "$mgmt_user" -X DELETE "http://$mgmt_host/api/vhosts/$vhost" >/dev/null || true
	for s in "$SALE_OPEN" "$SALE_SOLD"; do
		rcli del "seckill:{sale:$s}:meta" "seckill:{sale:$s}:buyers" "seckill:{sale:$s}:outbox" >/dev/null || true
		rcli srem seckill:sales "$s" >/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# Sales: open for an hour; one with a stock no run can exhaust, one with none.
now_ms=$(($(date +%s) * 1000))
for pair in "$SALE_OPEN:100000000" "$SALE_SOLD:0"; do
	s=${pair%%:*}; stock=${pair##*:}
	rcli eval "$(cat lua/preheat.lua)" 1 "seckill:{sale:$s}:meta" "$s" "$stock" $((now_ms - 60000)) $((now_ms + 3600000)) init 3600000 >/dev/null
	rcli sadd seckill:sales "$s" >/dev/null
done

cat >"$work/Caddyfile" <<EOF
{
	admin 127.0.0.1:$P_ADMIN
	seckill {
		redis {
			addrs $REDIS_ADDR
		}
		amqp {
			url $amqp_vhost
		}
	}
}
http://127.0.0.1:$P_RESPOND {
	respond "ok"
}
http://127.0.0.1:$P_PIPE {
	seckill_gate {
		user {http.request.header.X-User-ID}
		redis pipelined
		relay {
			$relay_opt
		}
	}
}
http://127.0.0.1:$P_POOL {
	seckill_gate {
		user {http.request.header.X-User-ID}
		redis pooled
		relay {
			$relay_opt
		}
	}
}
EOF
"${SRV[@]}" "$BIN" run --adapter caddyfile --config "$work/Caddyfile" >"$work/caddy.log" 2>&1 &
caddy_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$P_RESPOND/" >/dev/null 2>&1 && break; sleep 0.1; done

# A distinct user per request: thread id, a per-run prefix and a counter.
cat >"$work/users.lua" <<'EOF'
local counter = 0
local threads = 0
tid = 0
function setup(thread)
	thread:set("tid", threads)
	threads = threads + 1
end
function init(args)
	prefix = args[1] or "u"
end
function request()
	counter = counter + 1
	wrk.headers["X-User-ID"] = prefix .. "-" .. tid .. "-" .. counter
	return wrk.format("POST", wrk.path)
end
EOF

# run <label> <url> [users-prefix]: prints "label rps p50_ms p99_ms non2xx"
run() {
	local label=$1 url=$2 prefix=${3:-}
	local out
	if [ -n "$prefix" ]; then
		out=$("${LOADP[@]}" wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -s "$work/users.lua" "$url" -- "$prefix" 2>&1)
	else
		out=$("${LOADP[@]}" wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -s "$work/users.lua" "$url" -- "anon" 2>&1)
	fi
	echo "$out" >>"$work/wrk.log"
	python3 - "$label" <<PY
import re, sys
out = """$out"""
def ms(v):
    m = re.match(r"([\d.]+)(us|ms|s|m)", v)
    if not m:
        return float("nan")
    n, u = m.groups()
    return float(n) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[u]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
p50 = ms(re.search(r"50%\s+(\S+)", out).group(1))
p99 = ms(re.search(r"99%\s+(\S+)", out).group(1))
m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
print(sys.argv[1], rps, p50, p99, m.group(1) if m else 0)
PY
}

results="$work/results"
: >"$results"
for r in $(seq "$ROUNDS"); do
	echo "bench-gate: round $r/$ROUNDS" >&2
	run respond "http://127.0.0.1:$P_RESPOND/" >>"$results"
	b0=$(rcli xlen "seckill:{sale:$SALE_OPEN}:outbox")
	run pipelined_before "http://127.0.0.1:$P_PIPE/seckill/$SALE_OPEN/buy" "p$r" >>"$results"
	b1=$(rcli xlen "seckill:{sale:$SALE_OPEN}:outbox")
	echo "backlog pipelined_before $b0 $b1" >>"$work/backlog"
	run pooled_before "http://127.0.0.1:$P_POOL/seckill/$SALE_OPEN/buy" "q$r" >>"$results"
	b2=$(rcli xlen "seckill:{sale:$SALE_OPEN}:outbox")
	echo "backlog pooled_before $b1 $b2" >>"$work/backlog"
	run pipelined_after "http://127.0.0.1:$P_PIPE/seckill/$SALE_SOLD/buy" "a$r" >>"$results"
	run pooled_after "http://127.0.0.1:$P_POOL/seckill/$SALE_SOLD/buy" "b$r" >>"$results"
done

backlog=$(rcli xlen "seckill:{sale:$SALE_OPEN}:outbox")
python3 - "$results" "$backlog" "$work/backlog" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, rps, p50, p99, non2xx = line.split()
    rows.setdefault(label, []).append((float(rps), float(p50), float(p99), int(non2xx)))
med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in rows.items()}
base = med["respond"][0]
names = {
    "respond": "`respond \"ok\"`",
    "pipelined_before": "gate, pipelined, before sell-out (every request wins)",
    "pooled_before": "gate, pooled, before sell-out (every request wins)",
    "pipelined_after": "gate, pipelined, after sell-out",
    "pooled_after": "gate, pooled, after sell-out",
}
print("| case | req/s (median) | p50 ms | p99 ms | ratio to respond |")
print("|---|---:|---:|---:|---:|")
for k in ["respond", "pipelined_before", "pooled_before", "pipelined_after", "pooled_after"]:
    rps, p50, p99 = med[k]
    print(f"| {names[k]} | {rps:,.0f} | {p50:.2f} | {p99:.2f} | {rps / base:.2f}x |")
print()
print("ratios per round (gate / respond of the same round):")
for k in ["pipelined_before", "pooled_before", "pipelined_after", "pooled_after"]:
    print(f"  {k}: " + ", ".join(f"{g[0] / r[0]:.2f}" for g, r in zip(rows[k], rows["respond"])))
# The relay keeps up when what is left at the end of an all-winning run is under a second of
# that run's accepts.
i = {"pipelined_before": 0, "pooled_before": 0}
for line in open(sys.argv[3]):
    _, label, before, after = line.split()
    rps = rows[label][i[label]][0]
    i[label] += 1
    print(f"  outbox backlog after {label} run {i[label]}: {int(after)} entries (was {int(before)}) = {int(after) / rps:.2f} s of accepts")
codes = {k: [x[3] for x in v] for k, v in rows.items()}
print(f"non-2xx per run: {codes}")
print(f"outbox entries still to relay at the end: {sys.argv[2]}")
PY

if [ "${RELAY_BENCH:-1}" != 0 ]; then
	echo
	echo "relay cost per outbox entry (go test -bench BenchmarkRelay -count 3 ./caddymodule/gate/):"
	go test -tags integration -run '^$' -bench BenchmarkRelay -benchtime 2x -count 3 ./caddymodule/gate/ | grep '^BenchmarkRelay' |
		awk '{for (i=1;i<=NF;i++) {if ($i=="cpu-µs/entry") c[$1]=c[$1] " " $(i-1); if ($i=="entries/s") e[$1]=e[$1] " " $(i-1)}}
			END {for (k in c) print "  " k ": cpu-µs/entry" c[k] "; entries/s" e[k]}'
fi
