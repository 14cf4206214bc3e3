#!/usr/bin/env bash
# Two Caddy builds side by side in one run: the same gate and throttle routes on each, served
# at the same time, measured in interleaved wrk runs (A, B, A, B, ...) so a noisy machine hits
# both alike. For each case and build: the median requests/s and the median CPU time of the
# Caddy process per request (utime + stime from /proc, over the run), then the ratios B/A.
#
#   scripts/compare-caddy.sh OLD_CADDY NEW_CADDY [OLD_SOURCE_TREE]
#
# OLD_SOURCE_TREE (default: this tree) gives the old build's lua/preheat.lua, so each build's
# sales are written the way its own scripts expect. Cases:
#   gate_before   seckill_gate, a sale no run can sell out: every request wins (a distinct user
#                 per request); the relay is disabled (the gate's own cost, no RabbitMQ)
#   gate_after    seckill_gate, a sale with stock 0, a distinct user per request
#   gate_retry    seckill_gate, the same sold-out sale, 1 000 users clicking again and again
#                 (late clicks of the same people and bots)
#   throttle_users  seckill_throttle, one zone keyed on 100 000-ish distinct users, 5 per 1s
#                 (nearly every request is a Redis decision)
#   throttle_flood  seckill_throttle, every request from one client, 100 per 10s (nearly all
#                 refused by the local tier)
# ROUNDS (3), DURATION (5s), CONNS (200), THREADS (2), CASES (all five, space-separated). Needs wrk, redis-cli, the stack's Redis
# and RabbitMQ (SECKILL_REDIS_ADDR, SECKILL_AMQP_URL; .run/env).
set -euo pipefail
OLD=$1 NEW=$2
OLD_SRC=${3:-.}
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-200}
THREADS=${THREADS:-2}
REDIS_ADDR=${SECKILL_REDIS_ADDR:-127.0.0.1:16379}
AMQP_URL=${SECKILL_AMQP_URL:-amqp://guest:guest@127.0.0.1:16672/}
RHOST=${REDIS_ADDR%:*} RPORT=${REDIS_ADDR##*:}
rcli() { redis-cli -h "$RHOST" -p "$RPORT" "$@"; }
command -v wrk >/dev/null || { echo "compare-caddy: wrk is not installed" >&2; exit 1; }
rcli ping >/dev/null

work=$(mktemp -d)
pids=()
sales=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for s in "${sales[@]}"; do
		rcli del "seckill:{sale:$s}:meta" "seckill:{sale:$s}:buyers" "seckill:{sale:$s}:outbox" >/dev/null || true
		rcli srem seckill:sales "$s" >/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

run_id=$(date +%s)-$$
now_ms=$(($(date +%s) * 1000))
# start NAME BIN SRC: preheats NAME's sales, writes its Caddyfile, runs it; sets port_NAME, pid_NAME
start() {
	local name=$1 bin=$2 src=$3 port admin
	port=$(free_port) admin=$(free_port)
	for pair in "open:100000000" "sold:0"; do
		local s="cmp-$name-${pair%%:*}-$run_id"
		rcli eval "$(cat "$src/lua/preheat.lua")" 1 "seckill:{sale:$s}:meta" "$s" "${pair##*:}" \
			$((now_ms - 60000)) $((now_ms + 3600000)) init 3600000 >/dev/null
		sales+=("$s")
	done
	cat >"$work/$name.Caddyfile" <<-EOF
		{
			admin 127.0.0.1:$admin
			seckill {
				redis {
					addrs $REDIS_ADDR
				}
				amqp {
					url $AMQP_URL
				}
			}
		}
		http://127.0.0.1:$port {
			route /seckill/* {
				seckill_gate {
					user {http.request.header.X-User-ID}
					relay {
						disabled
					}
				}
			}
			route /users {
				seckill_throttle {
					zone cmp_users_$name {http.request.header.X-User-ID} 5 1s
					timeout 1s
				}
				respond "ok"
			}
			route /flood {
				seckill_throttle {
					zone cmp_flood_$name {client_ip} 100 10s
				}
				respond "ok"
			}
		}
	EOF
	"$bin" run --adapter caddyfile --config "$work/$name.Caddyfile" >"$work/$name.log" 2>&1 &
	local pid=$!
	pids+=("$pid")
	for _ in $(seq 200); do curl -s "http://127.0.0.1:$port/flood" >/dev/null 2>&1 && break; sleep 0.1; done
	eval "port_$name=$port pid_$name=$pid"
}
start old "$OLD" "$OLD_SRC"
start new "$NEW" .

cat >"$work/users.lua" <<'EOF'
counter = 0
local threads = 0
tid = 0
function setup(thread)
	thread:set("tid", threads)
	threads = threads + 1
end
function init(args)
	prefix = args[1] or "u"
	wrap = tonumber(args[2] or "0")
end
function request()
	counter = counter + 1
	if wrap > 0 and counter > wrap then
		counter = 1
	end
	wrk.headers["X-User-ID"] = prefix .. "-" .. tid .. "-" .. counter
	return wrk.format("POST", wrk.path)
end
EOF

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# measure NAME CASE URL PREFIX: one wrk run; appends "case name rps requests cpu_ticks non2xx"
measure() {
	local name=$1 case=$2 url=$3 prefix=$4 pid before after out wrap=0
	eval "pid=\$pid_$name"
	# gate_retry: each of the 2 threads cycles over 500 users, the same in every run of a build
	[ "$case" = gate_retry ] && { wrap=500; prefix=$name; }
	before=$(cpu_ticks "$pid")
	out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" -s "$work/users.lua" "$url" -- "$prefix" "$wrap" 2>&1)
	after=$(cpu_ticks "$pid")
	local rps reqs non2xx
	rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
	reqs=$(echo "$out" | awk '/requests in/ {print $1}')
	non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
	echo "$case $name $rps $reqs $((after - before)) ${non2xx:-0}" >>"$work/results"
}
url() { # url NAME CASE
	local name=$1 port
	eval "port=\$port_$name"
	case $2 in
	gate_before) echo "http://127.0.0.1:$port/seckill/cmp-$name-open-$run_id/buy" ;;
	gate_after | gate_retry) echo "http://127.0.0.1:$port/seckill/cmp-$name-sold-$run_id/buy" ;;
	throttle_users) echo "http://127.0.0.1:$port/users" ;;
	throttle_flood) echo "http://127.0.0.1:$port/flood" ;;
	esac
}
: >"$work/results"
for r in $(seq "$ROUNDS"); do
	echo "compare-caddy: round $r/$ROUNDS" >&2
	for c in ${CASES:-gate_before gate_after gate_retry throttle_users throttle_flood}; do
		# Alternate which build goes first, so neither always runs on a warmer machine.
		if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
		for n in $order; do measure "$n" "$c" "$(url "$n" "$c")" "$n$r$c"; done
	done
done

python3 - "$work/results" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
hz = int(sys.argv[2])
rows = {}
for line in open(sys.argv[1]):
    case, name, rps, reqs, ticks, non2xx = line.split()
    cpu_us = int(ticks) * 1e6 / hz / max(int(reqs), 1)
    rows.setdefault((case, name), []).append((float(rps), cpu_us, int(non2xx), int(reqs)))
print("| case | old req/s | new req/s | new/old req/s | old CPU-µs/req | new CPU-µs/req | new/old CPU/req |")
print("|---|---:|---:|---:|---:|---:|---:|")
for case in ["gate_before", "gate_after", "gate_retry", "throttle_users", "throttle_flood"]:
    if (case, "old") not in rows:
        continue
    o, n = rows[(case, "old")], rows[(case, "new")]
    orps, nrps = statistics.median(x[0] for x in o), statistics.median(x[0] for x in n)
    ocpu, ncpu = statistics.median(x[1] for x in o), statistics.median(x[1] for x in n)
    print(f"| {case} | {orps:,.0f} | {nrps:,.0f} | {nrps / orps:.2f} | {ocpu:.1f} | {ncpu:.1f} | {ncpu / ocpu:.2f} |")
print()
print("per run (req/s, CPU-µs/req, non-2xx):")
for (case, name), v in sorted(rows.items()):
    print(f"  {case} {name}: " + "; ".join(f"{x[0]:,.0f} {x[1]:.1f} {x[2]}" for x in v))
PY
