#!/usr/bin/env bash
# Benchmark of seckill_throttle, side by side in one run with mholt/caddy-ratelimit and with a
# plain `respond` route (make bench calls it through scripts/bench.sh).
#
#   scripts/bench-throttle.sh            # RUNS=3 DURATION=5s CONNS=500 by default
#
# Throughput: wrk -t2 -c$CONNS on 127.0.0.1, three routes per server, runs interleaved so the
# noisy machine hits every contender alike; the table shows medians of $RUNS runs.
#   users : 100 000 distinct X-User-ID values, limit 5 per 1s per user (nearly all admitted:
#           every request is a real decision; ours costs one Redis round trip)
#   flood : every request from one client IP, limit 100 per 10s (nearly all refused)
# Memory: a fresh server per contender receives 100 000 distinct keys (limit 100 per 60s);
# we report the growth of the Caddy process's RSS, plus for ours the growth of Redis's
# used_memory (the exact tier lives there).
#
# caddy-ratelimit is built into a second Caddy binary outside the repository (its code is
# never committed): with xcaddy through the Go module proxy, or, when the proxy does not
# serve it, from a local source tree given in CADDY_RATELIMIT_SRC (a throwaway main with a
# replace directive). CADDY_RATELIMIT_BIN skips the build. Without any, its columns say n/a.
#
# Our side uses a private redis-server (never the shared stack's) on a free port.
#
# PIN=1 runs wrk on CPU 0 and every server (both Caddys, Redis) on CPU 1 (taskset; PIN_LOAD and
# PIN_SERVERS override the CPUs), so the servers' cost is measured apart from the load. The
# table then also shows each server's CPU time per request of the users route (/proc/<pid>/stat).
set -euo pipefail
cd "$(dirname "$0")/.."
SRV=() LOADP=()
if [ -n "${PIN:-}" ]; then
	SRV=(taskset -c "${PIN_SERVERS:-1}")
	LOADP=(taskset -c "${PIN_LOAD:-0}")
fi
ROOT=$(pwd)
RUNS=${RUNS:-3}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-500}
MEM_KEYS=${MEM_KEYS:-100000}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/seckill-bench
mkdir -p "$CACHE"
TMP=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

command -v wrk >/dev/null || apt-get install -y -q wrk >/dev/null
command -v redis-server >/dev/null || apt-get install -y -q redis-server >/dev/null
[ -x bin/caddy ] || go build -o bin/caddy ./cmd/caddy
OURS=$ROOT/bin/caddy

# --- the caddy-ratelimit binary -------------------------------------------------------------
RL=${CADDY_RATELIMIT_BIN:-$CACHE/caddy-ratelimit}
if [ ! -x "$RL" ]; then
	echo "bench-throttle: building Caddy with mholt/caddy-ratelimit (outside the repo)" >&2
	build=$TMP/rl-build
	mkdir -p "$build"
	if command -v xcaddy >/dev/null && (cd "$build" && xcaddy build v2.11.9 \
		--with github.com/mholt/caddy-ratelimit --output "$RL") >"$TMP/xcaddy.log" 2>&1; then
		:
	elif [ -n "${CADDY_RATELIMIT_SRC:-}" ] && [ -d "$CADDY_RATELIMIT_SRC" ]; then
		cat >"$build/main.go" <<-'EOF'
			package main

			import (
				caddycmd "github.com/caddyserver/caddy/v2/cmd"

				_ "github.com/caddyserver/caddy/v2/modules/standard"
				_ "github.com/mholt/caddy-ratelimit"
			)

			func main() { caddycmd.Main() }
		EOF
		cat >"$build/go.mod" <<-EOF
			module benchrl

			go 1.26.0

			require (
				github.com/caddyserver/caddy/v2 v2.11.9
				github.com/mholt/caddy-ratelimit v0.0.0
			)

			replace github.com/mholt/caddy-ratelimit => $CADDY_RATELIMIT_SRC
		EOF
		cp go.sum "$build/"
		(cd "$build" && go mod tidy >/dev/null 2>&1 && go build -o "$RL" .) || RL=""
	else
		echo "bench-throttle: caddy-ratelimit unavailable (module proxy refused it; set CADDY_RATELIMIT_SRC)" >&2
		RL=""
	fi
fi

# --- servers ---------------------------------------------------------------------------------
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

REDIS_PORT=$(free_port)
"${SRV[@]}" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
	--dir "$TMP" --logfile "$TMP/redis.log" --daemonize no &
PIDS+=($!)
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

# ours_config PORT USER_LIMIT USER_WINDOW : JSON config of our server
ours_config() {
	cat <<-EOF
		{"admin":{"disabled":true},"logging":{"logs":{"default":{"level":"ERROR"}}},
		 "apps":{"seckill":{"redis":{"addrs":["127.0.0.1:$REDIS_PORT"],"pool_size":200}},
		  "http":{"servers":{"b":{"listen":["127.0.0.1:$1"],"routes":[
		   {"match":[{"path":["/plain"]}],"handle":[{"handler":"static_response","body":"ok"}]},
		   {"match":[{"path":["/metrics"]}],"handle":[{"handler":"metrics"}]},
		   {"match":[{"path":["/users"]}],"handle":[
		     {"handler":"seckill_throttle","timeout":1000000000,"zones":[{"name":"user","key":"{http.request.header.X-User-ID}","limit":$2,"window":$3}]},
		     {"handler":"static_response","body":"ok"}]},
		   {"match":[{"path":["/flood"]}],"handle":[
		     {"handler":"seckill_throttle","zones":[{"name":"ip","key":"{http.vars.client_ip}","limit":100,"window":10000000000}]},
		     {"handler":"static_response","body":"ok"}]}]}}}}}
	EOF
}
rl_config() {
	cat <<-EOF
		{"admin":{"disabled":true},"logging":{"logs":{"default":{"level":"ERROR"}}},
		 "apps":{"http":{"servers":{"b":{"listen":["127.0.0.1:$1"],"routes":[
		   {"match":[{"path":["/plain"]}],"handle":[{"handler":"static_response","body":"ok"}]},
		   {"match":[{"path":["/users"]}],"handle":[
		     {"handler":"rate_limit","rate_limits":{"user":{"key":"{http.request.header.X-User-ID}","max_events":$2,"window":$3}}},
		     {"handler":"static_response","body":"ok"}]},
		   {"match":[{"path":["/flood"]}],"handle":[
		     {"handler":"rate_limit","rate_limits":{"ip":{"key":"{http.vars.client_ip}","max_events":100,"window":10000000000}}},
		     {"handler":"static_response","body":"ok"}]}]}}}}}
	EOF
}

# start BIN CONFIGFILE PORT : runs a Caddy and waits for it; prints its pid
start() {
	"${SRV[@]}" "$1" run --config "$2" >"$2.log" 2>&1 &
	local pid=$!
	for _ in $(seq 100); do
		curl -fs "http://127.0.0.1:$3/plain" >/dev/null 2>&1 && break
		sleep 0.1
	done
	echo "$pid"
}

OURS_PORT=$(free_port)
ours_config "$OURS_PORT" 5 1000000000 >"$TMP/ours.json"
OURS_PID=$(start "$OURS" "$TMP/ours.json" "$OURS_PORT")
PIDS+=("$OURS_PID")
if [ -n "$RL" ]; then
	RL_PORT=$(free_port)
	rl_config "$RL_PORT" 5 1000000000 >"$TMP/rl.json"
	RL_PID=$(start "$RL" "$TMP/rl.json" "$RL_PORT")
	PIDS+=("$RL_PID")
fi

cat >"$TMP/users.lua" <<-'EOF'
	local n = 0
	function setup(thread) n = n + 1; thread:set("tid", n) end
	function init(args) math.randomseed(os.time() * 100 + tid) end
	function request()
		return wrk.format("GET", "/users", {["X-User-ID"] = "u" .. math.random(1, 100000)})
	end
EOF
# Sends each of MEM_KEYS distinct keys once (split over 2 threads), then only /plain; each
# thread drops a marker file once all its keyed requests have been answered.
cat >"$TMP/mem.lua" <<-EOF
	local n = 0
	function setup(thread) n = n + 1; thread:set("tid", n) end
	local sent, got = 0, 0
	function request()
		sent = sent + 1
		if sent > $MEM_KEYS / 2 then return wrk.format("GET", "/plain") end
		return wrk.format("GET", "/users", {["X-User-ID"] = "m" .. tid .. "-" .. sent})
	end
	function response()
		got = got + 1
		if got == $MEM_KEYS / 2 + 100 then io.open("$TMP/mem-done-" .. tid, "w"):close() end
	end
EOF

# rps URL [SCRIPT] : requests per second of one wrk run
rps() {
	local out
	if [ -n "${2:-}" ]; then
		out=$("${LOADP[@]}" wrk -t2 -c"$CONNS" -d"$DURATION" -s "$2" "$1" 2>&1)
	else
		out=$("${LOADP[@]}" wrk -t2 -c"$CONNS" -d"$DURATION" "$1" 2>&1)
	fi
	echo "$out" | awk '/Requests\/sec/ {printf "%d", $2}'
}
# CPU time (µs) a process has used: utime + stime from /proc/<pid>/stat, 100 ticks a second.
cpu_us() { awk '{print ($14 + $15) * 10000}' "/proc/$1/stat"; }
# rps_cpu URL SCRIPT PID... : "req/s cpu_us_per_request_of_each_pid" of one wrk run
rps_cpu() {
	local url=$1 script=$2 out p
	shift 2
	local before=() after=() n
	for p in "$@"; do before+=("$(cpu_us "$p")"); done
	out=$("${LOADP[@]}" wrk -t2 -c"$CONNS" -d"$DURATION" -s "$script" "$url" 2>&1)
	for p in "$@"; do after+=("$(cpu_us "$p")"); done
	n=$(echo "$out" | awk '/requests in/ {print $1}')
	printf '%s' "$(echo "$out" | awk '/Requests\/sec/ {printf "%d", $2}')"
	for i in "${!before[@]}"; do awk -v a="${after[$i]}" -v b="${before[$i]}" -v n="$n" 'BEGIN {printf ":%.1f", (a - b) / n}'; done
	echo
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {if (NR==0) print "n/a"; else print a[int((NR+1)/2)]}'; }

declare -A R
for run in $(seq "$RUNS"); do
	echo "bench-throttle: run $run/$RUNS" >&2
	R[plain]+=" $(rps "http://127.0.0.1:$OURS_PORT/plain")"
	x=$(rps_cpu "http://127.0.0.1:$OURS_PORT/users" "$TMP/users.lua" "$OURS_PID" "${PIDS[0]}")
	R[ours_users]+=" ${x%%:*}"
	R[ours_gw_cpu]+=" $(echo "$x" | cut -d: -f2)"
	R[ours_redis_cpu]+=" $(echo "$x" | cut -d: -f3)"
	if [ -n "$RL" ]; then
		x=$(rps_cpu "http://127.0.0.1:$RL_PORT/users" "$TMP/users.lua" "$RL_PID")
		R[rl_users]+=" ${x%%:*}"
		R[rl_gw_cpu]+=" $(echo "$x" | cut -d: -f2)"
	fi
	R[ours_flood]+=" $(rps "http://127.0.0.1:$OURS_PORT/flood")"
	[ -n "$RL" ] && R[rl_flood]+=" $(rps "http://127.0.0.1:$RL_PORT/flood")"
done
# Decisions that did not wait for Redis (fail_open after the timeout) would flatter us: count them.
DECISIONS=$(curl -fs "http://127.0.0.1:$OURS_PORT/metrics" | awk '/^seckill_throttle_decisions_total/ && /zone="user"/ {
	split($0, a, "outcome=\""); split(a[2], b, "\""); n[b[1]] += $NF; t += $NF }
	END { printf "%d user-zone decisions: %d allowed, %d limited, %d failed_open", t, n["allowed"], n["limited"], n["failed_open"] }')
kill "$OURS_PID" ${RL_PID:-} 2>/dev/null || true

m() { median ${R[$1]:-}; }
fmed() { printf '%s\n' ${R[$1]:-} | sort -g | awk '{a[NR]=$1} END {if (NR==0) print "n/a"; else print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b+0 > 0 && a+0 > 0) printf "%.2fx", a/b; else print "n/a" }'; }

# --- memory per MEM_KEYS distinct keys ----------------------------------------------------------
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
redis_mem() { redis-cli -p "$REDIS_PORT" info memory | awk -F: '/^used_memory:/ {print $2+0}'; }
# mem BIN CONFIGFN LIMIT : "caddy_rss_growth_bytes redis_growth_bytes"
mem() {
	local port cfg pid r0 r1 m0 m1
	port=$(free_port)
	cfg=$TMP/mem-$RANDOM.json
	"$2" "$port" "$3" 60000000000 >"$cfg"
	pid=$(start "$1" "$cfg" "$port")
	PIDS+=("$pid")
	wrk -t2 -c50 -d1s "http://127.0.0.1:$port/plain" >/dev/null 2>&1 # warm up the pools
	r0=$(rss_kb "$pid")
	m0=$(redis_mem)
	# exactly MEM_KEYS keyed requests go out, then only /plain until both threads are done
	rm -f "$TMP"/mem-done-*
	wrk -t2 -c50 -d300s -s "$TMP/mem.lua" "http://127.0.0.1:$port/" >/dev/null 2>&1 &
	local wrk_pid=$!
	for _ in $(seq 1200); do
		[ -e "$TMP/mem-done-1" ] && [ -e "$TMP/mem-done-2" ] && break
		sleep 0.1
	done
	kill "$wrk_pid" 2>/dev/null || true
	wait "$wrk_pid" 2>/dev/null || true
	r1=$(rss_kb "$pid")
	m1=$(redis_mem)
	kill "$pid" 2>/dev/null || true
	echo "$(((r1 - r0) * 1024)) $((m1 - m0))"
}
human() { awk -v b="$1" 'BEGIN { if (b == "") print "n/a"; else printf "%.1f MB (%d B/key)", b/1048576, b/'"$MEM_KEYS"' }'; }

OURS_RSS="" OURS_REDIS="" RL_RSS=""
if [ -z "${SKIP_MEM:-}" ]; then
	echo "bench-throttle: memory for $MEM_KEYS keys" >&2
	read -r OURS_RSS OURS_REDIS <<<"$(mem "$OURS" ours_config 100)"
	if [ -n "$RL" ]; then read -r RL_RSS _ <<<"$(mem "$RL" rl_config 100)"; fi
fi

cat <<EOF

Machine: $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GB RAM; $(date -u +%Y-%m-%dT%H:%MZ)
Command: scripts/bench-throttle.sh (wrk -t2 -c$CONNS -d$DURATION on 127.0.0.1, median of $RUNS interleaved runs)

| route | plain respond | seckill_throttle | caddy-ratelimit | ours / caddy-ratelimit |
|---|---|---|---|---|
| users: 100k users, 5/s each (admitted) | $(m plain) req/s | $(m ours_users) req/s | $(m rl_users) req/s | $(ratio "$(m ours_users)" "$(m rl_users)") |
| flood: one IP, 100 per 10s (refused) | $(m plain) req/s | $(m ours_flood) req/s | $(m rl_flood) req/s | $(ratio "$(m ours_flood)" "$(m rl_flood)") |

| memory for $MEM_KEYS keys (limit 100 / 60s) | seckill_throttle | caddy-ratelimit |
|---|---|---|
| gateway process RSS growth | $(human "$OURS_RSS") | $(human "$RL_RSS") |
| Redis used_memory growth | $(human "$OURS_REDIS") | none (in-process only) |

CPU per request of the users route (µs, medians${PIN:+; pinned: wrk on CPU ${PIN_LOAD:-0}, servers on CPU ${PIN_SERVERS:-1}}): seckill_throttle gateway $(fmed ours_gw_cpu) + Redis $(fmed ours_redis_cpu); caddy-ratelimit gateway $(fmed rl_gw_cpu).

Ours, users route: $DECISIONS (timeout 1s, so the figures are real Redis decisions).
Raw runs (req/s): plain:${R[plain]}; ours users:${R[ours_users]}; rl users:${R[rl_users]:-}; ours flood:${R[ours_flood]}; rl flood:${R[rl_flood]:-}
Raw CPU µs/request (users): ours gateway:${R[ours_gw_cpu]:-}; ours Redis:${R[ours_redis_cpu]:-}; rl gateway:${R[rl_gw_cpu]:-}
EOF
