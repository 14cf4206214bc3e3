#!/usr/bin/env bash
# The servers' cost per request, apart from the load: seckill-bench's full edge and
# Caddy's respond, ROUNDS times unpinned and pinned (-pin: the load generator on CPU 0, every
# server process tree on CPU 1), each run on private RabbitMQ, Postgres and Redis servers
# (-private-services), then a table of medians: throughput, the edge/respond ratio, and CPU
# per request and per purchase of every server process.
#
#   scripts/bench-pin.sh                 # ROUNDS=3, bin/ (make build), results in bench-results/pin
#   BASE_BIN=/path/to/old/bin scripts/bench-pin.sh   # also the pinned run of an older build, per round
#
# BENCH_FLAGS are passed to every run (e.g. "-duration 5s -users 10000").
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
BIN=${BIN:-bin}
OUT=${OUT:-bench-results/pin}
[ -f .run/env ] && source .run/env
mkdir -p "$OUT"
for r in $(seq "$ROUNDS"); do
	sides="unpinned pinned"
	[ -n "${BASE_BIN:-}" ] && sides="base-pinned $sides"
	for side in $sides; do
		echo "bench-pin: round $r/$ROUNDS, $side" >&2
		bin=$BIN flags=()
		case $side in
		base-pinned) bin=$BASE_BIN flags=(-pin) ;;
		pinned) flags=(-pin -gateway-pprof "$OUT/$side-$r/pprof") ;;
		esac
		"$BIN/seckill-bench" -bin "$bin" -only edge,ceiling -private-services "${flags[@]}" ${BENCH_FLAGS:-} \
			-out "$OUT/$side-$r" >"$OUT/$side-$r.log" 2>&1 || { echo "bench-pin: $side run $r failed (see $OUT/$side-$r.log)" >&2; exit 1; }
	done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
procs = ["gateway", "redis", "backend", "rabbitmq", "postgres"]
def load(side):
    rs = []
    for r in range(1, rounds + 1):
        p = os.path.join(out, f"{side}-{r}", "result.json")
        if os.path.exists(p):
            rs.append(json.load(open(p)))
    return rs
def find(res, kind):
    return next(c for c in res["contestants"] if c["kind"] == kind)
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")
print("| run | edge req/s | respond req/s | edge / respond | " + " | ".join(f"{p} µs/req (edge / respond)" for p in procs) + " | all µs/req edge | gateway edge / respond | invariants |")
print("|---|" + "---:|" * (4 + len(procs) + 2) + "---|")
summary = {}
for side in ["base-pinned", "unpinned", "pinned"]:
    rs = load(side)
    if not rs:
        continue
    e = [find(r, "edge") for r in rs]
    c = [find(r, "ceiling") for r in rs]
    er = med([x["rush"]["throughput"] for x in e]); cr = med([x["rush"]["throughput"] for x in c])
    ratio = med([a["rush"]["throughput"] / b["rush"]["throughput"] for a, b in zip(e, c)])
    cpu = {p: (med([x.get("cpu_us_per_request", {}).get(p) for x in e]), med([x.get("cpu_us_per_request", {}).get(p) for x in c])) for p in procs}
    allr = med([sum(x.get("cpu_us_per_request", {}).values()) for x in e])
    gw = med([a["cpu_us_per_request"]["gateway"] / b["cpu_us_per_request"]["gateway"] for a, b in zip(e, c)])
    ok = all(all(ch["verdict"] == "PASS" for ch in (x.get("verify") or {}).get("checks", [])) for x in e)
    summary[side] = (e, cpu)
    print(f"| {side} ({len(rs)} runs, medians) | {er:,.0f} | {cr:,.0f} | {ratio:.2f}x | " + " | ".join(f"{cpu[p][0]:.0f} / {cpu[p][1]:.0f}" for p in procs) + f" | {allr:.0f} | {gw:.2f}x | {'PASS' if ok else 'FAIL'} |")
print()
print("CPU per purchase (edge, from the first token request to the last winner's row; µs per winner, medians):")
print()
print("| run | " + " | ".join(procs) + " | all |")
print("|---|" + "---:|" * (len(procs) + 1))
for side, (e, _) in summary.items():
    vals = {p: med([x.get("cpu_us_per_purchase", {}).get(p) for x in e]) for p in procs}
    print(f"| {side} | " + " | ".join(f"{vals[p]:.0f}" for p in procs) + f" | {med([sum(x.get('cpu_us_per_purchase', {}).values()) for x in e]):.0f} |")
print()
for side, (e, _) in summary.items():
    x = e[len(e) // 2]
    top = ", ".join(f"{c['command']} {c['calls_per_request']:.2f} x {c['usec_per_call']:.1f} µs" for c in (x.get("redis_commands") or [])[:6])
    print(f"Redis commandstats per edge request ({side}, run {len(e) // 2 + 1}): {top}")
PY
