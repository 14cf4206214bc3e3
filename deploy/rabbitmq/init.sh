#!/bin/sh
# Entrypoint of the compose file's RabbitMQ: one user per service instead of guest, with the
# passwords from the environment, then the image's own entrypoint.
#
#   seckill-admin     the management UI (administrator)
#   seckill-gateway   the gateways' outbox relays: declare the topology and publish orders
#   seckill-backend   the backend: declare the topology and consume orders
#
# The users are written as a definitions file that RabbitMQ loads at every boot
# (load_definitions), so a changed password takes effect on restart. The file holds the
# passwords: it is private to the rabbitmq user and lives in the container only.
#
#   init.sh --print            print the definitions (the test imports them into a real broker)
#   init.sh rabbitmq-server    write them, then run the image's docker-entrypoint.sh
set -eu

: "${SECKILL_AMQP_ADMIN_PASSWORD:?set SECKILL_AMQP_ADMIN_PASSWORD}"
: "${SECKILL_AMQP_GATEWAY_PASSWORD:?set SECKILL_AMQP_GATEWAY_PASSWORD}"
: "${SECKILL_AMQP_BACKEND_PASSWORD:?set SECKILL_AMQP_BACKEND_PASSWORD}"
VHOST=${SECKILL_AMQP_VHOST:-/}
DEFS=${SECKILL_RABBITMQ_DEFINITIONS:-/etc/rabbitmq/seckill-definitions.json}

# json_string: a JSON string literal of $1 (backslashes and quotes escaped; passwords with
# control characters are refused).
json_string() {
	case $1 in
	*[[:cntrl:]]*) echo "init.sh: a password holds a control character" >&2; exit 1 ;;
	esac
	printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
}

# Every name of the topology starts with "seckill" (contract/amqp.go): the exchange
# "seckill", the dead-letter exchange and queues "seckill.*"; neither service may touch anything
# else. The backend may not write to the "seckill" exchange, so it cannot publish orders. The
# gateway needs read on the queues: both services declare the topology, and RabbitMQ checks a
# queue's dead-letter permissions (read on the queue) when it is declared.
definitions() {
	cat <<EOF
{
  "users": [
    {"name": "seckill-admin", "password": $(json_string "$SECKILL_AMQP_ADMIN_PASSWORD"), "tags": "administrator"},
    {"name": "seckill-gateway", "password": $(json_string "$SECKILL_AMQP_GATEWAY_PASSWORD"), "tags": ""},
    {"name": "seckill-backend", "password": $(json_string "$SECKILL_AMQP_BACKEND_PASSWORD"), "tags": ""}
  ],
  "vhosts": [{"name": $(json_string "$VHOST")}],
  "permissions": [
    {"user": "seckill-admin", "vhost": $(json_string "$VHOST"), "configure": ".*", "write": ".*", "read": ".*"},
    {"user": "seckill-gateway", "vhost": $(json_string "$VHOST"), "configure": "^seckill(\\\\..*)?\$", "write": "^seckill(\\\\..*)?\$", "read": "^seckill(\\\\..*)?\$"},
    {"user": "seckill-backend", "vhost": $(json_string "$VHOST"), "configure": "^seckill(\\\\..*)?\$", "write": "^seckill\\\\..*\$", "read": "^seckill(\\\\..*)?\$"}
  ]
}
EOF
}

if [ "${1:-}" = --print ]; then
	definitions
	exit 0
fi

umask 077
definitions >"$DEFS"
chown rabbitmq:rabbitmq "$DEFS" 2>/dev/null || true
mkdir -p /etc/rabbitmq/conf.d
echo "load_definitions = $DEFS" >/etc/rabbitmq/conf.d/90-seckill.conf
chmod 644 /etc/rabbitmq/conf.d/90-seckill.conf
exec docker-entrypoint.sh "$@"
