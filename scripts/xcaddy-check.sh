#!/usr/bin/env bash
# Checks a Caddy binary built by xcaddy: every seckill module is in it, build-info works, and
# the top-level Caddyfile validates with it.
set -euo pipefail
bin=${1:-bin/caddy-xcaddy}
mods=$("$bin" list-modules)
for m in seckill admin.api.seckill $(grep -ho 'ID: *"http.handlers.seckill_[a-z_]*"' caddymodule/*/*.go 2>/dev/null | sed 's/.*"\(.*\)"/\1/' | sort -u); do
	grep -qx "$m" <<<"$mods" || { echo "xcaddy-check: module $m missing from $bin" >&2; exit 1; }
	echo "xcaddy-check: $m present"
done
"$bin" build-info | grep -q 'github.com/seckilledge/seckill' || { echo "xcaddy-check: build-info does not list our module" >&2; exit 1; }
SECKILL_TOKEN_KEY=${SECKILL_TOKEN_KEY:-ci-validate-key-0123456789abcdef0123} "$bin" validate --config Caddyfile --adapter caddyfile >/dev/null
echo "xcaddy-check: build-info ok, Caddyfile valid"
