#!/bin/bash
# test_bridge_library.sh: rabbitmq-c is loaded when a bridge starts, not at start-up: mq-admin
# does not need librabbitmq.so.4 to start, every other subcommand works without it, and
# without it `mq-admin bridge` exits 10 with a one-line error, nothing touched. The library
# is hidden in a private mount namespace (unshare -m, as root), skipped where that is denied.
. "$(dirname "$0")/lib.sh"
ldd "$MQ_BIN/mq-admin" >"$T/ldd" || fail "ldd mq-admin"
grep -q librabbitmq "$T/ldd" && fail "mq-admin is linked with librabbitmq: $(grep rabbit "$T/ldd")"
grep -Eq 'libssl|libcrypto' "$T/ldd" && fail "mq-admin loads OpenSSL at start-up: $(grep -E 'ssl|crypto' "$T/ldd")"

lib=$(ldconfig -p | awk '/librabbitmq\.so\.4 /{ print $NF; exit }')
[ -n "$lib" ] || skip "librabbitmq.so.4 is not installed"
lib=$(readlink -f "$lib")
[ "$(id -u)" = 0 ] || skip "hiding the library needs root (a mount namespace)"
unshare -m true 2>/dev/null || skip "unshare -m is not permitted here"

mq-admin init >/dev/null && mq-admin create src || fail "init"
mq-send src "stays" || fail "send"
# nolib CMD...: CMD with librabbitmq.so.4 replaced by an empty file.
nolib() { unshare -m sh -c 'mount --bind /dev/null "$0" && exec "$@"' "$lib" "$@"; }
expect_rc 0 nolib mq-admin list
grep -qx src "$T/out" || fail "list without the library: $(cat "$T/out")"
expect_rc 10 nolib mq-admin bridge out src --amqp amqp://127.0.0.1:1/%2F --exchange x
expect_err_match '^mq-admin: cannot load the RabbitMQ client library \(install librabbitmq4\): .*librabbitmq\.so\.4.* \(MQ_ERROR 0xC00E0001\)$'
expect_rc 10 nolib mq-admin bridge in src --amqp amqp://127.0.0.1:1/%2F --from q
expect_err_match '^mq-admin: cannot load the RabbitMQ client library'
expect_rc 0 mq-admin stat src --json
jq -e '.messages == 1 and .locked == 0' "$T/out" >/dev/null || fail "src: $(cat "$T/out")"
finish
