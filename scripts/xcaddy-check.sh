#!/usr/bin/env bash
# Checks a Caddy binary built by xcaddy: every seckill module is in it, build-info works, and
# the top-level Caddyfile validates with it.
set -euo pipefail
bin=${1:-bin/caddy-xcaddy}
mods=$("$bin" list-modules)
# Every module id in our sources: handlers (most are declared through refusal.Module, not an
# `ID:` field, so the id string itself is what is looked for) and authentication providers.
for m in seckill admin.api.seckill $(grep -ho '"http\.\(handlers\|authentication\.providers\)\.seckill_[a-z_]*"' caddymodule/*/*.go 2>/dev/null | tr -d '"' | sort -u); do
	grep -qx "$m" <<<"$mods" || { echo "xcaddy-check: module $m missing from $bin" >&2; exit 1; }
	echo "xcaddy-check: $m present"
done
"$bin" build-info | grep -q 'github.com/seckilledge/seckill' || { echo "xcaddy-check: build-info does not list our module" >&2; exit 1; }
SECKILL_TOKEN_KEY=${SECKILL_TOKEN_KEY:-ci-validate-key-0123456789abcdef0123} "$bin" validate --config Caddyfile --adapter caddyfile >/dev/null
echo "xcaddy-check: build-info ok, Caddyfile valid"
