#!/bin/bash
# Issue 14's semantics over links: a --ttbr that runs out while the message waits in out;LINK is
# NACK_RECEIVE_TIMEOUT_AT_SENDER (a --ttrq that runs out first stays NACK_REACH_QUEUE_TIMEOUT).
. "$(dirname "$0")/lib.sh"

B=$T/B
count() { mq-admin "$@" --json | jq -s 'map(.messages) | add // 0'; }

expect_rc 0 mq-admin create adminq
expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create dest
expect_rc 0 mq-admin link add b --via "mq-admin --store '$B' accept"

# --- expiry in out;LINK ---------------------------------------------------------------------------
expect_rc 0 mq-send --ttbr 200ms --deadletter --ack nack-receive --admin-queue adminq b:dest ttbr
expect_rc 0 mq-send --ttrq 200ms --ttbr 1h --deadletter --ack full-receive --admin-queue adminq b:dest ttrq
sleep 0.5
expect_rc 0 mq-admin sweep
[ "$(count stat 'out;b')" = 0 ] || fail "expired messages stayed in out;b"
expect_rc 0 mq-receive adminq --all --json
[ "$(jq -r .class "$T/out" | tr '\n' ' ')" = "nack_receive_timeout_at_sender nack_reach_queue_timeout " ] ||
  fail "expiry classes in out;b: $(jq -r .class "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-receive 'system;deadletter' --all --json
[ "$(jq -r '[.class, .body] | join(" ")' "$T/out" | tr '\n' ',')" = \
  "nack_receive_timeout_at_sender ttbr,nack_reach_queue_timeout ttrq," ] ||
  fail "expiry dead letters: $(jq -r '[.class, .body] | join(" ")' "$T/out" | tr '\n' ',')"

expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
