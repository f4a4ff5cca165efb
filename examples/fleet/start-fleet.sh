#!/usr/bin/env bash
# Starts three `mcpmux gateway --http` replicas (a, b, c) sharing one session
# key, and HAProxy (default) or nginx (--nginx) in front of them, on
# loopback; runs until Ctrl-C, then stops them all (each replica drains).
#
# usage: examples/fleet/start-fleet.sh [--nginx] [CONFIG]
#   CONFIG   the mcpmux config the replicas serve (default: examples/mcpmux.toml)
# env:
#   MCPMUX          the mcpmux binary (default: mcpmux on PATH)
#   HAPROXY, NGINX  the balancer binaries (default: on PATH)
#   FLEET_PORT      the balancer's port (default 8700); replicas use the
#                   next three (nginx.conf as shipped: 8700-8703)
#   FLEET_DIR       where the key file, logs and nginx's files go
#                   (default: a new temporary directory)
#
# Clients connect to http://127.0.0.1:$FLEET_PORT/mcp.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
balancer=haproxy
if [ "${1:-}" = "--nginx" ]; then balancer=nginx; shift; fi
CONFIG="${1:-$HERE/../mcpmux.toml}"
MCPMUX="${MCPMUX:-mcpmux}"
PORT="${FLEET_PORT:-8700}"
DIR="${FLEET_DIR:-$(mktemp -d)}"
mkdir -p "$DIR"

# One key for every replica: 32 random bytes under the id k1 (0600).
KEYS="$DIR/session.key"
if [ ! -f "$KEYS" ]; then
  (umask 077 && printf 'k1 %s\n' "$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')" >"$KEYS")
fi

pids=()
stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM

i=0
for name in a b c; do
  i=$((i + 1))
  addr="127.0.0.1:$((PORT + i))"
  "$MCPMUX" --config "$CONFIG" gateway --http "$addr" --replica "$name" \
    --session-key-file "$KEYS" --drain-seconds 10 2>"$DIR/replica-$name.log" &
  pids+=($!)
  export "MCPMUX_REPLICA_${name^^}=$addr"
done

export MCPMUX_FLEET_BIND="127.0.0.1:$PORT"
if [ "$balancer" = haproxy ]; then
  "${HAPROXY:-haproxy}" -db -f "$HERE/haproxy.cfg" &
else
  # nginx.conf names 8700-8703; other ports are written into a copy.
  sed -e "s/127\.0\.0\.1:8700/127.0.0.1:$PORT/" \
      -e "s/127\.0\.0\.1:8701/$MCPMUX_REPLICA_A/g" \
      -e "s/127\.0\.0\.1:8702/$MCPMUX_REPLICA_B/g" \
      -e "s/127\.0\.0\.1:8703/$MCPMUX_REPLICA_C/g" \
      "$HERE/nginx.conf" >"$DIR/nginx.conf"
  "${NGINX:-nginx}" -p "$DIR" -c "$DIR/nginx.conf" &
fi
pids+=($!)
echo "fleet: http://127.0.0.1:$PORT/mcp ($balancer; replicas a, b, c; logs in $DIR)" >&2
wait
