#!/bin/bash
# mq-admin move QUEUE LOOKUP_ID --to SUBQUEUE (issue 6.7, MSMQ MoveMessage): one visible message
# moves to a subqueue of the same queue keeping its lookup id; a Locked message cannot move.
. "$(dirname "$0")/lib.sh"

field() { mq-peek "$1" --all --json | jq -c "$2" | tr -d '\n'; }

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q a
expect_rc 0 mq-send q b
expect_rc 0 mq-send q c
expect_rc 0 mq-admin move q 2 --to retry
[ "$(field q '.body')" = '"a""c"' ] || fail "q after move: $(field q '.body')"
[ "$(field 'q;retry' '[.body, .lookup_id, .move_count]')" = '["b",2,1]' ] ||
  fail "q;retry: $(field 'q;retry' '[.body, .lookup_id, .move_count]')"
# Between subqueues, by full name; and the message is received from there.
expect_rc 0 mq-admin move 'q;retry' 2 --to 'q;later'
[ "$(field 'q;later' '[.body, .lookup_id]')" = '["b",2]' ] || fail "q;later: $(field 'q;later' '.body')"
expect_rc 0 mq-receive 'q;later'
expect_out "b"
# Errors: missing message (1), Locked (5), other queue or journal (2), missing queue (3).
expect_rc 1 mq-admin move q 99 --to retry
expect_err_match "no message with lookup id 99"
expect_rc 2 mq-admin move q 1 --to 'other;retry'
expect_rc 2 mq-admin move q 1 --to journal
expect_rc 2 mq-admin move q 1 --to 'system;deadletter'
expect_rc 3 mq-admin move nosuch 1 --to retry
expect_rc 0 mq-send q --delay 1h delayed
dl=$(mq-peek q --all --json | jq 'select(.body=="delayed")' | jq .lookup_id 2>/dev/null)
# The receive's command holds message 1 Locked from when it starts until $T/go exists.
( timeout 60 mq-receive q --exec sh -c \
    ': >"$0/locked"; while [ ! -e "$0/go" ]; do sleep 0.02; done; cat >/dev/null' "$T" ) &
until_true 20 test -e "$T/locked" || fail "the receive's command did not start"
expect_rc 5 mq-admin move q 1 --to retry
expect_err_match "MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION"
touch "$T/go"
wait
[ "$(field q '.body')" = '"c"' ] || fail "q: $(field q '.body')"
expect_rc 0 mq-admin check
expect_out ""
finish
