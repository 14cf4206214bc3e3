#!/usr/bin/env bash
# The local stack: Redis 7, RabbitMQ 3.10 and Postgres 15 from Debian's packages, each on
# loopback with its data under .run/ (git-ignored). No systemd, no Docker.
#
#   scripts/stack.sh start    install what is missing, start what is not running, wait for all
#   scripts/stack.sh stop     stop what this script started
#   scripts/stack.sh status   print what answers
#   scripts/stack.sh env      print the environment the tests and binaries read
#   scripts/stack.sh env-file only (re)write .run/env, as start does
#   scripts/stack.sh test-tools  install the test tools from the npm registry (axe-core, for
#                            the pages' Chromium tests, under .run/npm; TypeScript, publint,
#                            Redocly, openapi-typescript, standardwebhooks under .run/npm-tools),
#                            as start does
#
# Idempotent: start twice is harmless. Ports are not the packages' defaults, so the stack never
# collides with system services a Debian install may have started (override with the env vars).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUN="${SECKILL_RUN_DIR:-$ROOT/.run}"
REDIS_PORT="${SECKILL_REDIS_PORT:-16379}"
AMQP_PORT="${SECKILL_AMQP_PORT:-16672}"
AMQP_MGMT_PORT="${SECKILL_AMQP_MGMT_PORT:-16673}"
AMQP_DIST_PORT="${SECKILL_AMQP_DIST_PORT:-26672}"
EPMD_PORT="${SECKILL_EPMD_PORT:-14369}"
PG_PORT="${SECKILL_PG_PORT:-15432}"
PG_BIN=/usr/lib/postgresql/15/bin

log() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] ERROR: %s\n' "$*" >&2; exit 1; }

print_env() {
	cat <<EOF
export SECKILL_REDIS_ADDR=127.0.0.1:$REDIS_PORT
export SECKILL_AMQP_URL=amqp://guest:guest@127.0.0.1:$AMQP_PORT/
export SECKILL_AMQP_MGMT_URL=http://guest:guest@127.0.0.1:$AMQP_MGMT_PORT
export SECKILL_PG_URL=postgres://seckill:seckill@127.0.0.1:$PG_PORT/seckill?sslmode=disable
export SECKILL_PG_ADMIN_URL=postgres://seckill:seckill@127.0.0.1:$PG_PORT/postgres?sslmode=disable
export SECKILL_RABBITMQCTL="env HOME=$RUN/rabbitmq RABBITMQ_NODENAME=seckill@localhost ERL_EPMD_PORT=$EPMD_PORT /usr/lib/rabbitmq/bin/rabbitmqctl"
EOF
}

# write_env: .run/env, the stack's variables and, once scripts/run.sh has made them, the secrets
# of .run/secrets.env, in the very lines run.sh's ensure_secrets writes. `make test` restarts the
# stack after `make run`: rewriting the file with the stack's variables alone dropped the admin
# token and token key that the README says .run/env exports. Mode 600: it holds them.
write_env() {
	(
		umask 077
		{
			print_env
			if [ -s "$RUN/secrets.env" ]; then
				echo "# secrets: $RUN/secrets.env"
				grep '^export ' "$RUN/secrets.env"
			fi
		} >"$RUN/env.tmp"
	)
	chmod 600 "$RUN/env.tmp"
	mv "$RUN/env.tmp" "$RUN/env"
}

install_missing() {
	local need=()
	command -v redis-server >/dev/null || need+=(redis-server)
	[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || need+=(rabbitmq-server)
	[ -x "$PG_BIN/postgres" ] || need+=(postgresql)
	command -v redis-cli >/dev/null || need+=(redis-tools)
	command -v psql >/dev/null || need+=(postgresql-client)
	command -v curl >/dev/null || need+=(curl)
	[ -x /usr/bin/chromium ] || need+=(chromium)
	# Glyphs for the Chinese, Japanese and Korean pages, so the pages' overflow check at 390 px
	# measures real text rather than the empty boxes of a missing font (5 MB).
	[ -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || need+=(fonts-wqy-microhei)
	# seckill-bench's peer, the nginx + Lua gate (bench/nginxgate; its test is in make test).
	# The peer starts an nginx of its own; on a machine with systemd Debian also enables its
	# nginx service on :80, which nothing here uses (systemctl disable --now nginx).
	command -v nginx >/dev/null || need+=(nginx)
	[ -f /usr/lib/nginx/modules/ngx_http_lua_module.so ] || need+=(libnginx-mod-http-lua)
	command -v node >/dev/null || need+=(nodejs) # clients/js: go test ./clients/js/ runs node --test
	command -v npm >/dev/null || need+=(npm)     # axe-core for the pages' tests (install_test_tools)
	# promtool, for the alert rules' unit tests (deploy/grafana runs promtool test rules). Debian's
	# package also installs a prometheus service, which nothing here starts or uses.
	command -v promtool >/dev/null || need+=(prometheus)
	[ ${#need[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages ${need[*]}; run as root or install them with apt-get"
	log "installing ${need[*]} from Debian's packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q "${need[@]}" >/dev/null
}

# The pages' accessibility check (caddymodule/internal/pagekit/pagetest) runs axe-core, from
# the npm registry, inside Chromium: installed under .run/npm (git-ignored), pinned to a minor
# version so a new rule does not fail a build unannounced.
AXE_VERSION="${SECKILL_AXE_VERSION:-4.11}"
install_test_tools() {
	if [ -f "$RUN/npm/node_modules/axe-core/axe.min.js" ]; then return 0; fi
	command -v npm >/dev/null || die "npm is missing: apt-get install -y npm (Debian's package)"
	mkdir -p "$RUN/npm"
	log "installing axe-core@$AXE_VERSION from the npm registry under $RUN/npm"
	npm install --prefix "$RUN/npm" --no-save --no-package-lock --no-audit --no-fund "axe-core@$AXE_VERSION" >/dev/null
}

# The tools integrators run on what we ship, which the tests run too (internal/npmtools):
# TypeScript and Node's types (the JS client's declarations, a strict program importing it),
# publint (the packed package), Redocly's CLI and openapi-typescript (docs/openapi.yaml), the
# Standard Webhooks library (real deliveries verified as a shop verifies them). Installed in
# one npm call under .run/npm-tools (git-ignored), pinned to a major or minor version.
NPM_TOOLS=(typescript@5.9 @types/node@20 publint@0.3 @redocly/cli@2 openapi-typescript@7 standardwebhooks@1)
install_npm_tools() {
	local have=1
	for bin in tsc publint redocly openapi-typescript; do
		[ -x "$RUN/npm-tools/node_modules/.bin/$bin" ] || have=0
	done
	[ -f "$RUN/npm-tools/node_modules/standardwebhooks/package.json" ] || have=0
	[ -d "$RUN/npm-tools/node_modules/@types/node" ] || have=0
	[ $have = 1 ] && return 0
	command -v npm >/dev/null || die "npm is missing: apt-get install -y npm (Debian's package)"
	mkdir -p "$RUN/npm-tools"
	log "installing ${NPM_TOOLS[*]} from the npm registry under $RUN/npm-tools"
	npm install --prefix "$RUN/npm-tools" --no-save --no-package-lock --no-audit --no-fund "${NPM_TOOLS[@]}" >/dev/null
}

wait_for() { # name, tries, command...
	local name=$1 tries=$2; shift 2
	for _ in $(seq "$tries"); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	die "$name did not answer in time (see $RUN/*.log)"
}

redis_up() { redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }
start_redis() {
	if redis_up; then log "redis already up on :$REDIS_PORT"; return; fi
	mkdir -p "$RUN/redis"
	# AOF everysec: a crash loses at most about a second of writes (docs/chaos.md says what that costs).
	# noeviction: a full Redis refuses writes (the gateways answer 503) instead of silently
	# evicting a sale's stock, tokens or queue (README, "Production"; docs/room.md, "Bounds").
	redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$RUN/redis" \
		--appendonly yes --appendfsync everysec --save '' \
		--maxmemory "${SECKILL_REDIS_MAXMEMORY:-2gb}" --maxmemory-policy noeviction \
		--daemonize yes --pidfile "$RUN/redis/redis.pid" --logfile "$RUN/redis.log" \
		--maxclients 20000 --tcp-backlog 4096
	wait_for redis 60 redis_up
	log "redis up on 127.0.0.1:$REDIS_PORT"
}

rabbit_env() {
	export HOME="$RUN/rabbitmq"
	export RABBITMQ_NODENAME=seckill@localhost
	export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
	export RABBITMQ_NODE_PORT="$AMQP_PORT"
	export RABBITMQ_DIST_PORT="$AMQP_DIST_PORT"
	export ERL_EPMD_PORT="$EPMD_PORT"
	export ERL_EPMD_ADDRESS=127.0.0.1
	export RABBITMQ_MNESIA_BASE="$RUN/rabbitmq/mnesia"
	export RABBITMQ_LOG_BASE="$RUN/rabbitmq/log"
	export RABBITMQ_ENABLED_PLUGINS_FILE="$RUN/rabbitmq/enabled_plugins"
	export RABBITMQ_CONFIG_FILE="$RUN/rabbitmq/rabbitmq"
	export RABBITMQ_ADVANCED_CONFIG_FILE="$RUN/rabbitmq/advanced.config"
	export RABBITMQ_PID_FILE="$RUN/rabbitmq/rabbitmq.pid"
	# Erlang distribution on loopback only (it listens on every interface by default).
	export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
}
rabbit_up() { (rabbit_env; /usr/lib/rabbitmq/bin/rabbitmqctl -q await_startup --timeout 1) ; }
# Another checkout's stack (same ports) counts as up: answer on AMQP and management ports.
rabbit_port_up() { (exec 3<>"/dev/tcp/127.0.0.1/$AMQP_PORT") 2>/dev/null && curl -fsS -o /dev/null -u guest:guest "http://127.0.0.1:$AMQP_MGMT_PORT/api/overview"; }
start_rabbit() {
	mkdir -p "$RUN/rabbitmq/log"
	rabbit_env
	if rabbit_port_up || /usr/lib/rabbitmq/bin/rabbitmqctl -q status >/dev/null 2>&1; then log "rabbitmq already up on :$AMQP_PORT"; return; fi
	[ -f "$HOME/.erlang.cookie" ] || { head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z' >"$HOME/.erlang.cookie"; chmod 400 "$HOME/.erlang.cookie"; }
	echo '[rabbitmq_management].' >"$RABBITMQ_ENABLED_PLUGINS_FILE"
	cat >"$RUN/rabbitmq/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$AMQP_PORT
management.tcp.ip = 127.0.0.1
management.tcp.port = $AMQP_MGMT_PORT
loopback_users.guest = true
disk_free_limit.absolute = 200MB
vm_memory_high_watermark.relative = 0.4
EOF
	echo '[].' >"$RABBITMQ_ADVANCED_CONFIG_FILE"
	# epmd first, on its own port and loopback only.
	epmd -port "$EPMD_PORT" -address 127.0.0.1 -daemon 2>/dev/null || true
	nohup /usr/lib/rabbitmq/bin/rabbitmq-server >"$RUN/rabbitmq.log" 2>&1 &
	/usr/lib/rabbitmq/bin/rabbitmqctl -q wait --timeout 120 "$RABBITMQ_PID_FILE" >/dev/null 2>&1 ||
		{ tail -30 "$RUN/rabbitmq.log" >&2; die "rabbitmq did not start"; }
	wait_for rabbitmq 120 rabbit_up
	log "rabbitmq up on 127.0.0.1:$AMQP_PORT (management :$AMQP_MGMT_PORT)"
}

pg_data_dir() {
	# Postgres refuses to run as root, so it runs as the 'postgres' user, which must be able to
	# reach its data dir. When the checkout is not traversable by that user (e.g. under /root),
	# the data lives under /var/tmp and .run/postgres is a link to it.
	local want="$RUN/postgres"
	if [ -L "$want" ] || [ -d "$want" ]; then echo "$want"; return; fi
	mkdir -p "$RUN"
	if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$RUN" 2>/dev/null; then
		local alt
		alt="/var/tmp/seckill-pg-$(echo "$RUN" | md5sum | cut -c1-12)"
		mkdir -p "$alt"
		ln -s "$alt" "$want"
	else
		mkdir -p "$want"
	fi
	echo "$want"
}
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_up() { "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; }
start_pg() {
	if pg_up; then log "postgres already up on :$PG_PORT"; return; fi
	local data
	data=$(pg_data_dir)
	local real
	real=$(readlink -f "$data")
	[ "$(id -u)" = 0 ] && chown postgres:postgres "$real"
	chmod 700 "$real"
	if [ ! -f "$real/PG_VERSION" ]; then
		log "initdb in $real"
		local pw
		pw=$(mktemp); echo seckill >"$pw"; chmod 644 "$pw"
		as_pg "$PG_BIN/initdb" -D "$real" -U seckill --pwfile="$pw" -A scram-sha-256 -E UTF8 --no-locale >"$RUN/postgres-init.log" 2>&1 ||
			{ cat "$RUN/postgres-init.log" >&2; die "initdb failed"; }
		rm -f "$pw"
		cat >>"$real/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$real'
max_connections = 300
shared_buffers = 256MB
fsync = on
synchronous_commit = on
EOF
	fi
	touch "$RUN/postgres.log"; [ "$(id -u)" = 0 ] && chown postgres "$RUN/postgres.log" 2>/dev/null || true
	as_pg "$PG_BIN/pg_ctl" -D "$real" -l "$real/server.log" -w -t 60 start >/dev/null ||
		{ tail -30 "$real/server.log" >&2; die "postgres did not start"; }
	wait_for postgres 60 pg_up
	PGPASSWORD=seckill psql -h 127.0.0.1 -p "$PG_PORT" -U seckill -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='seckill'" | grep -q 1 ||
		PGPASSWORD=seckill psql -h 127.0.0.1 -p "$PG_PORT" -U seckill -d postgres -qc "CREATE DATABASE seckill" >/dev/null
	log "postgres up on 127.0.0.1:$PG_PORT"
}

stop_all() {
	if [ -f "$RUN/redis/redis.pid" ]; then
		redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || kill "$(cat "$RUN/redis/redis.pid")" 2>/dev/null || true
		rm -f "$RUN/redis/redis.pid"
	fi
	if [ -d "$RUN/rabbitmq" ]; then
		(rabbit_env; /usr/lib/rabbitmq/bin/rabbitmqctl -q stop >/dev/null 2>&1 || true)
		pkill -f "epmd -port $EPMD_PORT" 2>/dev/null || true
	fi
	if [ -e "$RUN/postgres" ]; then
		as_pg "$PG_BIN/pg_ctl" -D "$(readlink -f "$RUN/postgres")" -m fast -w stop >/dev/null 2>&1 || true
	fi
	log "stopped"
}

status() {
	redis_up && echo "redis     up   127.0.0.1:$REDIS_PORT" || echo "redis     down"
	rabbit_port_up && echo "rabbitmq  up   127.0.0.1:$AMQP_PORT" || echo "rabbitmq  down"
	pg_up && echo "postgres  up   127.0.0.1:$PG_PORT" || echo "postgres  down"
}

case "${1:-}" in
start)
	install_missing
	mkdir -p "$RUN"
	start_redis
	start_rabbit
	start_pg
	install_test_tools
	install_npm_tools
	write_env
	;;
env-file) mkdir -p "$RUN"; write_env ;;
test-tools) mkdir -p "$RUN"; install_test_tools; install_npm_tools ;;
stop) stop_all ;;
status) status ;;
env) print_env ;;
*) echo "usage: $0 start|stop|status|env|env-file|test-tools" >&2; exit 2 ;;
esac
