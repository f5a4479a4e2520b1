#!/bin/bash
# Acknowledgements (issue 6.4) and purge/delete (6.7): the store puts MSMQ ack messages in the
# admin queue in the same transaction as the event: class, correlation id = the original's
# id, its label, no body. full-reach-queue|full-receive gives exactly one ACK_REACH_QUEUE and
# then one ACK_RECEIVE. Purge and delete send NACKs and dead-letter what asked for it.
. "$(dirname "$0")/lib.sh"

field() { mq-peek "$1" --all --json | jq -c "$2" | tr -d '\n'; }
count() { mq-admin stat "$1" --json | jq .messages; }
hexid() { printf '%s' "$1" | sed 's/[{}-]//g; s/\\.*//'; }  # first 32 hex digits of an id

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create adm

# --- full-reach-queue|full-receive: ACK_REACH_QUEUE at the send, ACK_RECEIVE at the receive ---
expect_rc 0 mq-send q --admin-queue adm --ack 'full-reach-queue|full-receive' -L order-1 --print-id body
id=$(cat "$T/out")
[ "$(field adm '[.class, .class_value, .label, .body, .body_type_name]')" = '["ack_reach_queue",2,"order-1","","empty"]' ] ||
  fail "after send: $(field adm '[.class, .class_value, .label, .body]')"
expect_rc 0 mq-receive q
expect_out "body"
[ "$(field adm '.class')" = '"ack_reach_queue""ack_receive"' ] || fail "after receive: $(field adm '.class')"
# Every ack correlates with the original message: the id's GUID and counter.
n=$(mq-peek adm --all --json | jq -r .correlation_id | grep -c "^$(hexid "$id")")
[ "$n" = 2 ] || fail "acks do not carry the original id: $(field adm '.correlation_id') vs $id"
ctr=$(printf '%s' "$id" | sed 's/.*\\//')
[ "$(mq-peek adm --json | jq -r .correlation_id | cut -c33-)" = "$(printf '%08x' "$ctr")" ] ||
  fail "correlation id counter: $(mq-peek adm --json | jq -r .correlation_id) vs $id"
expect_rc 0 mq-admin purge adm

# --- levels: none / nack-only produce nothing on success ------------------------------------
expect_rc 0 mq-send q --admin-queue adm --ack nack-receive quiet
expect_rc 0 mq-receive q
[ "$(count adm)" = 0 ] || fail "nack-receive acknowledged a success: $(field adm '.class')"

# --- a transactional receive acknowledges at commit only --------------------------------------
expect_rc 0 mq-send q --admin-queue adm --ack pos-receive tx
expect_rc 8 mq-receive q --exec false
[ "$(count adm)" = 0 ] || fail "a rolled-back receive was acknowledged"
expect_rc 0 mq-receive q --exec true
[ "$(field adm '.class')" = '"ack_receive"' ] || fail "commit not acknowledged: $(field adm '.class')"
expect_rc 0 mq-admin purge adm
# A lease: ack at mq-admin ack.
expect_rc 0 mq-send q --admin-queue adm --ack pos-receive leased
expect_rc 0 mq-receive q --lease 1m --json
token=$(jq -r .lease_token "$T/out")
[ "$(count adm)" = 0 ] || fail "acknowledged before the lease was committed"
expect_rc 0 mq-admin ack "$token"
[ "$(field adm '.class')" = '"ack_receive"' ] || fail "lease commit not acknowledged"
expect_rc 0 mq-admin purge adm

# --- a missing admin queue: the send succeeds and says so -------------------------------------
expect_rc 0 mq-send q --admin-queue nowhere --ack full-receive lonely
expect_err_match "^mq-send: q: admin queue nowhere does not exist: its acknowledgements will not be sent$"
expect_rc 0 mq-receive q
expect_out "lonely"
printf 'a\nb\nc\n' | mq-send q -l --admin-queue nowhere --ack full-receive 2>"$T/err"
[ "$(wc -l <"$T/err")" = 1 ] || fail "-l repeated the note: $(cat "$T/err")"
expect_rc 0 mq-admin purge q

# --- purge: NACK_Q_PURGED, and dead letters for what asked -----------------------------------
expect_rc 0 mq-send q --admin-queue adm --ack nack-receive --deadletter p1
expect_rc 0 mq-send q --admin-queue adm --ack nack-receive p2
expect_rc 0 mq-send q --admin-queue adm --ack nack-reach-queue --deadletter --delay 1h p3
expect_rc 0 mq-admin purge q
[ "$(count q)" = 0 ] || fail "purge left messages"
[ "$(field adm '.class')" = '"nack_q_purged""nack_q_purged""nack_purged"' ] ||
  fail "purge nacks: $(field adm '.class')"
[ "$(field 'system;deadletter' '[.body, .class, .destination_queue]')" = '["p1","nack_q_purged","q"]["p3","nack_purged","q"]' ] ||
  fail "purge dead letters: $(field 'system;deadletter' '[.body, .class, .destination_queue]')"
expect_rc 0 mq-admin purge adm
expect_rc 0 mq-admin purge 'system;deadletter'

# --- delete: NACK_Q_DELETED; subqueue messages too; transactional to deadxact -----------------
expect_rc 0 mq-admin create doomed --journal
expect_rc 0 mq-send doomed --admin-queue adm --ack nack-receive --deadletter d1
expect_rc 0 mq-send doomed --journal d2
expect_rc 0 mq-receive doomed --lookup-id 2
expect_rc 0 mq-send doomed --deadletter d3
lk=$(mq-peek doomed --last --json | jq .lookup_id)
expect_rc 0 mq-admin move doomed "$lk" --to retry
expect_rc 0 mq-admin delete doomed
[ "$(field adm '[.class, .class_value]')" = '["nack_q_deleted",49152]' ] || fail "delete nack: $(field adm '.class')"
[ "$(field 'system;deadletter' '[.body, .class]')" = '["d1","nack_q_deleted"]["d3","nack_q_deleted"]' ] ||
  fail "delete dead letters: $(field 'system;deadletter' '[.body, .class]')"
expect_rc 3 mq-peek 'doomed;journal'
expect_rc 0 mq-admin create tq --transactional
expect_rc 0 mq-send tq --tx --deadletter t1
expect_rc 0 mq-admin delete tq
[ "$(field 'system;deadxact' '[.body, .class, .destination_queue]')" = '["t1","nack_q_deleted","tq"]' ] ||
  fail "deadxact: $(field 'system;deadxact' '[.body, .class]')"

# --- poison dead-lettering sends NACK_RECEIVE_REJECTED ----------------------------------------
expect_rc 0 mq-admin purge adm
expect_rc 0 mq-admin create pq --max-retries 1 --poison deadletter
expect_rc 0 mq-send pq --admin-queue adm --ack nack-receive poison
expect_rc 8 mq-receive pq --exec false
[ "$(field adm '.class')" = '"nack_receive_rejected"' ] || fail "poison nack: $(field adm '.class')"

# --- acks to the queue itself, and no acks for dead letters ------------------------------------
expect_rc 0 mq-send q --admin-queue q --ack full-reach-queue self
[ "$(field q '.class')" = '"normal""ack_reach_queue"' ] || fail "self ack: $(field q '.class')"
expect_rc 0 mq-admin purge 'system;deadletter'
[ "$(count adm)" = 1 ] || fail "purging dead letters sent NACKs"
expect_rc 0 mq-admin check
expect_out ""
finish
