#!/bin/bash
# Transactional dead letters belong to the source (issue 24, MSMQ): a transactional message
# that fails at the far side of a link after it arrived (its ttbr ran out there, its queue
# was purged or deleted) travels back through the link to its source, which keeps it in its
# own system;deadxact with its NACK class, its id, and LINK:QUEUE as where it was going;
# the far store keeps none of them, and requeue at the source sends it again. The NACK to
# the admin queue travels as before. A message that is not transactional stays the far
# side's dead letter. With no way back (no link to the source), the far side keeps it.
. "$(dirname "$0")/lib.sh"

B=$T/B
count() { mq-admin "$@" --json | jq -s 'map(.messages) | add // 0'; }
id_hex() {  # {GUID}\N -> the 40 hex digits a correlation id shows
  local id=$1 guid
  guid=${id#\{}
  guid=${guid%%\}*}
  printf '%s%08x' "${guid//-/}" "${id##*\\}"
}

expect_rc 0 mq-admin create adminq
expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create txq --transactional
expect_rc 0 mq-admin --store "$B" create gone --transactional
expect_rc 0 mq-admin --store "$B" create plain
expect_rc 0 mq-admin link add b --via "mq-admin --store '$B' accept" --return back
expect_rc 0 mq-admin --store "$B" link add back --via "mq-admin --store '$STORE' accept"

send() {  # send QUEUE BODY [options]: prints the message's id
  local q=$1 body=$2
  shift 2
  mq-send --print-id --deadletter --ack nack-receive --admin-queue adminq "$@" "b:$q" "$body" ||
    fail "send to b:$q"
}
late=$(send txq late --tx --ttbr 3s)
purged=$(send txq purged --tx)
deleted=$(send gone deleted --tx)
plain=$(send plain plain-late --ttbr 3s)
expect_rc 0 mq-admin forward b --once
[ "$(count --store "$B" stat)" = 4 ] || fail "the far store holds $(count --store "$B" stat), expected 4"
sleep 3.2  # late's and plain-late's ttbr run out at the far side
expect_rc 0 mq-admin --store "$B" sweep
expect_rc 0 mq-admin --store "$B" purge txq
expect_rc 0 mq-admin --store "$B" delete gone
# The far store keeps no transactional dead letter; the plain one is its own.
[ "$(count --store "$B" stat 'system;deadxact')" = 0 ] ||
  fail "the far store kept transactional dead letters: $(mq-peek --store "$B" 'system;deadxact' --all -l)"
expect_rc 0 mq-peek --store "$B" 'system;deadletter' --all --json
[ "$(jq -r '[.body, .class] | join(" ")' "$T/out")" = "plain-late nack_receive_timeout" ] ||
  fail "the far side's own dead letter: $(cat "$T/out")"
expect_rc 0 mq-admin --store "$B" forward back --once
[ "$(count --store "$B" stat 'out;back')" = 0 ] || fail "out;back not empty"
# At the source: the three, with their ids, classes and destinations.
expect_rc 0 mq-peek 'system;deadxact' --all --json
[ "$(jq -r '[.body, .class, .destination_queue, .id] | join(" ")' "$T/out" | tr '\n' ',')" = \
  "late nack_receive_timeout b:txq $late,purged nack_q_purged b:txq $purged,deleted nack_q_deleted b:gone $deleted," ] ||
  fail "the source's system;deadxact: $(jq -c '[.body, .class, .destination_queue, .id]' "$T/out" | tr '\n' ',')"
[ "$(count stat 'system;deadletter')" = 0 ] || fail "a dead letter in the source's system;deadletter"
# The NACKs, as before.
expect_rc 0 mq-receive adminq --all --json
[ "$(jq -r '[.class, .correlation_id] | join(" ")' "$T/out" | sort | tr '\n' ',')" = \
  "$(printf '%s\n' "nack_q_deleted $(id_hex "$deleted")" "nack_q_purged $(id_hex "$purged")" \
    "nack_receive_timeout $(id_hex "$late")" "nack_receive_timeout $(id_hex "$plain")" | sort | tr '\n' ',')" ] ||
  fail "NACKs at the source: $(jq -c '[.class, .correlation_id]' "$T/out" | tr '\n' ',')"
# Requeue sends one back through the link.
expect_rc 0 mq-admin requeue 'system;deadxact' --id "$purged"
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-receive --store "$B" txq
expect_out 'purged'

# No link back to the source: the far side keeps it.
expect_rc 0 mq-admin --store "$B" link delete back --force
expect_rc 0 mq-admin --store "$B" create txq2 --transactional
expect_rc 0 mq-send --tx --deadletter b:txq2 stays
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-admin --store "$B" purge txq2
expect_rc 0 mq-peek --store "$B" 'system;deadxact' --all -l
expect_out $'stays\n'

expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
