#!/bin/bash
# Expiry (issue 6.1, 6.2): --ttbr and --ttrq deadlines. An expired message is never peeked,
# received or counted; readers and sweep move it to system;deadletter with its reason when it
# asked for dead-lettering (else it is discarded), and send the NACK it asked for. A waiter
# does not return an expired message. Short real deadlines: the clock is the system's.
. "$(dirname "$0")/lib.sh"

field() { mq-peek "$1" --all --json | jq -c "$2" | tr -d '\n'; }
count() { mq-admin stat "$1" --json | jq .messages; }

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create adm

# --- ttbr: visible until the deadline, then gone --------------------------------------------
expect_rc 0 mq-send q --ttbr 1s --deadletter --admin-queue adm --ack nack-receive -L lbl dies
dies_id=$(mq-peek q --json | jq -r .id)
expect_rc 0 mq-send q --ttbr infinite lives
[ "$(field q '.body')" = '"dies""lives"' ] || fail "before expiry: $(field q '.body')"
sleep 1.2
[ "$(field q '.body')" = '"lives"' ] || fail "peek shows an expired message: $(field q '.body')"
[ "$(count q)" = 1 ] || fail "stat counts the expired message: $(count q)"
# Dead-lettered with its reason (class) and original destination, in the same transaction
# as the NACK.
[ "$(field 'system;deadletter' '[.body, .class, .class_value, .destination_queue]')" = '["dies","nack_receive_timeout",49154,"q"]' ] ||
  fail "dead letter: $(field 'system;deadletter' '[.body, .class, .class_value, .destination_queue]')"
corr=$(mq-peek 'system;deadletter' --json | jq -r .id)
[ "$corr" = "$dies_id" ] || fail "the dead letter's id changed: $corr vs $dies_id"
[ "$(field adm '[.class, .class_value, .label, .body]')" = '["nack_receive_timeout",49154,"lbl",""]' ] ||
  fail "nack: $(field adm '[.class, .class_value, .label, .body]')"
want_corr=$(mq-peek 'system;deadletter' --json | jq -r .id | sed 's/[{}-]//g; s/\\.*//')
got_corr=$(mq-peek adm --json | jq -r .correlation_id)
[ "${got_corr:0:32}" = "$want_corr" ] || fail "nack correlation $got_corr, id $want_corr"
expect_rc 0 mq-admin check

# --- without --deadletter: discarded; receive never returns it ------------------------------
expect_rc 0 mq-admin purge adm
expect_rc 0 mq-admin purge q
expect_rc 0 mq-send q --ttbr 300ms gone
sleep 0.4
expect_rc 1 mq-receive q
[ "$(count 'system;deadletter')" = 1 ] || fail "a message without --deadletter was dead-lettered"
[ "$(count adm)" = 0 ] || fail "a NACK was sent without --ack"

# --- sweep handles it with no reader ---------------------------------------------------------
expect_rc 0 mq-send q --ttbr 300ms --deadletter swept
sleep 0.4
expect_rc 0 mq-admin sweep
[ "$(count 'system;deadletter')" = 2 ] || fail "sweep did not dead-letter"
expect_rc 0 mq-admin sweep
expect_out ""

# --- ttrq: a delayed message must become visible before its ttrq -----------------------------
expect_rc 0 mq-send q --delay 2s --ttrq 300ms --deadletter --admin-queue adm --ack nack-reach-queue late
expect_rc 0 mq-send q --delay 300ms --ttrq 5s --ttbr 10s intime
sleep 0.5
expect_rc 0 mq-admin sweep
[ "$(field q '.body')" = '"intime"' ] || fail "ttrq: queue holds $(field q '.body')"
[ "$(field 'system;deadletter' 'select(.body == "late") | .class')" = '"nack_reach_queue_timeout"' ] ||
  fail "ttrq dead letter: $(field 'system;deadletter' '[.body, .class]')"
[ "$(field adm '.class')" = '"nack_reach_queue_timeout"' ] || fail "ttrq nack: $(field adm '.class')"
# Once visible, only ttbr applies: intime stays.
expect_rc 0 mq-receive q
expect_out "intime"
expect_rc 0 mq-admin check

# --- a waiter does not return an expired message ---------------------------------------------
expect_rc 0 mq-send q --ttbr 200ms stale
sleep 0.3
start=$(date +%s%N)
expect_rc 1 mq-receive q --wait 500ms
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$elapsed" -ge 450 ] || fail "the waiter returned after ${elapsed}ms"
(sleep 0.3; mq-send q fresh) &
expect_rc 0 mq-receive q --wait 5s
expect_out "fresh"
wait

# --- a Locked message expires only after its transaction ends --------------------------------
expect_rc 0 mq-send q --ttbr 500ms --deadletter held
expect_rc 0 mq-receive q --exec sh -c 'sleep 1; cat >/dev/null'
expect_out ""
[ "$(field 'system;deadletter' 'select(.body == "held") | .body')" = "" ] ||
  fail "a message received inside its deadline was dead-lettered"
expect_rc 0 mq-send q --ttbr 500ms --deadletter held2
expect_rc 8 mq-receive q --exec sh -c 'sleep 1; exit 3'
[ "$(count q)" = 0 ] || fail "expired message still counted after rollback"
[ "$(field 'system;deadletter' 'select(.body == "held2") | .class')" = '"nack_receive_timeout"' ] ||
  fail "rolled-back expired message not dead-lettered"

# --- requeue from the dead-letter queue: fresh deadline ---------------------------------------
expect_rc 0 mq-admin purge 'system;deadletter'
expect_rc 0 mq-send q --ttbr 300ms --deadletter back
sleep 0.4
expect_rc 0 mq-admin sweep
expect_rc 0 mq-admin requeue 'system;deadletter' --ttbr 1h
[ "$(field q '[.body, .class]')" = '["back","normal"]' ] || fail "requeued: $(field q '[.body, .class]')"
ttbr=$(mq-peek q --json | jq -r .ttbr)
[ "$(date -d "$ttbr" +%s)" -gt $(( $(date +%s) + 3500 )) ] || fail "requeue --ttbr 1h gave $ttbr"
expect_rc 0 mq-receive q
expect_rc 0 mq-send q --ttbr 400ms --deadletter again
sleep 0.5
expect_rc 0 mq-admin sweep
expect_rc 0 mq-admin requeue 'system;deadletter'
[ "$(count q)" = 1 ] || fail "requeue without --ttbr: not back"
sleep 0.5
[ "$(count q)" = 0 ] || fail "requeue without --ttbr kept no deadline (expected the original 400ms)"
expect_rc 0 mq-admin check

# --- a retained conversation row (RETENTION ON) was received: it no longer expires -----------
expect_rc 0 mq-admin create kept --retention on
expect_rc 0 mq-send kept --conversation new --ttbr 300ms --deadletter row
expect_rc 0 mq-receive kept
expect_out "row"
sleep 0.4
expect_rc 0 mq-admin sweep
[ "$(mq-peek kept --all --json | jq -c '[.body, .status]')" = '["row",0]' ] ||
  fail "a retained row expired: $(mq-peek kept --all --json)"
expect_rc 0 mq-admin check
expect_out ""
finish
