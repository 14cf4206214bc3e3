#!/usr/bin/env bash
# What one request's throttle costs inside Redis: lua/throttle.lua of BASE (default main: the
# sorted-set log, one script call per zone) against the working tree's (the compact log for
# limits up to 128, every zone of a request in one call), on a private redis-server, rounds
# alternating. redis-benchmark sends the calls (-c 16 -P 32); the figures are Redis's own
# accounting: usec_per_call of EVALSHA (INFO commandstats) and Redis's CPU time (INFO cpu,
# user + sys, which adds the protocol and networking work) per decision.
#
#   scripts/bench-throttle-lua.sh          # ROUNDS=3 N=100000 BASE=main
#
# Cases, as the default Caddyfile's zones see a purchase (docs/throttle.md):
#   user   : new user key each call, limit 5 / 1 s, ban after 5 (the user zone)
#   ip     : 10 000 keys, limit 100 / 10 s (the IP zone: a log of a few entries per key)
#   buy    : the three zones of one purchase (ip, device 20 / 1 s, user): BASE sends three
#            calls, the working tree one call with three zones; the cost is per purchase.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
N=${N:-100000}
BASE=${BASE:-main}
command -v redis-server >/dev/null || apt-get install -y -q redis-server >/dev/null
TMP=$(mktemp -d)
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no --dir "$TMP" --logfile "$TMP/redis.log" --daemonize yes
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
cli() { redis-cli -p "$PORT" "$@"; }
OLD=$(cli script load "$(git show "$BASE":lua/throttle.lua)")
NEW=$(cli script load "$(cat lua/throttle.lua)")

cpu_us() { cli info cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.0f", s * 1e6}'; }
# run N ARGS... : prints "usec_per_call cpu_us_per_call" of one redis-benchmark run
run() {
	local n=$1
	shift
	cli config resetstat >/dev/null
	local c0 c1
	c0=$(cpu_us)
	redis-benchmark -p "$PORT" -n "$n" -c 16 -P 32 -r 100000000 -q "$@" >/dev/null 2>&1
	c1=$(cpu_us)
	local st
	st=$(cli info commandstats | tr -d '\r' | grep '^cmdstat_evalsha:')
	if echo "$st" | grep -q 'failed_calls=[1-9]'; then echo "script failed: $st" >&2; exit 1; fi
	echo "$st" | awk -F'usec_per_call=' -v c=$((c1 - c0)) -v n="$n" '{split($2, a, ","); printf "%s %.2f\n", a[1], c / n}'
}
user() { echo evalsha "$1" 2 'seckill:rl:{'"$2"'user:__rand_int__}' 'seckill:rl:{'"$2"'user:__rand_int__}:ban' 5 1000000 5 600000 300000000; }
ip() { echo evalsha "$1" 2 'seckill:rl:{'"$2"'ip:__rand_int__}' 'seckill:rl:{'"$2"'ip:__rand_int__}:ban' 100 10000000 0 1 0; }
dev() { echo evalsha "$1" 2 'seckill:rl:{'"$2"'dev:__rand_int__}' 'seckill:rl:{'"$2"'dev:__rand_int__}:ban' 20 1000000 0 1 0; }
buy() {
	echo evalsha "$1" 6 'seckill:rl:{'"$2"'ip:__rand_int__}' 'seckill:rl:{'"$2"'ip:__rand_int__}:ban' \
		'seckill:rl:{'"$2"'dev:__rand_int__}' 'seckill:rl:{'"$2"'dev:__rand_int__}:ban' \
		'seckill:rl:{'"$2"'user:__rand_int__}' 'seckill:rl:{'"$2"'user:__rand_int__}:ban' \
		100 10000000 0 1 0 20 1000000 0 1 0 5 1000000 5 600000 300000000
}
declare -A R
for round in $(seq "$ROUNDS"); do
	echo "bench-throttle-lua: round $round/$ROUNDS" >&2
	for side in old new; do
		sha=$OLD
		[ $side = new ] && sha=$NEW
		p="$side$round"
		R[$side-user]+="$(run "$N" $(user "$sha" "$p"));"
		# The ip case reuses 10 000 keys: -r 10000 on its own run.
		cli config resetstat >/dev/null
		R[$side-ip]+="$(N=$N; c0=$(cpu_us); redis-benchmark -p "$PORT" -n "$N" -c 16 -P 32 -r 10000 -q $(ip "$sha" "$p") >/dev/null 2>&1; c1=$(cpu_us)
			cli info commandstats | tr -d '\r' | grep '^cmdstat_evalsha:' | awk -F'usec_per_call=' -v c=$((c1 - c0)) -v n="$N" '{split($2, a, ","); printf "%s %.2f\n", a[1], c / n}');"
		if [ $side = old ]; then
			# Three calls per purchase: the sum of the three zones' costs.
			a=$(run "$N" $(ip "$sha" "b$p")) b=$(run "$N" $(dev "$sha" "b$p")) c=$(run "$N" $(user "$sha" "b$p"))
			R[$side-buy]+="$(echo "$a $b $c" | awk '{printf "%.2f %.2f", $1 + $3 + $5, $2 + $4 + $6}');"
		else
			R[$side-buy]+="$(run "$N" $(buy "$sha" "b$p"));"
		fi
	done
done
med() { tr ';' '\n' <<<"${R[$1]}" | awk -v f="$2" 'NF {print $f}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
all() { tr ';' '\n' <<<"${R[$1]}" | awk -v f="$2" 'NF {printf "%s%s", sep, $f; sep=", "}'; }
cat <<EOT

Machine: $(nproc) CPUs; $(redis-server --version | awk '{print $3}'); $(date -u +%Y-%m-%dT%H:%MZ); BASE=$BASE ($(git rev-parse --short "$BASE"))
Command: scripts/bench-throttle-lua.sh (redis-benchmark -n $N -c 16 -P 32, private redis-server, $ROUNDS alternating rounds, medians)

| case | BASE µs/call (commandstats) | new µs/call | BASE Redis CPU µs/decision | new Redis CPU µs/decision | new / BASE (CPU) |
|---|---:|---:|---:|---:|---:|
EOT
for c in user ip buy; do
	o1=$(med old-$c 1) n1=$(med new-$c 1) o2=$(med old-$c 2) n2=$(med new-$c 2)
	echo "| $c | $o1 | $n1 | $o2 | $n2 | $(awk -v a="$n2" -v b="$o2" 'BEGIN {printf "%.2fx", a / b}') |"
done
echo
for c in user ip buy; do echo "raw $c: BASE usec ($(all old-$c 1)) cpu ($(all old-$c 2)); new usec ($(all new-$c 1)) cpu ($(all new-$c 2))"; done
