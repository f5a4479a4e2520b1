#!/bin/bash
# test_bridge_refused.sh: a delivery that the mq store refuses (a body larger than the queue's
# maximum message size, a label too long, the queue's quota) neither blocks nor loops bridge
# in: it is rejected to the broker without requeue, so that the AMQP queue's dead-letter
# exchange takes it (mq(7) "Beyond one machine"), the bridge says so on stderr, and the
# deliveries around it are stored and acknowledged.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rabbit.sh"
rabbit_start || { echo "cannot start RabbitMQ" >&2; exit 1; }
mq-admin init >/dev/null || fail "init"
mq-admin create dst --max-message-size 100 --dedup-window 1h || fail "create dst"
# iq dead-letters to iq-dead through the default exchange.
amqp-declare-queue -u "$AMQP_URL" -d -q iq >/dev/null || fail "declare iq"
amqp-declare-queue -u "$AMQP_URL" -d -q iq-dead >/dev/null || fail "declare iq-dead"
rmqctl -q set_policy dlx '^iq$' '{"dead-letter-exchange":"","dead-letter-routing-key":"iq-dead"}' \
  --apply-to queues >/dev/null || fail "set the dead-letter policy"

# queue_count Q N: the broker's queue Q holds N messages (its counts lag: ask again).
queue_count() {
  local i
  for ((i = 0; i < 50; i++)); do
    rmqctl -q list_queues name messages >"$T/queues"
    grep -Eq "^$1[[:space:]]+$2\$" "$T/queues" && return 0
    sleep 0.2
  done
  fail "$1 does not hold $2 messages: $(cat "$T/queues")"
}

long_label=$(printf 'L%.0s' $(seq 300))
big=$(printf 'B%.0s' $(seq 200))
pub() { amqp-publish -u "$AMQP_URL" -r iq -p "$@" || fail "amqp-publish $*"; }
pub -b "first"
pub -b "$big"
pub -b "middle"
pub -H "x-mq-label: $long_label" -b "long label"
pub -b "last"
queue_count iq 5

expect_rc 0 timeout 60 mq-admin bridge in dst --amqp "$AMQP_URL" --from iq --once
grep -c 'rejected to the broker' "$T/err" | grep -qx 2 || fail "two refusals should be told: $(cat "$T/err")"
grep -q "^mq-admin: dst: refused a message from iq (message_id none): body of 200 bytes exceeds .*; rejected to the broker" "$T/err" ||
  fail "the size refusal is not told: $(cat "$T/err")"
grep -q "label longer than" "$T/err" || fail "the label refusal is not told: $(cat "$T/err")"
expect_rc 0 mq-receive dst --all --template '{body}\n'
expect_out $'first\nmiddle\nlast\n'
queue_count iq 0
queue_count iq-dead 2
expect_rc 0 amqp-get -u "$AMQP_URL" -q iq-dead
expect_out "$big"
expect_rc 0 amqp-get -u "$AMQP_URL" -q iq-dead
expect_out "long label"

# The queue's quota: what fits is stored, the rest goes to the dead-letter exchange, and
# --follow goes on with what comes next.
mq-admin set dst --quota 600 || fail "set quota"
for i in 1 2 3 4 5 6 7 8; do pub -b "q$i-$(printf 'x%.0s' $(seq 60))"; done
mq-admin bridge in dst --amqp "$AMQP_URL" --from iq --follow 2>"$T/follow.err" &
in_pid=$!
queue_count iq 0
stored=$(mq-admin stat dst --json | jq .messages)
[ "$stored" -ge 1 ] && [ "$stored" -lt 8 ] || fail "the quota let $stored of 8 messages in"
queue_count iq-dead $((8 - stored))
mq-receive dst --all -l >/dev/null || fail "empty dst"
pub -b "after the quota"
until_true 20 sh -c '[ "$(mq-admin stat dst --json | jq .messages)" = 1 ]' ||
  fail "bridge in did not go on after the refusals"
kill -TERM "$in_pid"
wait "$in_pid" || fail "bridge in --follow exited $?: $(cat "$T/follow.err")"
grep -q "queue quota .* would be exceeded.*rejected to the broker" "$T/follow.err" ||
  fail "the quota refusal is not told: $(cat "$T/follow.err")"
expect_rc 0 mq-receive dst
expect_out "after the quota"
expect_rc 0 mq-admin stat dst --json
jq -e '.messages == 0 and .locked == 0' "$T/out" >/dev/null || fail "dst: $(cat "$T/out")"
finish
