#!/bin/bash
# Delivery and commitment receipts over HTTP ([MC-MQSRM] 2.2.6.2, 2.2.6.3): a message that
# came over HTTP and asks for acknowledgements gets them as receipts posted by the forward of
# the link that reaches its sender (durable: they wait in out;LINK); a commitment receipt
# posted to a queue of this store is stored there as the acknowledgement MSMQ makes of it
# (ACK_RECEIVE, or the NACK), once however often it is posted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

command -v curl >/dev/null || skip "curl is not installed"
FIX=$MQ_SRC/tests/fixtures/srmp

ms() { date +%s%3N; }
sleep_until() {
  local d=$(($1 - $(ms)))
  ((d <= 0)) || sleep "$((d / 1000)).$(printf %03d $((d % 1000)))"
}

# serve_on STORE: a serve of STORE on a free port: $PORT.
serve_on() {
  start mq-admin --store "$1" serve --http 127.0.0.1:0
  PORT=
  until_true 10 grep -qs "listening on" "$T/bg.$PID.err" || fail "serve did not start"
  PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/bg.$PID.err")
}

FAR=$T/far
expect_rc 0 mq-admin init
expect_rc 0 mq-admin create acks
expect_rc 0 mq-admin --store "$FAR" init
expect_rc 0 mq-admin --store "$FAR" create q
serve_on "$MQ_STORE"
HERE=$PORT
serve_on "$FAR"
FARPORT=$PORT
expect_rc 0 mq-admin link add far --url "http://127.0.0.1:$FARPORT/msmq" \
  --receipts-url "http://127.0.0.1:$HERE/msmq/private\$/order_queue\$"
# The far store's way back: the receipts go through it.
expect_rc 0 mq-admin --store "$FAR" link add back --url "http://127.0.0.1:$HERE/msmq"

expect_rc 0 mq-send --ack full-reach-queue,full-receive --admin-queue acks -L one far:q one
one_id=$(mq-peek 'out;far' --json | jq -r .id)
expect_rc 0 mq-send --ack nack-receive --admin-queue acks --ttbr 3s -L two far:q two
sent=$(ms)
two_id=$(mq-peek 'out;far' --json -n 2 | jq -r .id | tail -n1)
expect_rc 0 mq-admin forward far --once
# Here: the 200 ended "one" with its ACK_REACH_QUEUE.
[ "$(mq-peek acks --json --all | jq -r .class)" = ack_reach_queue ] ||
  fail "no ACK_REACH_QUEUE here for the stored message: $(mq-peek acks --json --all)"
# There: the admin queue is this store's serve, reached through the link back.
admin=$(mq-peek --store "$FAR" q --json | jq -r .admin_queue)
[ "$admin" = "DIRECT=http://127.0.0.1:$HERE/msmq/private\$/acks" ] || fail "admin queue there: $admin"
# The delivery receipt waits in out;back (serve did not post one of its own).
[ "$(mq-peek --store "$FAR" 'out;back' --json --all | jq -r '[.class, .destination_queue] | join(" ")')" = "ack_reach_queue acks" ] ||
  fail "out;back: $(mq-peek --store "$FAR" 'out;back' --json --all)"

# "one" received there (ACK_RECEIVE), "two" expires there (its NACK).
[ "$(mq-receive --store "$FAR" q)" = one ] || fail "the far store did not have one"
sleep_until $((sent + 3300))
expect_rc 0 mq-admin --store "$FAR" stat q
[ "$(mq-admin --store "$FAR" stat q --json | jq -r .messages)" = 0 ] || fail "two did not expire"
[ "$(mq-peek --store "$FAR" 'out;back' --json --all | jq -r .class | tr '\n' ' ')" = "ack_reach_queue ack_receive nack_receive_timeout " ] ||
  fail "out;back: $(mq-peek --store "$FAR" 'out;back' --json --all | jq -c '[.class, .correlation_id]')"

# The far forward posts them (their elements: srmp_test); serve here stores the commitments.
expect_rc 0 mq-admin --store "$FAR" forward back --once
[ "$(mq-admin --store "$FAR" stat 'out;back' --json | jq -r .messages)" = 0 ] || fail "out;back is not empty"
until_true 10 sh -c '[ "$(mq-admin stat acks --json | jq -r .messages)" = 3 ]' ||
  fail "acks holds $(mq-admin stat acks --json | jq -r .messages) messages, not 3"
got=$(mq-receive acks --json --all | jq -c '[.class, .correlation_id]' | tr '\n' ' ')
corr() { printf '%s' "$1" | sed 's/[{}-]//g; s/\\\(.*\)/ \1/' | {
  read -r g n
  printf '%s%08x' "$(printf '%s' "$g" | tr 'A-F' 'a-f')" "$n"
}; }
want="[\"ack_reach_queue\",\"$(corr "$one_id")\"] [\"ack_receive\",\"$(corr "$one_id")\"] [\"nack_receive_timeout\",\"$(corr "$two_id")\"] "
[ "$got" = "$want" ] || fail "the acknowledgements here: $got, not $want"

# The spec's commitment receipt (section 4.3) posted to a queue of this store, twice: one
# ACK_RECEIVE, its correlation id the message it names.
expect_rc 0 mq-admin create receipts
for _ in 1 2; do
  code=$(sed '1,/^\r$/d' "$FIX/4.3-commitment-receipt.txt" |
    curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: text/xml' -H 'SOAPAction: "MSMQMessage"' \
      --data-binary @- "http://127.0.0.1:$HERE/msmq/private\$/receipts")
  [ "$code" = 200 ] || fail "the sample receipt was answered $code"
done
[ "$(mq-receive receipts --json --all | jq -c '[.class, .class_value, .correlation_id]')" = '["ack_receive",16384,"0000000000000000000000000000000000000001"]' ] ||
  fail "the sample's acknowledgement: $(mq-peek receipts --json --all)"
finish
