#!/bin/bash
# test_bridge_tls.sh: mq-admin bridge over amqps:// to a private RabbitMQ node with a TLS
# listener (a CA, a server certificate for localhost and a client certificate made here with
# openssl; the bridge verifies the broker, the broker verifies the bridge), the user and
# password from a credentials file. A CA that did not sign the broker's certificate, a client
# without a certificate, and amqps:// to the plain port or amqp:// to the TLS port fail with
# a one-line error and CLI.md's exit codes, and lose nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rabbit.sh"
command -v openssl >/dev/null || skip "openssl is not installed"
rabbit_tls || fail "cannot make the certificates"
rabbit_start || { echo "cannot start RabbitMQ" >&2; exit 1; }
C=$RABBIT_TLS
B=$T/storeb
mq-admin init >/dev/null && mq-admin -s "$B" init >/dev/null
mq-admin create src && mq-admin -s "$B" create dst --dedup-window 1h || fail "cannot create queues"
printf 'guest:guest\n' >"$T/cred"
tls_port=${AMQPS_URL##*:}; tls_port=${tls_port%%/*}
plain_port=${AMQP_URL##*:}; plain_port=${plain_port%%/*}
URL="amqps://localhost:$tls_port/%2F"   # no user or password: they come from the file
TLS=(--credentials "$T/cred" --cacert "$C/ca.pem" --cert "$C/client.pem" --key "$C/client.key")

# --- out and back over TLS
mq-send src -L "over tls" -p 5 "secret body" || fail "send"
expect_rc 0 mq-admin bridge out src --amqp "$URL" "${TLS[@]}" --exchange '' --routing-key tq --declare --once
expect_out ""
expect_rc 0 mq-admin -s "$B" bridge in dst --amqp "$URL" "${TLS[@]}" --from tq --once
expect_rc 0 mq-receive -s "$B" dst --json
jq -e '.body == "secret body" and .label == "over tls" and .priority == 5' "$T/out" >/dev/null ||
  fail "the message did not come back over TLS: $(cat "$T/out")"
# It went through the TLS listener: the broker saw a TLS connection (rabbitmqctl's ssl column).
mq-admin -s "$B" bridge in dst --amqp "$URL" "${TLS[@]}" --from tq --follow 2>"$T/follow.err" &
in_pid=$!
for ((i = 0; i < 100; i++)); do
  rmqctl -q list_connections ssl >"$T/conns" 2>/dev/null
  grep -q true "$T/conns" && break
  sleep 0.2
done
kill -TERM "$in_pid"
wait "$in_pid" || fail "bridge in --follow over TLS exited $?: $(cat "$T/follow.err")"
grep -q true "$T/conns" || fail "no TLS connection at the broker: $(cat "$T/conns")"

# --- what must fail, nothing lost
mq-send src "keep me" || fail "send keep"
mkdir "$T/other"
(cd "$T/other" && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=another CA" \
  -keyout ca.key -out ca.pem) >/dev/null 2>&1 || fail "openssl: another CA"
# A CA that did not sign the broker's certificate.
expect_rc 4 mq-admin bridge out src --amqp "$URL" --credentials "$T/cred" --cacert "$T/other/ca.pem" \
  --cert "$C/client.pem" --key "$C/client.key" --exchange '' --routing-key tq
expect_err_match "^mq-admin: amqps://guest@localhost:$tls_port/%2F: TLS: .*certificate.*--cacert.*\(MQ_ERROR_ACCESS_DENIED 0xC00E0025\)$"
# The broker's certificate names localhost, not 127.0.0.1.
expect_rc 4 mq-admin bridge out src --amqp "amqps://127.0.0.1:$tls_port/%2F" "${TLS[@]}" --exchange '' --routing-key tq
expect_err_match "TLS: .*127\.0\.0\.1.*MQ_ERROR_ACCESS_DENIED"
# amqps:// to the plain port: no TLS handshake there.
expect_rc 10 mq-admin bridge out src --amqp "amqps://localhost:$plain_port/%2F" "${TLS[@]}" --exchange '' --routing-key tq
expect_err_match "^mq-admin: amqps://guest@localhost:$plain_port/%2F: TLS handshake failed.*\(MQ_BROKER_UNAVAILABLE 0xE00E0020\)$"
# amqp:// to the TLS port: no AMQP there.
expect_rc 10 mq-admin bridge out src --amqp "amqp://localhost:$tls_port/%2F" --credentials "$T/cred" --exchange '' --routing-key tq --timeout 5s
expect_err_match "^mq-admin: amqp://guest@localhost:$tls_port/%2F: .*amqps://.*\(MQ_BROKER_UNAVAILABLE 0xE00E0020\)$"
# A client without a certificate: the broker refuses the handshake.
expect_rc 10 mq-admin bridge out src --amqp "$URL" --credentials "$T/cred" --cacert "$C/ca.pem" --exchange '' --routing-key tq
expect_err_match "TLS handshake failed.*MQ_BROKER_UNAVAILABLE"
# A CA file that does not exist.
expect_rc 2 mq-admin bridge out src --amqp "$URL" --credentials "$T/cred" --cacert "$T/nosuch.pem" --exchange '' --routing-key tq
expect_err_match "nosuch\.pem: cannot load the CA certificates.*E_INVALIDARG"
expect_rc 0 mq-peek src --json
jq -e '.body == "keep me" and .abort_count == 0' "$T/out" >/dev/null ||
  fail "the failed bridges changed the message: $(cat "$T/out")"
expect_rc 0 mq-admin stat src --json
jq -e '.messages == 1 and .locked == 0' "$T/out" >/dev/null || fail "src: $(cat "$T/out")"
# With the right CA it goes.
expect_rc 0 mq-admin bridge out src --amqp "$URL" "${TLS[@]}" --exchange '' --routing-key tq
expect_rc 0 mq-admin -s "$B" bridge in dst --amqp "$URL" "${TLS[@]}" --from tq
expect_rc 0 mq-receive -s "$B" dst
expect_out "keep me"
finish
