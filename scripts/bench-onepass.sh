#!/usr/bin/env bash
# The comparison's figures in one command, on a quiet machine: ROUNDS rounds, each ONE seckill-bench
# run, pinned (the load on CPU 0, every server on CPU 1), on a RabbitMQ, a Postgres and a Redis
# of its own (-private-services), that measures side by side:
#   1. closed model, the same crowd: Caddy's respond, nginx's return 200, the nginx + lua gate
#      (the peer, bench/nginxgate) and the full edge: CPU per request of each server, the
#      ratios edge / respond, edge / peer, gateway + Redis edge / peer, EVALSHA per request,
#      the gateway's allocations per request;
#   2. the open model at RATE arrivals/s (default 600): the full edge with the benchmark's
#      drain poll of Postgres during the rush (as before) and without it (its side traffic is
#      the difference), per-server CPU per request, GCs, Redis's delayed fsyncs, queueing;
#   3. the capacity under the objective: the highest open-model rate with p99 <= SLO_P99
#      (default 20ms), for the full edge, for respond and for the nginx + lua peer, and what
#      each server spent per request at that rate; respond's own open-model cost at RATE
#      (ceiling-open) beside the edge's, so Caddy's own open/closed factor is known.
# Then, unless SMOKE or EXTRAS=0: the in-process figures of the demo Caddyfile (go test
# benchmarks, -count 3, pinned to CPU 0 with PIN=1: a purchase, a click after the sell-out and
# respond; a bearer and a device-bound purchase) and `seckill-bench room -only poll` (the room's
# poll against respond). Then one table of every target with the medians (summary.md).
# Results in bench-results/onepass (git-ignored).
#
#   scripts/bench-onepass.sh                     # ROUNDS=3, bin/ (make build); about 25-30 minutes
#   make bench-onepass                           # the same, after make stack build
#   ROUNDS=1 SMOKE=1 scripts/bench-onepass.sh    # a tiny run that only checks the tool works
#
# seckill_throttle alone against caddy-ratelimit is not run here (it builds a second Caddy):
# PIN=1 scripts/bench-throttle.sh (the table names it).
#
# BENCH_FLAGS are passed to every run (e.g. "-slo-probe-duration 8s").
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
BIN=${BIN:-bin}
OUT=${OUT:-bench-results/onepass}
RATE=${RATE:-600}
SLO_P99=${SLO_P99:-20ms}
[ -f .run/env ] && source .run/env

die() { echo "bench-onepass: $*" >&2; exit 1; }

# The peer needs Debian's nginx and its Lua module, installed as the stack's servers are.
if ! command -v nginx >/dev/null || [ ! -f /usr/lib/nginx/modules/ngx_http_lua_module.so ]; then
	[ "$(id -u)" = 0 ] || die "nginx and libnginx-mod-http-lua are missing; run as root or: apt-get install -y nginx libnginx-mod-http-lua"
	echo "bench-onepass: installing nginx libnginx-mod-http-lua from Debian's packages" >&2
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update -q >/dev/null && apt-get install -y -q nginx libnginx-mod-http-lua >/dev/null; } ||
		die "could not install nginx and libnginx-mod-http-lua with apt-get: the peer cannot run"
	[ -f /usr/lib/nginx/modules/ngx_http_lua_module.so ] || die "libnginx-mod-http-lua installed no ngx_http_lua_module.so"
fi
[ -x "$BIN/seckill-bench" ] && [ -x "$BIN/caddy" ] && [ -x "$BIN/seckill-backend" ] || die "no $BIN/seckill-bench, caddy, seckill-backend: run make build"

flags=(-only ceiling,nginx-return,peer,edge,open,open-quiet,ceiling-open,slo -rate "$RATE" -slo-p99 "$SLO_P99" -pin -private-services)
if [ -n "${SMOKE:-}" ]; then
	# Checks that every part runs, in about a minute; its figures mean nothing.
	flags+=(-users 600 -bots 2 -bot-hits 20 -replays 20 -forged 20 -late 10 -stock 300 -duration 2s -conns 50
		-slo-start 200 -slo-probes 2 -slo-probe-duration 1s)
fi
rm -rf "$OUT"
mkdir -p "$OUT"
t0=$(date +%s)
fails=0
for r in $(seq "$ROUNDS"); do
	echo "bench-onepass: round $r/$ROUNDS (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	cut -d' ' -f1-3 /proc/loadavg >"$OUT/round-$r.loadavg"
	rc=0
	# shellcheck disable=SC2086
	"$BIN/seckill-bench" -bin "$BIN" "${flags[@]}" ${BENCH_FLAGS:-} -out "$OUT/round-$r" >"$OUT/round-$r.txt" 2>"$OUT/round-$r.log" || rc=$?
	if [ "$rc" != 0 ]; then
		[ -f "$OUT/round-$r/result.json" ] || die "round $r failed before it wrote a result (exit $rc; see $OUT/round-$r.log)"
		echo "bench-onepass: round $r: an invariant FAILed (exit $rc; see $OUT/round-$r.txt)" >&2
		fails=$((fails + 1))
	fi
	cut -d' ' -f1-3 /proc/loadavg >>"$OUT/round-$r.loadavg"
done
# The in-process figures and the room's poll (skipped by SMOKE or EXTRAS=0).
if [ -z "${SMOKE:-}" ] && [ "${EXTRAS:-1}" = 1 ]; then
	echo "bench-onepass: the in-process benchmarks of the demo Caddyfile (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	pin=()
	[ "${PIN:-1}" = 1 ] && pin=(taskset -c 0)
	"${pin[@]}" go test -tags integration -run '^$' -bench 'GatewayChainAllocs/shipped|GatewayChainProof' -benchmem \
		-benchtime 3000x -count 3 -cpu 1 ./internal/conformance/ >"$OUT/inprocess.txt" 2>&1 ||
		echo "bench-onepass: the in-process benchmarks failed (see $OUT/inprocess.txt)" >&2
	echo "bench-onepass: seckill-bench room -only poll (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	"$BIN/seckill-bench" room -bin "$BIN" -only poll -out "$OUT/room-poll" >"$OUT/room-poll.txt" 2>&1 ||
		echo "bench-onepass: the room's poll benchmark failed (see $OUT/room-poll.txt)" >&2
fi
elapsed=$(($(date +%s) - t0))
python3 - "$OUT" "$ROUNDS" "$elapsed" "$RATE" >"$OUT/summary.md" <<'PY'
import json, os, statistics, sys
out, rounds, elapsed, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
procs = ["gateway", "redis", "backend", "rabbitmq", "postgres"]
res = []
for r in range(1, rounds + 1):
    p = os.path.join(out, f"round-{r}", "result.json")
    if os.path.exists(p):
        x = json.load(open(p))
        x["_loadavg"] = open(os.path.join(out, f"round-{r}.loadavg")).read().split("\n")[0]
        res.append(x)
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")
def div(a, b):
    return a / b if a and b else None
def find(x, kind, where="contestants", pred=lambda c: True):
    return next((c for c in (x.get(where) or []) if c["kind"] == kind and pred(c)), None)
def cpu(c, p):
    return (c or {}).get("cpu_us_per_request", {}).get(p)
def passed(c):
    checks = ((c or {}).get("verify") or {}).get("checks", []) + ((c or {}).get("scenario_checks") or [])
    return all(ch["verdict"] == "PASS" for ch in checks)
def evalsha(c):
    e = next((k for k in (c or {}).get("redis_commands") or [] if k["command"] == "evalsha"), None)
    return (e["calls_per_request"], e["usec_per_call"]) if e else (None, None)
def allocs(c):
    v = ((c or {}).get("breakdown") or {}).get("gateway_mallocs_per_request", -1)
    return v if v is not None and v >= 0 else None
print(f"# bench-onepass: {len(res)} of {rounds} rounds, {elapsed // 60} min {elapsed % 60} s\n")
print("Rounds (date, load average at the start): " + "; ".join(f"{x['date'][:16]} ({x['_loadavg']})" for x in res) + "\n")
print("## Closed model, side by side (medians of the rounds; CPU µs per request of the rush)\n")
kinds = [("ceiling", "Caddy respond"), ("nginx-return", "nginx return 200"), ("peer", "nginx + lua gate"), ("edge", "full edge")]
print("| contestant | req/s | " + " | ".join(procs) + " | all | EVALSHA / req x µs | gateway allocs / req | invariants |")
print("|---|---:|" + "---:|" * (len(procs) + 3) + "---|")
for k, name in kinds:
    cs = [find(x, k) for x in res]
    cs = [c for c in cs if c]
    if not cs:
        continue
    ev = [evalsha(c) for c in cs]
    calls, us = med([e[0] for e in ev]), med([e[1] for e in ev])
    evs = f"{calls:.2f} x {us:.1f}" if calls == calls else "-"
    al = med([allocs(c) for c in cs])
    print(f"| {name} | {med([c['rush']['throughput'] for c in cs]):,.0f} | " + " | ".join(f"{med([cpu(c, p) for c in cs]):.1f}" for p in procs)
          + f" | {med([sum(cpu(c, p) or 0 for p in procs) for c in cs]):.1f} | {evs} | {al:.0f} | {'PASS' if all(passed(c) for c in cs) else 'FAIL'} |".replace("| nan |", "| - |"))
print()
ratios = {"gateway, edge / respond": [], "gateway, edge / peer": [], "gateway + Redis, edge / peer": [], "Redis, edge µs": []}
for x in res:
    e, c, p = find(x, "edge"), find(x, "ceiling"), find(x, "peer")
    ratios["gateway, edge / respond"].append(div(cpu(e, "gateway"), cpu(c, "gateway")))
    ratios["gateway, edge / peer"].append(div(cpu(e, "gateway"), cpu(p, "gateway")))
    ratios["gateway + Redis, edge / peer"].append(div((cpu(e, "gateway") or 0) + (cpu(e, "redis") or 0), (cpu(p, "gateway") or 0) + (cpu(p, "redis") or 0)))
    ratios["Redis, edge µs"].append(cpu(e, "redis"))
goal = {"gateway, edge / respond": "<= 1.6x", "gateway, edge / peer": "", "gateway + Redis, edge / peer": "<= 1.3x", "Redis, edge µs": "<= 20"}
print("| ratio (same round) | " + " | ".join(f"round {i + 1}" for i in range(len(res))) + " | median | goal |")
print("|---|" + "---:|" * (len(res) + 1) + "---|")
for k, v in ratios.items():
    print(f"| {k} | " + " | ".join("-" if a is None else f"{a:.2f}" for a in v) + f" | {med(v):.2f} | {goal[k]} |")
print(f"\n## Open model at {rate} arrivals/s: with and without the drain poll of Postgres in the rush (medians)\n")
print("| full edge | p50 ms | p99 ms | p99.9 ms | " + " | ".join(procs) + " | all µs/req | gateway GCs | delayed AOF fsyncs | sent late | invariants |")
print("|---|---:|---:|---:|" + "---:|" * (len(procs) + 4) + "---|")
for quiet, label in [(False, "drain poll on (as before)"), (True, "drain poll off in the rush")]:
    cs = [find(x, "edge", "open", lambda c, q=quiet: bool(c.get("drain_poll_after_rush")) == q) for x in res]
    cs = [c for c in cs if c]
    if not cs:
        continue
    lat = lambda k: med([c["latency"][k] for c in cs])
    bd = lambda k: med([(c.get("breakdown") or {}).get(k) for c in cs])
    print(f"| {label} | {lat('p50_ms'):.2f} | {lat('p99_ms'):.1f} | {lat('p999_ms'):.1f} | " + " | ".join(f"{med([cpu(c, p) for c in cs]):.0f}" for p in procs)
          + f" | {med([sum(cpu(c, p) or 0 for p in procs) for c in cs]):.0f} | {bd('gateway_gcs'):.0f} | {bd('redis_aof_delayed_fsyncs'):.0f} | {med([c['rush']['late'] for c in cs]):.0f} | {'PASS' if all(passed(c) for c in cs) else 'FAIL'} |")
print("\nThe poll's cost is the difference of the two rows (mostly Postgres's column); the goal for all five servers is <= 400 µs per request at 600/s, and the gateway's <= 2x its closed-model figure.")
print("\n## Capacity under the objective (highest open-model rate with p99 within it)\n")
print("| round | full edge /s | respond /s | edge / respond | edge probes (rate: p99 ms) | respond probes |")
print("|---|---:|---:|---:|---|---|")
caps = []
for i, x in enumerate(res):
    e, c = [next((s for s in x.get("slo") or [] if s["kind"] == k), None) for k in ("edge", "ceiling")]
    if not e or not c:
        continue
    pr = lambda s: ", ".join(f"{p['rate']:.0f}: {p['p99_ms']:.1f}{'' if p['pass'] else ' x'}" for p in s["probes"])
    caps.append((e, c))
    print(f"| {i + 1} | {e['rate']:.0f} | {c['rate']:.0f}{' (max)' if c.get('capped') else ''} | {div(e['rate'], c['rate']) or 0:.2f}x | {pr(e)} | {pr(c)} |")
if caps:
    r = med([div(e['rate'], c['rate']) for e, c in caps])
    print(f"| median | {med([e['rate'] for e, _ in caps]):.0f} | {med([c['rate'] for _, c in caps]):.0f} | {'-' if r != r else f'{r:.2f}x'} | goal >= 0.5x | |")
    print("\nCPU µs per request of each server at the edge's capacity (its passing probe), and the breakdown:\n")
    print("| round | rate | " + " | ".join(procs) + " | all | gateway allocs/req | gateway GCs (ms paused) | backend GCs | delayed AOF fsyncs | p99 due / send ms | servers busy CPU-s/s |")
    print("|---|---:|" + "---:|" * (len(procs) + 7))
    for i, (e, _) in enumerate(caps):
        at = next((p for p in e["probes"] if p["pass"] and p["rate"] == e["rate"]), None)
        if not at or not at.get("outcome"):
            continue
        o, b = at["outcome"], at["outcome"].get("breakdown") or {}
        allc = sum(cpu(o, p) or 0 for p in procs)
        print(f"| {i + 1} | {e['rate']:.0f} | " + " | ".join(f"{cpu(o, p) or 0:.0f}" for p in procs) + f" | {allc:.0f} | {b.get('gateway_mallocs_per_request', -1):.0f} | "
              f"{b.get('gateway_gcs', -1):.0f} ({b.get('gateway_gc_pause_ms', -1):.1f}) | {b.get('backend_gcs', -1):.0f} | {b.get('redis_aof_delayed_fsyncs', -1):.0f} | "
              f"{o['latency']['p99_ms']:.1f} / {o['service_latency']['p99_ms']:.1f} | {allc * o['rush']['throughput'] / 1e6:.2f} |")

# Every target in one table: the medians over the rounds (each ratio taken within its round).
import re
def per_round(f):
    return [f(x) for x in res]
def open_of(x, kind, quiet=None):
    return next((c for c in x.get("open") or [] if c["kind"] == kind and (quiet is None or bool(c.get("drain_poll_after_rush")) == quiet)), None)
def all_cpu(c):
    return sum(cpu(c, p) or 0 for p in procs) if c else None
def slo_rate(x, k):
    s = next((s for s in x.get("slo") or [] if s["kind"] == k), None)
    return s["rate"] if s else None
inproc = {}
ip = os.path.join(out, "inprocess.txt")
if os.path.exists(ip):
    for line in open(ip):
        m = re.match(r"Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op.*?(\d+) allocs/op", line)
        if m:
            inproc.setdefault(m.group(1), []).append((float(m.group(2)), int(m.group(3))))
def ns(name):
    v = inproc.get(name)
    return med([a for a, _ in v]) if v else None
poll = None
pp = os.path.join(out, "room-poll", "room.json")
if os.path.exists(pp):
    poll = (json.load(open(pp)).get("poll") or {})
def fmt(v, unit="x"):
    if v is None or v != v:
        return "-"
    return f"{v:.2f}{unit}" if unit == "x" else f"{v:.0f} {unit}".strip()
rows = []
e_c = med(per_round(lambda x: div(cpu(find(x, "edge"), "gateway"), cpu(find(x, "ceiling"), "gateway"))))
rows.append(("gateway CPU per purchase / respond's (closed)", fmt(e_c), "<= 1.6x", e_c <= 1.6 if e_c == e_c else None))
e_p = med(per_round(lambda x: div((cpu(find(x, "edge"), "gateway") or 0) + (cpu(find(x, "edge"), "redis") or 0), (cpu(find(x, "peer"), "gateway") or 0) + (cpu(find(x, "peer"), "redis") or 0))))
rows.append(("gateway + Redis CPU per purchase / the nginx + Lua peer's (closed)", fmt(e_p), "<= 1.3x", e_p <= 1.3 if e_p == e_p else None))
sc = med(per_round(lambda x: div(evalsha(find(x, "edge"))[1], evalsha(find(x, "peer"))[1])))
rows.append(("the purchase's script inside Redis per call / the peer's (EVALSHA usec_per_call; scripts/bench-combined.sh alone)", fmt(sc), "<= 2x", sc <= 2 if sc == sc else None))
op = med(per_round(lambda x: all_cpu(open_of(x, "edge", True))))
rows.append((f"all servers' CPU per purchase, open model at {rate}/s (drain poll off in the rush)", fmt(op, "µs"), "<= 400 µs", op <= 400 if op == op else None))
oc = med(per_round(lambda x: div(cpu(open_of(x, "edge", True), "gateway"), cpu(find(x, "edge"), "gateway"))))
rf = med(per_round(lambda x: div(cpu(open_of(x, "ceiling"), "gateway"), cpu(find(x, "ceiling"), "gateway"))))
lim = max(2.0, rf) if rf == rf else 2.0
rows.append((f"gateway open-model / closed-model CPU per purchase (respond's own factor: {fmt(rf)})", fmt(oc), f"<= {lim:.2f}x", oc <= lim if oc == oc else None))
cap = med(per_round(lambda x: div(slo_rate(x, "edge"), slo_rate(x, "ceiling"))))
rows.append(("capacity at p99 <= SLO, edge / respond", fmt(cap), ">= 0.5x", cap >= 0.5 if cap == cap else None))
capp = med(per_round(lambda x: div(slo_rate(x, "edge"), slo_rate(x, "peer"))))
rows.append(("capacity at p99 <= SLO, edge / the nginx + Lua peer", fmt(capp), "(reported)", None))
dv = div(ns("GatewayChainProof/proof"), ns("GatewayChainProof/bearer"))
rows.append(("device-bound purchase / bearer purchase (in process, ns/op)", fmt(dv), "<= 1.25x", dv <= 1.25 if dv else None))
al = med([allocs(find(x, "edge")) for x in res])
ali = med([a for _, a in inproc.get("GatewayChainAllocs/shipped/buy", [])])
rows.append(("allocations per purchase (closed run, /metrics; in process)", f"{fmt(al, '')} ; {fmt(ali, '')}", "<= 80", (al <= 80) if al == al else ((ali <= 80) if ali == ali else None)))
so = div(ns("GatewayChainAllocs/shipped/sold_out"), ns("GatewayChainAllocs/shipped/respond"))
rows.append(("a click after the sell-out, gateway / respond's (in process, ns/op); Redis commands per click", f"{fmt(so)}; 0 (TestTheShippedDemoSiteAnswersTheFloodAfterTheSellOutWithoutRedis)", "<= 1.1x; 0", so <= 1.1 if so else None))
pr = (poll or {}).get("Ratio") if poll else None
rows.append(("room poll / respond (seckill-bench room -only poll)", fmt(pr), ">= 0.9x", pr >= 0.9 if pr else None))
rows.append(("seckill_throttle alone / caddy-ratelimit", "not run here: PIN=1 scripts/bench-throttle.sh", ">= 1.0x", None))
print("\n## Every target (medians of the rounds)\n")
print("| target | measured | goal | met |")
print("|---|---:|---|---|")
for name, got, goal, met in rows:
    print(f"| {name} | {got} | {goal} | {'-' if met is None else ('met' if met else 'MISSED')} |")
PY
cat "$OUT/summary.md"
echo
echo "bench-onepass: $ROUNDS rounds in $((elapsed / 60)) min $((elapsed % 60)) s; results in $OUT (summary.md, round-N.txt, round-N/result.json)" >&2
[ "$fails" = 0 ] || die "$fails round(s) had a FAILed invariant"
