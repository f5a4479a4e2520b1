#!/bin/bash
# Links and remote queues (issue 14): mq-admin link add/list/stat/set/delete; mq-send LINK:QUEUE
# and DIRECT=OS:LINK\private$\QUEUE store into out;LINK with the destination recorded (visible
# in stat and peek) while the far store is not reachable; mq-admin forward --once moves them:
# every property preserved, a --tx batch one transaction there with its Eod flags, priorities
# kept, ACK_REACH_QUEUE to the admin queue here on arrival there; far-side refusals (no such
# queue, disabled, quota, too large, non-transactional message to a transactional queue and
# the reverse) come
# back as their NACK class and the dead-letter queue here; --ttrq expiry in out;LINK is
# NACK_REACH_QUEUE_TIMEOUT; both stores pass check.
. "$(dirname "$0")/lib.sh"

B=$T/B
count() { mq-admin "$@" --json | jq -s 'map(.messages) | add // 0'; }

expect_rc 0 mq-admin create adminq
expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create dest
expect_rc 0 mq-admin --store "$B" create dest2
expect_rc 0 mq-admin --store "$B" create txq --transactional
expect_rc 0 mq-admin --store "$B" create small --quota 2k
expect_rc 0 mq-admin --store "$B" create tiny --max-message-size 10
expect_rc 0 mq-admin --store "$B" create off
expect_rc 0 mq-admin --store "$B" set off --status off

# --- links -----------------------------------------------------------------------------------------
expect_rc 0 mq-admin link add b --via "exit 3"
expect_rc 5 mq-admin link add b --via "x"
expect_err_match '^mq-admin: b: the link exists'
expect_rc 2 mq-admin link add 'bad name' --via x
expect_rc 2 mq-admin link add c
expect_rc 3 mq-admin link set nosuch --via x
expect_rc 0 mq-admin link list
grep -Eq '^b +0 +0 +- +- +-$' "$T/out" || fail "link list: $(cat "$T/out")"
expect_rc 0 mq-admin stat 'out;b' --json
[ "$(jq .messages "$T/out")" = 0 ] || fail "a new link's outgoing queue is not empty"

# --- sends while the far side is unreachable ---------------------------------------------------
expect_rc 0 mq-send b:dest hello
expect_rc 0 mq-send 'DIRECT=OS:b\private$\dest' direct
expect_rc 0 mq-send -p 6 -L lab --app 7 -c 0102030405060708091011121314151617181920 \
  --response-queue replies b:dest2 p6
printf 'a\nb\nc\n' | mq-send --tx -l b:txq || fail "mq-send --tx -l to a remote queue"
expect_rc 0 mq-send --ack full-reach-queue --admin-queue adminq b:dest acked
expect_rc 3 mq-send nolink:dest x
expect_err_match '^mq-send: nolink: no such link'
expect_rc 2 mq-send 'b:bad;sub' x
expect_rc 2 mq-send 'b:' x
[ "$(count stat 'out;b')" = 7 ] || fail "out;b holds $(count stat 'out;b'), expected 7"
expect_rc 0 mq-peek 'out;b' --all --json
[ "$(jq -r .destination_queue "$T/out" | tr '\n' ' ')" = "dest dest dest2 txq txq txq dest " ] ||
  fail "destinations in out;b: $(jq -r .destination_queue "$T/out" | tr '\n' ' ')"
# The forward fails while the link's command fails: nothing is lost.
expect_rc 10 mq-admin forward b --once --retry 300ms
grep -q 'exited before answering (exit status 3)' "$T/err" || fail "forward of a failing link: $(cat "$T/err")"
tail -n1 "$T/err" | grep -q 'gave up after' || fail "forward gives up: $(tail -n1 "$T/err")"
[ "$(count stat 'out;b')" = 7 ] || fail "a failed forward changed out;b"
expect_rc 0 mq-admin link stat b
grep -q '^last error: .*exit status 3' "$T/out" || fail "link stat after a failure: $(cat "$T/out")"

# --- forward ----------------------------------------------------------------------------------------
expect_rc 0 mq-admin link set b --via "mq-admin --store '$B' accept"
expect_rc 0 mq-admin forward b --once
[ "$(count stat 'out;b')" = 0 ] || fail "out;b not empty after forward"
expect_rc 0 mq-receive --store "$B" dest --all -l
expect_out $'hello\ndirect\nacked\n'
expect_rc 0 mq-peek --store "$B" dest2 --all --json
[ "$(jq -c '[.body, .priority, .label, .app_specific, .correlation_id, .response_queue]' "$T/out" | head -1)" = \
  '["p6",6,"lab",7,"0102030405060708091011121314151617181920","replies"]' ] ||
  fail "properties after transfer: $(head -1 "$T/out")"
[ "$(jq -r .source_qm_guid "$T/out" | sort -u)" != "" ] || fail "source GUID missing"
# The --tx batch: one transaction there, with its Eod flags, at priority 0.
expect_rc 0 mq-peek --store "$B" txq --all --json
[ "$(jq -c '[.body, .eod_first, .eod_last, .priority]' "$T/out" | tr -d '\n')" = \
  '["a",true,false,0]["b",false,false,0]["c",false,true,0]' ] || fail "tx batch after transfer: $(cat "$T/out")"
[ "$(jq -r .xact_id "$T/out" | sort -u | wc -l)" = 1 ] || fail "one xact id for the tx batch"
expect_rc 0 mq-receive adminq --json
[ "$(jq -r .class "$T/out")" = ack_reach_queue ] || fail "ACK_REACH_QUEUE: $(cat "$T/out")"
[[ $(jq -r .correlation_id "$T/out") =~ ^[0-9a-f]{40}$ ]] || fail "ACK_REACH_QUEUE without the id of its message"
expect_rc 0 mq-admin link stat b
grep -q '^acknowledged: *7 (0 refused)' "$T/out" || fail "link stat after forward: $(cat "$T/out")"
grep -q '^last ack: *[0-9]' "$T/out" || fail "link stat last ack: $(cat "$T/out")"

# --- far-side refusals: NACK classes and dead letters here --------------------------------------
nack() {  # nack QUEUE BODY [mq-send options]: sends, forwards, prints the NACK's class
  local q=$1 body=$2
  shift 2
  mq-send --deadletter --ack nack-reach-queue --admin-queue adminq "$@" "b:$q" "$body" ||
    fail "send to b:$q"
  mq-admin forward b --once || fail "forward after sending to b:$q"
  mq-receive adminq --json | jq -r .class
}
[ "$(nack nosuch x)" = nack_bad_dst_q ] || fail "no such queue: not NACK_BAD_DST_Q"
[ "$(nack off x)" = nack_bad_dst_q ] || fail "disabled queue: not NACK_BAD_DST_Q"
[ "$(nack small "$(head -c 3000 /dev/zero | tr '\0' x)")" = nack_q_exceed_quota ] || fail "quota: not NACK_Q_EXCEED_QUOTA"
[ "$(nack tiny 0123456789abcdef)" = nack_message_too_large ] || fail "size: not NACK_MESSAGE_TOO_LARGE"
[ "$(nack txq x)" = nack_not_transactional_msg ] || fail "non-tx to tx queue: not NACK_NOT_TRANSACTIONAL_MSG"
# A transactional message for a plain queue: refused there, and dead-lettered here in the
# transactional dead-letter queue (MSMQ's NACK_NOT_TRANSACTIONAL_Q).
[ "$(nack dest x --tx)" = nack_not_transactional_q ] || fail "tx to a plain queue: not NACK_NOT_TRANSACTIONAL_Q"
expect_rc 0 mq-peek 'system;deadxact' --all --json
[ "$(jq -r '[.class, .destination_queue] | join(" ")' "$T/out")" = "nack_not_transactional_q b:dest" ] ||
  fail "the refused tx message in system;deadxact: $(cat "$T/out")"
expect_rc 0 mq-peek 'system;deadletter' --all --json
[ "$(jq -r '[.class, .destination_queue] | join(" ")' "$T/out" | tr '\n' ',')" = \
  "nack_bad_dst_q b:nosuch,nack_bad_dst_q b:off,nack_q_exceed_quota b:small,nack_message_too_large b:tiny,nack_not_transactional_msg b:txq," ] ||
  fail "dead letters: $(jq -r '[.class, .destination_queue] | join(" ")' "$T/out" | tr '\n' ',')"
# A dead letter names its link, and requeue sends it back through it.
dead=$(jq -r 'select(.destination_queue == "b:nosuch") | .id' "$T/out")
expect_rc 0 mq-admin --store "$B" create nosuch
expect_rc 0 mq-admin requeue 'system;deadletter' --id "$dead"
[ "$(count stat 'out;b')" = 1 ] || fail "a requeued dead letter of out;b is not back in out;b"
expect_rc 0 mq-peek 'out;b' --json
[ "$(jq -r --arg id "$dead" '[.destination_queue, .class, .id == $id] | join(" ")' "$T/out")" = "nosuch normal true" ] ||
  fail "the requeued dead letter in out;b: $(cat "$T/out")"
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-receive --store "$B" nosuch --json
[ "$(jq -r --arg id "$dead" '[.body, .id == $id] | join(" ")' "$T/out")" = "x true" ] ||
  fail "the requeued dead letter at the far side: $(cat "$T/out")"
[ "$(count --store "$B" stat)" = 4 ] || fail "the far store holds $(count --store "$B" stat) messages, expected 4"
expect_rc 0 mq-send --tx b:txq "in tx"
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-receive --store "$B" txq --all -l
expect_out $'a\nb\nc\nin tx\n'
expect_rc 0 mq-admin link stat b --json
[ "$(jq -c '[.acknowledged, .refused, .backlog, .in_flight]' "$T/out")" = '[15,6,0,0]' ] ||
  fail "link stat --json: $(cat "$T/out")"

# --- --ttrq runs in out;LINK: NACK_REACH_QUEUE_TIMEOUT -----------------------------------------------
expect_rc 0 mq-send --ttrq 200ms --deadletter --ack nack-reach-queue --admin-queue adminq b:dest late
sleep 0.5
expect_rc 0 mq-admin sweep
[ "$(count stat 'out;b')" = 0 ] || fail "an expired message stayed in out;b"
expect_rc 0 mq-receive adminq --json
[ "$(jq -r .class "$T/out")" = nack_reach_queue_timeout ] || fail "ttrq in out;b: $(cat "$T/out")"
expect_rc 0 mq-receive 'system;deadletter' --all --json
[ "$(jq -r .class "$T/out" | tail -1)" = nack_reach_queue_timeout ] || fail "ttrq dead letter: $(tail -1 "$T/out")"

# --- replies travel back through the far store's link (--return) --------------------------------
expect_rc 0 mq-admin create replies
expect_rc 0 mq-admin --store "$B" link add back --via "mq-admin --store '$STORE' accept"
expect_rc 0 mq-admin link set b --return back
expect_rc 0 mq-send --response-queue replies --print-id b:dest request
req=$(cat "$T/out")
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-peek --store "$B" dest --json
[ "$(jq -r '[.body, .response_queue] | join(" ")' "$T/out")" = "request back:replies" ] ||
  fail "the response queue at the far side: $(cat "$T/out")"
expect_rc 0 mq-send --store "$B" --reply-to "$req" answer
expect_rc 0 mq-admin --store "$B" forward back --once
expect_rc 0 mq-receive replies --json
[ "$(jq -r .body "$T/out")" = answer ] || fail "the reply did not come back: $(cat "$T/out")"
[[ $(jq -r .correlation_id "$T/out") =~ ^[0-9a-f]{40}$ ]] || fail "the reply has no correlation id"

# --- prometheus, delete ---------------------------------------------------------------------------
expect_rc 0 mq-admin link list --format prometheus
grep -q '^mq_link_acknowledged_total{store=".*",link="b"} 16$' "$T/out" || fail "prometheus: $(cat "$T/out")"
grep -q '^# TYPE mq_link_acknowledged_total counter$' "$T/out" || fail "prometheus type: $(cat "$T/out")"
grep -q '^# TYPE mq_link_refused_total counter$' "$T/out" || fail "prometheus type: $(cat "$T/out")"
grep -q '^# TYPE mq_link_backlog_messages gauge$' "$T/out" || fail "prometheus type: $(cat "$T/out")"
expect_rc 0 mq-send b:dest waiting
expect_rc 5 mq-admin link delete b
expect_err_match 'messages wait in out;b'
expect_rc 0 mq-admin link delete b --force
expect_rc 3 mq-admin link stat b
expect_rc 3 mq-send b:dest x

expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
