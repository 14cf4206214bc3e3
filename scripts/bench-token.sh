#!/usr/bin/env bash
# Purchase-token benchmarks (BENCHMARKS.md, "Purchase tokens"):
#   1. token verification and signing cost per call (go test -bench, medians of COUNT runs),
#      next to the first Verify (strings.Split + crypto/hmac) as a baseline;
#   2. the issuing endpoint POST /seckill/<sale>/token against a plain `respond` route of the
#      same Caddy process, with wrk, alternating ROUNDS times, medians.
# Needs the stack (Redis) and bin/caddy (make bench builds both). Load only ever targets
# 127.0.0.1. Default run: about 2 minutes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUN_DIR=${SECKILL_RUN_DIR:-$ROOT/.run}
# shellcheck disable=SC1091
[ -f "$RUN_DIR/env" ] && source "$RUN_DIR/env"
REDIS_ADDR=${SECKILL_REDIS_ADDR:-127.0.0.1:16379}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
COUNT=${COUNT:-5}
command -v wrk >/dev/null || apt-get install -y -q wrk >/dev/null
[ -x bin/caddy ] || go build -o bin/caddy ./cmd/caddy

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "## Purchase tokens: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(go version | cut -d' ' -f3)"
echo
echo "### Verify / Sign (go test -bench, median of $COUNT alternating runs)"
echo
# One test binary, run COUNT times: the benchmarks alternate, so a burst of load on this shared
# machine hits the new Verify and its baseline alike.
go test -tags integration -c -o "$ROOT/bin/tokens.test" ./caddymodule/tokenformat/
out=$(for _ in $(seq "$COUNT"); do
	(cd caddymodule/tokenformat && "$ROOT/bin/tokens.test" -test.run='^$' -test.bench='^Benchmark(Verify|VerifyBaselineSplitHMAC|Issue)$' -test.benchmem)
done)
echo "| benchmark | ns/op | B/op | allocs/op |"
echo "|---|---|---|---|"
for b in Verify VerifyBaselineSplitHMAC Issue; do
	rows=$(echo "$out" | grep -E "^Benchmark${b}-[0-9]+ ")
	ns=$(echo "$rows" | awk '{print $3}' | median)
	bytes=$(echo "$rows" | awk '{print $5}' | median)
	allocs=$(echo "$rows" | awk '{print $7}' | median)
	echo "| $b | $ns | $bytes | $allocs |"
done
echo

# A sale open for an hour, written as the backend's preheat writes it.
SALE=bench$(date +%s)
now_ms=$(($(date +%s%N) / 1000000))
rc() { redis-cli -h "${REDIS_ADDR%:*}" -p "${REDIS_ADDR##*:}" "$@" >/dev/null; }
rc HSET "seckill:{sale:$SALE}:meta" stock 100 starts_ms $((now_ms - 60000)) ends_ms $((now_ms + 3600000)) state open
rc PEXPIREAT "seckill:{sale:$SALE}:meta" $((now_ms + 3600000 + 600000))

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TMP=$(mktemp -d)
trap 'kill "$CADDY_PID" 2>/dev/null || true; rc DEL "seckill:{sale:$SALE}:meta" "seckill:{sale:$SALE}:tokens"; rm -rf "$TMP"' EXIT
cat >"$TMP/Caddyfile" <<CADDY
{
	admin off
	log default {
		level ERROR
	}
	seckill {
		redis {
			addrs $REDIS_ADDR
		}
		token_keys {
			k1 {env.SECKILL_TOKEN_KEY}
		}
	}
}
http://127.0.0.1:$PORT {
	handle /seckill/*/token {
		seckill_token {
			user {http.request.header.X-User-ID}
		}
	}
	handle /plain {
		header Content-Type application/json
		respond \`{"token":"1.k1.tg8k0x.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","expires_at":"2026-11-30T03:00:00Z"}\` 200
	}
}
CADDY
# Demo key, not a secret.
SECKILL_TOKEN_KEY=${SECKILL_TOKEN_KEY:-bench-token-key-0123456789-0123456789} \
	bin/caddy run --config "$TMP/Caddyfile" --adapter caddyfile >"$TMP/caddy.log" 2>&1 &
CADDY_PID=$!
for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$PORT/plain" 2>/dev/null && break; sleep 0.1; done
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'X-User-ID: probe' "http://127.0.0.1:$PORT/seckill/$SALE/token")
[ "$code" = 200 ] || { echo "token endpoint answered $code" >&2; cat "$TMP/caddy.log" >&2; exit 1; }

# Every request a different user (1..100000), POST, as buyers do.
cat >"$TMP/post.lua" <<'LUA'
math.randomseed(os.time())
request = function()
  return wrk.format("POST", nil, {["X-User-ID"] = "u" .. math.random(1, 100000)})
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.0f %.3f %.3f %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA
declare -A rps p50 p99 errs
for r in $(seq "$ROUNDS"); do
	for target in plain token; do
		path=/plain
		[ $target = token ] && path=/seckill/$SALE/token
		res=$(wrk -t2 -c"$CONNS" -d"$DURATION" -s "$TMP/post.lua" "http://127.0.0.1:$PORT$path" | grep '^RESULT')
		read -r _ a b c e <<<"$res"
		rps[$target]+="$a "; p50[$target]+="$b "; p99[$target]+="$c "; errs[$target]=$(( ${errs[$target]:-0} + e ))
		echo "round $r $target: $a req/s, p50 $b ms, p99 $c ms, errors $e" >&2
	done
done
echo "### Issuing endpoint vs plain respond (wrk -t2 -c$CONNS -d$DURATION, POST, one user per request, median of $ROUNDS alternating rounds)"
echo
echo "| route | req/s | p50 ms | p99 ms | non-2xx or socket errors |"
echo "|---|---|---|---|---|"
for target in plain token; do
	name="respond (plain)"; [ $target = token ] && name="seckill_token"
	echo "| $name | $(tr ' ' '\n' <<<"${rps[$target]}" | grep . | median) | $(tr ' ' '\n' <<<"${p50[$target]}" | grep . | median) | $(tr ' ' '\n' <<<"${p99[$target]}" | grep . | median) | ${errs[$target]} |"
done
t=$(tr ' ' '\n' <<<"${rps[token]}" | grep . | median); p=$(tr ' ' '\n' <<<"${rps[plain]}" | grep . | median)
echo
echo "seckill_token / respond throughput: $(awk -v t="$t" -v p="$p" 'BEGIN {printf "%.2f", t / p}')"
