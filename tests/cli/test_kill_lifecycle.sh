#!/bin/bash
# Durability of the lifecycle steps (issue 6): a receive, its journal copy and its
# acknowledgement commit together or not at all, and so do an expiry, its dead letter and its
# NACK. Random SIGKILLs of transactional receives and of sweeps; afterwards every message is
# in exactly one place (the queue, its journal, its poison subqueue, the dead letters) and every journal copy has exactly one ACK_RECEIVE.
. "$(dirname "$0")/lib.sh"

N=60
count() { mq-admin stat "$1" --json | jq .messages; }

expect_rc 0 mq-admin create q --journal
expect_rc 0 mq-admin create adm
seq $N | mq-send q -l --admin-queue adm --ack pos-receive || fail "fill"
# Half of a second batch expires during the run and asks for dead-lettering and a NACK.
seq 1001 1040 | mq-send q -l --ttbr 300ms --deadletter --admin-queue adm --ack nack-receive ||
  fail "fill expiring"
for trial in $(seq 40); do
  mq-receive q --exec sh -c 'cat >/dev/null; sleep 0.0$((RANDOM % 3))' >/dev/null 2>&1 &
  pid=$!
  if [ $((trial % 4)) = 0 ]; then
    mq-admin sweep >/dev/null 2>&1 &
    sweeper=$!
  fi
  sleep "0.00$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null
  [ $((trial % 4)) = 0 ] && kill -9 "$sweeper" 2>/dev/null
  wait 2>/dev/null
done
sleep 0.4
expect_rc 0 mq-admin sweep
expect_rc 0 mq-admin check
expect_out ""
in_q=$(count q)
journal=$(count 'q;journal')
dead=$(count 'system;deadletter')
poison=$(count 'q;poison')  # killed five times: the poison action ran
acks=$(mq-peek adm --all --json | jq -r .class | grep -c '^ack_receive$')
nacks=$(mq-peek adm --all --json | jq -r .class | grep -c '^nack_receive_timeout$')
[ $((in_q + journal + dead + poison)) = $((N + 40)) ] ||
  fail "messages: $in_q in q + $journal journaled + $dead dead + $poison poison != $((N + 40))"
[ "$acks" = "$journal" ] || fail "$acks ACK_RECEIVE for $journal journal copies"
[ "$nacks" = "$dead" ] || fail "$nacks NACKs for $dead dead letters"
[ $((journal + dead)) -ge 1 ] || fail "nothing was received or expired: the test tested nothing"
# No id twice: journal copies and dead letters are distinct, and none is still queued.
dups=$( (mq-peek q --all --json; mq-peek 'q;journal' --all --json; mq-peek 'q;poison' --all --json
  mq-peek 'system;deadletter' --all --json) |
  jq -r .id | sort | uniq -d | wc -l)
[ "$dups" = 0 ] || fail "$dups messages are in two places"
finish
