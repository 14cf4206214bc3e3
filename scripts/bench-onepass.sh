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
#      (default 20ms), for the full edge and for respond, and what each server spent per
#      request at that rate.
# Then a table of medians (summary.md). Results in bench-results/onepass (git-ignored).
#
#   scripts/bench-onepass.sh                     # ROUNDS=3, bin/ (make build); about 10-12 minutes
#   make bench-onepass                           # the same, after make stack build
#   ROUNDS=1 SMOKE=1 scripts/bench-onepass.sh    # a tiny run that only checks the tool works
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

flags=(-only ceiling,nginx-return,peer,edge,open,open-quiet,slo -rate "$RATE" -slo-p99 "$SLO_P99" -pin -private-services)
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
PY
cat "$OUT/summary.md"
echo
echo "bench-onepass: $ROUNDS rounds in $((elapsed / 60)) min $((elapsed % 60)) s; results in $OUT (summary.md, round-N.txt, round-N/result.json)" >&2
[ "$fails" = 0 ] || die "$fails round(s) had a FAILed invariant"
