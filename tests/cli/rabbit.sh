# rabbit.sh: sourced by the bridge tests and bench/bridge.sh (after lib.sh or with $T set): a
# private RabbitMQ node for this test alone, started and stopped here.
#
#   rabbit_start      starts the node (exit 77, a skip, if rabbitmq-server is not installed);
#                     sets AMQP_URL (amqp://guest:guest@127.0.0.1:PORT/%2F) and RABBIT_NODE
#   rabbit_stop       stops it and its epmd (also run at exit, on failure too)
#   rabbit_restart    stops and starts it again, keeping its data (same ports)
#   rmqctl ARGS...    rabbitmqctl against the node
#   rabbit_tls        before rabbit_start: a TLS listener too, with a CA and a server
#                     certificate (for "localhost") made here with openssl, the node verifying
#                     client certificates against that CA; rabbit_start then sets AMQPS_URL
#                     (amqps://guest:guest@localhost:PORT/%2F), and RABBIT_TLS holds ca.pem,
#                     client.pem, client.key
#
# Everything is private: node name, ports on 127.0.0.1 (AMQP, distribution, epmd, the CLI
# tools' own distribution ports), data, logs, config and the Erlang cookie (under a temporary
# HOME). The scripts in /usr/lib/rabbitmq/bin are run directly: the wrappers in /usr/sbin
# would switch to the rabbitmq user and its system node. Debian's system node is never used.
RABBIT_BIN=/usr/lib/rabbitmq/bin
RABBIT_DIR=$T/rabbit
RABBIT_PID=

# A free TCP port on 127.0.0.1, away from those handed out before in this test, and below the
# kernel's range of ephemeral ports: rabbit_restart binds the same port again, and a port in
# that range may meanwhile be taken as the local port of any connection on the machine (a CI
# run saw the restarted node fail with eaddrinuse).
#
# Bridge tests run in parallel, each with its own node, and a port free when probed may be
# taken by another test's node a moment later (a CI run saw dist_port_already_used). So every
# port handed out here, and the range after it when asked (the CLI tools' distribution ports),
# is reserved machine-wide first: mkdir of $RABBIT_PORTS/PORT is atomic, and the directory
# names the reserving shell's pid so that a reservation left by a killed test is taken back.
RABBIT_USED=" "
RABBIT_PORTS=${TMPDIR:-/tmp}/mq-test-ports
reserve_port() { # PORT: 0 if this test now holds it
  local d=$RABBIT_PORTS/$1 owner
  if mkdir "$d" 2>/dev/null; then
    echo $$ >"$d/pid"
    return 0
  fi
  owner=$(cat "$d/pid" 2>/dev/null) || return 1
  [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null || return 1
  rm -rf "$d" # its owner is gone
  mkdir "$d" 2>/dev/null || return 1
  echo $$ >"$d/pid"
}
release_ports() {
  local p
  for p in $RABBIT_USED; do
    [ "$(cat "$RABBIT_PORTS/$p/pid" 2>/dev/null)" = $$ ] && rm -rf "${RABBIT_PORTS:?}/$p"
  done
  return 0
}
free_port() { # [SPAN]: a port and the SPAN-1 after it, all free and reserved
  local p q ok span=${1:-1} lo=32768
  read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
  ((lo > 12000)) || lo=32768
  mkdir -p "$RABBIT_PORTS" 2>/dev/null
  chmod 1777 "$RABBIT_PORTS" 2>/dev/null
  for _ in $(seq 200); do
    p=$((10000 + RANDOM % (lo - 10000 - span)))
    ok=1
    for ((q = p; q < p + span; q++)); do
      case $RABBIT_USED in *" $q "*) ok= && break ;; esac
      if (exec 3<>/dev/tcp/127.0.0.1/$q) 2>/dev/null || ! reserve_port "$q"; then
        ok= && break
      fi
      RABBIT_USED="$RABBIT_USED$q "
    done
    if [ -n "$ok" ]; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

rabbit_env() {
  export HOME=$RABBIT_DIR/home
  export RABBITMQ_NODENAME=$RABBIT_NODE
  export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$RABBIT_PORT
  export RABBITMQ_DIST_PORT=$RABBIT_DIST_PORT
  export RABBITMQ_CTL_DIST_PORT_MIN=$RABBIT_CTL_PORT
  export RABBITMQ_CTL_DIST_PORT_MAX=$((RABBIT_CTL_PORT + 10))
  export ERL_EPMD_PORT=$RABBIT_EPMD_PORT
  export ERL_EPMD_ADDRESS=127.0.0.1
  export RABBITMQ_MNESIA_BASE=$RABBIT_DIR/mnesia
  export RABBITMQ_LOG_BASE=$RABBIT_DIR/log
  export RABBITMQ_CONFIG_FILE=$RABBIT_DIR/rabbitmq.conf
  export RABBITMQ_ADVANCED_CONFIG_FILE=$RABBIT_DIR/advanced.config
  export RABBITMQ_ENABLED_PLUGINS_FILE=$RABBIT_DIR/enabled_plugins
  export RABBITMQ_PLUGINS_EXPAND_DIR=$RABBIT_DIR/plugins-expand
  export RABBITMQ_CONF_ENV_FILE=$RABBIT_DIR/rabbitmq-env.conf
  export RABBITMQ_PID_FILE=$RABBIT_DIR/pid
  export RABBITMQ_ALLOW_INPUT=
}

rmqctl() { "$RABBIT_BIN/rabbitmqctl" -n "$RABBIT_NODE" "$@"; }

rabbit_launch() {
  "$RABBIT_BIN/rabbitmq-server" >"$RABBIT_DIR/server.out" 2>&1 &
  RABBIT_PID=$!
  # await_startup fails at once while the node is not yet known to epmd: ask again.
  local i
  for ((i = 0; i < 120; i++)); do
    if "$RABBIT_BIN/rabbitmqctl" -n "$RABBIT_NODE" -q await_startup --timeout 30 \
        >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$RABBIT_PID" 2>/dev/null || break
    sleep 1
  done
  echo "rabbit.sh: the private RabbitMQ node did not start; its output:" >&2
  tail -n 30 "$RABBIT_DIR/server.out" >&2
  return 1
}

RABBIT_TLS=
rabbit_tls() {
  RABBIT_TLS=$RABBIT_DIR/tls
  mkdir -p "$RABBIT_TLS"
  (
    cd "$RABBIT_TLS" || exit 1
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mq test CA" \
      -keyout ca.key -out ca.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
    printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=mq test client" -keyout client.key \
      -out client.csr
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile client.ext -out client.pem
  ) >"$RABBIT_DIR/openssl.out" 2>&1 || {
    echo "rabbit.sh: openssl could not make the certificates:" >&2
    tail -n 20 "$RABBIT_DIR/openssl.out" >&2
    return 1
  }
}

rabbit_start() {
  if [ ! -x "$RABBIT_BIN/rabbitmq-server" ] || ! command -v erl >/dev/null; then
    echo "SKIP: rabbitmq-server is not installed (scripts/setup.sh installs it)" >&2
    exit 77
  fi
  mkdir -p "$RABBIT_DIR/home" "$RABBIT_DIR/mnesia" "$RABBIT_DIR/log"
  chmod 700 "$RABBIT_DIR/home"
  RABBIT_NODE=mqtest$$@localhost
  # free_port runs in this shell (not $(...)), so that RABBIT_USED keeps what it reserved.
  free_port >"$RABBIT_DIR/port" && RABBIT_PORT=$(<"$RABBIT_DIR/port") &&
    free_port >"$RABBIT_DIR/port" && RABBIT_DIST_PORT=$(<"$RABBIT_DIR/port") &&
    free_port >"$RABBIT_DIR/port" && RABBIT_EPMD_PORT=$(<"$RABBIT_DIR/port") &&
    free_port 11 >"$RABBIT_DIR/port" && RABBIT_CTL_PORT=$(<"$RABBIT_DIR/port") || {
    echo "rabbit.sh: no free ports" >&2
    return 1
  }
  cat >"$RABBIT_DIR/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$RABBIT_PORT
loopback_users = none
disk_free_limit.absolute = 1MB
vm_memory_high_watermark.relative = 0.8
log.console = false
log.file.level = warning
EOF
  if [ -n "$RABBIT_TLS" ]; then
    free_port >"$RABBIT_DIR/port" && RABBIT_TLS_PORT=$(<"$RABBIT_DIR/port") || return 1
    cat >>"$RABBIT_DIR/rabbitmq.conf" <<EOF
listeners.ssl.1 = 127.0.0.1:$RABBIT_TLS_PORT
ssl_options.cacertfile = $RABBIT_TLS/ca.pem
ssl_options.certfile = $RABBIT_TLS/server.pem
ssl_options.keyfile = $RABBIT_TLS/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = true
EOF
  fi
  echo '[].' >"$RABBIT_DIR/advanced.config"
  echo '[].' >"$RABBIT_DIR/enabled_plugins"
  : >"$RABBIT_DIR/rabbitmq-env.conf"
  rabbit_env
  trap 'rabbit_stop; release_ports; cleanup_rabbit_parent' EXIT
  rabbit_launch || return 1
  AMQP_URL="amqp://guest:guest@127.0.0.1:$RABBIT_PORT/%2F"
  export AMQP_URL
  [ -z "$RABBIT_TLS" ] || AMQPS_URL="amqps://guest:guest@localhost:$RABBIT_TLS_PORT/%2F"
}

# Stops the node (and epmd): politely first, then by pid.
rabbit_stop() {
  [ -n "$RABBIT_PID" ] || return 0
  timeout 60 "$RABBIT_BIN/rabbitmqctl" -n "$RABBIT_NODE" -q shutdown >/dev/null 2>&1 ||
    timeout 60 "$RABBIT_BIN/rabbitmqctl" -n "$RABBIT_NODE" -q stop >/dev/null 2>&1
  if kill -0 "$RABBIT_PID" 2>/dev/null; then
    local beam
    beam=$(cat "$RABBIT_DIR/pid" 2>/dev/null)
    [ -n "$beam" ] && kill -KILL "$beam" 2>/dev/null
    kill -KILL "$RABBIT_PID" 2>/dev/null
  fi
  wait "$RABBIT_PID" 2>/dev/null
  RABBIT_PID=
  epmd -port "$RABBIT_EPMD_PORT" -kill >/dev/null 2>&1
}

rabbit_restart() {
  rabbit_stop
  rabbit_launch
}

# Whatever the sourcing script had as its exit trap (lib.sh's or bg.sh's cleanup).
cleanup_rabbit_parent() {
  if declare -F cleanup >/dev/null; then cleanup; else rm -rf "$T"; fi
}
