#!/bin/bash
# test_bridge_basic.sh: mq-admin bridge out and in against a private RabbitMQ node: messages
# go out and come back with their properties (conversation included) and binary bodies; a
# republish of the same message_id is stored once; a message from another AMQP producer comes
# in with its properties; wrong URL, credentials, exchange and queue fail with CLI.md's exit
# codes and lose nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rabbit.sh"
rabbit_start || { echo "cannot start RabbitMQ" >&2; exit 1; }

# Two stores, as on two machines: src in $STORE, dst in $B.
B=$T/storeb
mq-admin init >/dev/null && mq-admin -s "$B" init >/dev/null
mq-admin create src && mq-admin -s "$B" create dst --dedup-window 1h || fail "cannot create queues"

# rq_count N: the broker's queue rq holds N messages (its counts lag a little: ask again).
rq_count() {
  local i
  for ((i = 0; i < 50; i++)); do
    rmqctl -q list_queues name messages type >"$T/queues"
    grep -Eq "^rq[[:space:]]+$1[[:space:]]+quorum" "$T/queues" && return 0
    sleep 0.2
  done
  fail "rq is not a quorum queue with $1 messages: $(cat "$T/queues")"
}

# --- out and back, every property and a binary body
head -c 3000 /dev/urandom >"$T/blob"
mq-admin create admin && mq-send src -f "$T/blob" --body-type bytes -p 6 -L "binary €" --app 4294967295 \
  -c 0123456789012345678901234567890123456789 --response-queue replies --ttbr 1h \
  --journal --deadletter --admin-queue admin --ack full-receive || fail "send binary"
conv=$(mq-send src --conversation new --service //s --contract //c "conv 1") || fail "conversation"
mq-send src --conversation "$conv" "conv 2" && mq-send src --conversation "$conv" "conv 3" ||
  fail "conversation sends"
mq-peek src --all --json | jq -c 'del(.id, .lookup_id, .queue, .delivery_count, .arrived_time,
  .message_enqueue_time, .queuing_order, .destination_queue)' | sort >"$T/before"

expect_rc 0 mq-admin bridge out src --amqp "$AMQP_URL" --exchange mqx --routing-key rq --declare --once
expect_out ""
expect_rc 0 mq-admin stat src --json
[ "$(jq .messages "$T/out")" = 0 ] || fail "src is not empty after bridge out: $(cat "$T/out")"
rmqctl -q list_queues name type >"$T/queues"
grep -Eq '^rq[[:space:]]+quorum' "$T/queues" || fail "--declare made no quorum queue rq: $(cat "$T/queues")"

expect_rc 0 mq-admin -s "$B" bridge in dst --amqp "$AMQP_URL" --from rq --once
mq-peek -s "$B" dst --all --json | jq -c 'del(.id, .lookup_id, .queue, .delivery_count, .arrived_time,
  .message_enqueue_time, .queuing_order, .destination_queue)' | sort >"$T/after"
diff "$T/before" "$T/after" >"$T/diff" || fail "properties changed on the way: $(head -c 2000 "$T/diff")"
mq-receive -s "$B" dst --id "$(mq-peek -s "$B" dst --all --json | jq -r 'select(.label == "binary €") | .id')" >"$T/blob.back" ||
  fail "receive the binary message"
cmp -s "$T/blob" "$T/blob.back" || fail "the binary body changed"
# The conversation's order survives: a group receive gives its messages in sequence.
expect_rc 0 mq-receive -s "$B" dst --conversation "$conv" --top 3 --template '{body}\n'
expect_out $'conv 1\nconv 2\nconv 3\n'
rq_count 0

# --- a republish (a crash between confirm and removal) is stored once
mq-admin -s "$B" purge dst >/dev/null
mq-send src "once" || fail "send once"
mq-admin export src >"$T/once.json" || fail "export"
expect_rc 0 mq-admin bridge out src --amqp "$AMQP_URL" --exchange mqx --routing-key rq
# The same message (same id) published again, as a bridge killed after the confirm would.
mq-admin import src <"$T/once.json" || fail "import"
expect_rc 0 mq-admin bridge out src --amqp "$AMQP_URL" --exchange mqx --routing-key rq
rq_count 2
expect_rc 0 mq-admin -s "$B" bridge in dst --amqp "$AMQP_URL" --from rq
expect_rc 0 mq-admin -s "$B" stat dst --json
[ "$(jq .messages "$T/out")" = 1 ] || fail "a republished message was stored $(jq .messages "$T/out") times"

# --- a message from another producer
mq-admin -s "$B" purge dst >/dev/null
amqp-publish -u "$AMQP_URL" -r rq -C application/json -E gzip -H "tenant: acme" \
  -b '{"n":7}' || fail "amqp-publish foreign"
expect_rc 0 mq-admin -s "$B" bridge in dst --amqp "$AMQP_URL" --from rq
expect_rc 0 mq-peek -s "$B" dst --json
jq -e '.body_type_name == "json" and .body == "{\"n\":7}" and .delivery == "express"' "$T/out" >/dev/null ||
  fail "foreign message properties: $(cat "$T/out")"
ext=$(jq -r '.extension_base64' "$T/out" | base64 -d)
[ "$(printf '%s' "$ext" | jq -r '.amqp.headers.tenant + " " + .amqp.content_encoding')" = "acme gzip" ] ||
  fail "unmapped AMQP properties are not carried in the extension: $ext"

# --- errors: exit codes of CLI.md, nothing lost
mq-admin -s "$B" purge dst >/dev/null
mq-send src "keep me" || fail "send keep"
port=${AMQP_URL##*:}; port=${port%%/*}
expect_rc 4 mq-admin bridge out src --amqp "amqp://guest:wrong@127.0.0.1:$port/%2F" --exchange mqx
expect_err_match '^mq-admin: amqp://guest@127\.0\.0\.1:[0-9]+/%2F: .*ACCESS_REFUSED.*\(MQ_ERROR_ACCESS_DENIED 0xC00E0025\)$'
grep -q wrong "$T/err" && fail "the password appears in the error"
printf 'guest:wrong\n' >"$T/cred"
expect_rc 4 mq-admin -s "$B" bridge in dst --amqp "amqp://127.0.0.1:$port/%2F" --credentials "$T/cred" --from rq
printf 'guest:guest\n' >"$T/cred"
expect_rc 10 mq-admin bridge out src --amqp "amqp://guest:guest@127.0.0.1:1/%2F" --exchange mqx
expect_err_match 'cannot connect: .*\(MQ_BROKER_UNAVAILABLE 0xE00E0020\)$'
expect_rc 2 mq-admin bridge out src --amqp "http://example" --exchange mqx
expect_err_match 'not an AMQP URL.*E_INVALIDARG'
expect_rc 3 mq-admin bridge out src --amqp "$AMQP_URL" --exchange missing-x
expect_err_match "no exchange 'missing-x'.*MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003"
expect_rc 3 mq-admin bridge out src --amqp "$AMQP_URL" --exchange '' --routing-key no-such-queue
expect_err_match "routed a message with routing key 'no-such-queue' to no queue.*MQ_ERROR_QUEUE_NOT_FOUND"
expect_rc 3 mq-admin -s "$B" bridge in dst --amqp "$AMQP_URL" --from no-such-queue
expect_err_match "no queue 'no-such-queue'.*MQ_ERROR_QUEUE_NOT_FOUND"
expect_rc 3 mq-admin bridge out nosuch --amqp "$AMQP_URL" --exchange mqx
expect_rc 0 mq-peek src --json
jq -e '.body == "keep me" and .abort_count == 0' "$T/out" >/dev/null || fail "the failed bridges changed the message: $(cat "$T/out")"
expect_rc 0 mq-admin stat src --json
[ "$(jq .locked "$T/out")" = 0 ] || fail "a message is left Locked"
# And with the right credentials from the file, it goes.
expect_rc 0 mq-admin bridge out src --amqp "amqp://127.0.0.1:$port/%2F" --credentials "$T/cred" --exchange mqx --routing-key rq
expect_rc 0 mq-admin -s "$B" bridge in dst --amqp "amqp://127.0.0.1:$port/%2F" --credentials "$T/cred" --from rq
expect_rc 0 mq-receive -s "$B" dst
expect_out "keep me"

# The broker's URL from MQ_AMQP_URL; bridge in --declare makes its quorum queue.
mq-send src "by env" || fail "send by env"
MQ_AMQP_URL=$AMQP_URL expect_rc 0 mq-admin bridge out src --exchange '' --routing-key dq2 --declare
MQ_AMQP_URL=$AMQP_URL expect_rc 0 mq-admin -s "$B" bridge in dst --from dq3 --declare --once
rmqctl -q list_queues name type >"$T/queues"
grep -Eq '^dq3[[:space:]]+quorum' "$T/queues" || fail "bridge in --declare made no quorum queue dq3: $(cat "$T/queues")"
MQ_AMQP_URL=$AMQP_URL expect_rc 0 mq-admin -s "$B" bridge in dst --from dq2 --once
expect_rc 0 mq-receive -s "$B" dst
expect_out "by env"
# A --declare that conflicts with what the broker has (a classic queue of that name): the
# broker refuses (exit 5), and nothing moves.
amqp-declare-queue -u "$AMQP_URL" -q classic -d >/dev/null || fail "amqp-declare-queue"
mq-send src "stays" || fail "send stays"
expect_rc 5 mq-admin bridge out src --amqp "$AMQP_URL" --exchange '' --routing-key classic --declare
expect_err_match 'PRECONDITION_FAILED.*MQ_BROKER_REFUSED'
expect_rc 5 mq-admin -s "$B" bridge in dst --amqp "$AMQP_URL" --from classic --declare
expect_err_match 'PRECONDITION_FAILED.*MQ_BROKER_REFUSED'
expect_rc 0 mq-peek src --json
jq -e '.body == "stays" and .abort_count == 0' "$T/out" >/dev/null || fail "the refused bridge changed the message: $(cat "$T/out")"

finish
