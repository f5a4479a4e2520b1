#!/bin/bash
# Poison messages: after --max-retries N rollbacks (abort_count reaches N) the queue's poison
# action runs in the rollback's transaction, and not one rollback before: subqueue (Q;poison,
# same lookup id), deadletter (system;deadletter, class nack_receive_rejected, or
# system;deadxact for a transactional queue), disable (status OFF, receive exits 5).
# mq-admin requeue brings them back.
. "$(dirname "$0")/lib.sh"

field() {  # field QUEUE JQ: one jq expression over `mq-peek QUEUE --all --json`, compact
  mq-peek "$1" --all --json | jq -c "$2" | tr -d '\n'
}
count() { mq-admin stat "$1" --json | jq .messages; }

# --- subqueue (the default action), max 3 ----------------------------------------------------
expect_rc 0 mq-admin create q --max-retries 3
expect_rc 0 mq-admin list --json
[ "$(jq -c 'select(.queue == "q") | [.max_retries, .poison]' "$T/out")" = '[3,"subqueue"]' ] ||
  fail "q settings: $(cat "$T/out")"
expect_rc 0 mq-send q first
expect_rc 0 mq-send q second
lk=$(mq-peek q --json | jq .lookup_id)
for i in 1 2; do
  expect_rc 8 mq-receive q --exec false
  expect_err_match "^mq-receive: q: false exited with status 1; message $lk rolled back"
  [ "$(field q '[.body, .abort_count]')" = "[\"first\",$i][\"second\",0]" ] ||
    fail "after rollback $i: $(field q '[.body, .abort_count]')"
  [ "$(count 'q;poison')" = 0 ] || fail "q;poison holds a message after only $i rollbacks"
done
expect_rc 8 mq-receive q --exec false
# Two lines: the poison note, then the failure.
grep -qx "mq-receive: q: message $lk rolled back 3 times: moved to q;poison" "$T/err" ||
  fail "no poison note: $(cat "$T/err")"
grep -q "message $lk rolled back (MQ_EXEC_FAILED" "$T/err" || fail "no failure line: $(cat "$T/err")"
[ "$(field q '.body')" = '"second"' ] || fail "q after poisoning: $(field q '.body')"
[ "$(field 'q;poison' '[.body, .lookup_id, .abort_count, .delivery_count, .queue]')" = "[\"first\",$lk,3,3,\"q;poison\"]" ] ||
  fail "q;poison: $(field 'q;poison' '[.body, .lookup_id, .abort_count, .delivery_count, .queue]')"
expect_rc 0 mq-admin check
# requeue: back to q, in its old place (same lookup id, ahead of second), abort count reset.
expect_rc 0 mq-admin requeue 'q;poison'
[ "$(count 'q;poison')" = 0 ] || fail "q;poison not empty after requeue"
[ "$(field q '[.body, .lookup_id, .abort_count]')" = "[\"first\",$lk,0][\"second\",$((lk + 1)),0]" ] ||
  fail "q after requeue: $(field q '[.body, .lookup_id, .abort_count]')"
# Requeued, it gets max-retries fresh rollbacks again.
expect_rc 8 mq-receive q --exec false
[ "$(count 'q;poison')" = 0 ] || fail "a requeued message was poisoned again at once"
expect_rc 0 mq-receive q --exec true
[ "$(field q '.body')" = '"second"' ] || fail "q at the end: $(field q '.body')"

# --- deadletter, max 2 --------------------------------------------------------------------------
expect_rc 0 mq-admin create d --max-retries 2 --poison deadletter
expect_rc 0 mq-send d dbody
expect_rc 8 mq-receive d --exec false
[ "$(count 'system;deadletter')" = 0 ] || fail "dead-lettered after one rollback of two"
[ "$(field d '[.body, .abort_count]')" = '["dbody",1]' ] || fail "d: $(field d '[.body, .abort_count]')"
expect_rc 8 mq-receive d --exec sh -c 'exit 9'
grep -qx "mq-receive: d: message 1 rolled back 2 times: moved to system;deadletter" "$T/err" ||
  fail "no dead-letter note: $(cat "$T/err")"
expect_rc 1 mq-peek d
[ "$(field 'system;deadletter' '[.body, .class, .class_value, .destination_queue, .abort_count]')" = '["dbody","nack_receive_rejected",49156,"d",2]' ] ||
  fail "system;deadletter: $(field 'system;deadletter' '[.body, .class, .class_value, .destination_queue, .abort_count]')"
[ "$(count 'system;deadxact')" = 0 ] || fail "a non-transactional queue dead-lettered to system;deadxact"
expect_rc 0 mq-admin requeue 'system;deadletter'
[ "$(count 'system;deadletter')" = 0 ] || fail "system;deadletter not empty after requeue"
[ "$(field d '[.body, .class, .abort_count]')" = '["dbody","normal",0]' ] ||
  fail "d after requeue: $(field d '[.body, .class, .abort_count]')"

# A transactional queue dead-letters to system;deadxact.
expect_rc 0 mq-admin create x --transactional --max-retries 1 --poison deadletter
expect_rc 0 mq-send --tx x xbody
expect_rc 8 mq-receive x --exec false
[ "$(field 'system;deadxact' '[.body, .class, .destination_queue]')" = '["xbody","nack_receive_rejected","x"]' ] ||
  fail "system;deadxact: $(field 'system;deadxact' '[.body, .class, .destination_queue]')"
[ "$(count 'system;deadletter')" = 0 ] || fail "a transactional queue dead-lettered to system;deadletter"
expect_rc 0 mq-admin requeue 'system;deadxact'
[ "$(field x '[.body, .class]')" = '["xbody","normal"]' ] || fail "x after requeue: $(field x '[.body, .class]')"

# --- disable, max 2 -----------------------------------------------------------------------------
expect_rc 0 mq-admin create z --max-retries 2 --poison disable
expect_rc 0 mq-send z zbad
expect_rc 0 mq-send z zgood
expect_rc 8 mq-receive z --exec false
expect_rc 0 mq-admin stat z --json
[ "$(jq -r .status "$T/out")" = on ] || fail "z disabled after one rollback of two"
expect_rc 8 mq-receive z --exec false
grep -qx "mq-receive: z: message 1 rolled back 2 times: queue disabled (status OFF)" "$T/err" ||
  fail "no disable note: $(cat "$T/err")"
expect_rc 0 mq-admin stat z --json
[ "$(jq -c '[.status, .messages, .locked]' "$T/out")" = '["off",2,0]' ] || fail "z after poisoning: $(cat "$T/out")"
expect_rc 5 mq-receive z
expect_out ''
expect_err_match '^mq-receive: z: queue is disabled \(status OFF\) \(MQ_ERROR_QUEUE_NOT_ACTIVE 0xC00E0004\)$'
expect_rc 5 mq-receive z --exec true
# The message stays in z, in its place, for whoever fixes the queue.
[ "$(field z '[.body, .abort_count]')" = '["zbad",2]["zgood",0]' ] || fail "z: $(field z '[.body, .abort_count]')"
expect_rc 0 mq-admin set z --status on
expect_rc 0 mq-receive z --exec true
[ "$(field z '.body')" = '"zgood"' ] || fail "z at the end: $(field z '.body')"

# --- max-retries 0: never poisoned ---------------------------------------------------------------
expect_rc 0 mq-admin create n --max-retries 0
expect_rc 0 mq-send n nbody
for i in 1 2 3 4 5 6 7; do mq-receive n --exec false 2>/dev/null; done
[ "$(field n '[.body, .abort_count]')" = '["nbody",7]' ] || fail "n: $(field n '[.body, .abort_count]')"
[ "$(count 'n;poison')" = 0 ] || fail "n;poison holds a message with --max-retries 0"

# The default is 5 rollbacks, then the subqueue.
expect_rc 0 mq-admin create dflt
expect_rc 0 mq-send dflt body
for i in 1 2 3 4; do mq-receive dflt --exec false 2>/dev/null; done
[ "$(count 'dflt;poison')" = 0 ] || fail "poisoned before the 5th rollback by default"
expect_rc 8 mq-receive dflt --exec false
[ "$(count 'dflt;poison')" = 1 ] || fail "not poisoned at the 5th rollback by default"

# Rollbacks by a dead holder and by a nack count the same: a receiver SIGKILLed twice poisons
# its message (returned by the next reader), and so does a nack.
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT
expect_rc 0 mq-admin create k --max-retries 2
expect_rc 0 mq-send k kbody
for i in 1 2; do
  mq-receive k --exec sleep 30 2>/dev/null &
  BG+=($!)
  # Up to 10 s: on a busy machine the receive may take a while to lock its message.
  for _ in $(seq 500); do [ "$(mq-admin stat k --json | jq .locked)" = 1 ] && break; sleep 0.02; done
  kill -9 "${BG[-1]}"
  wait "${BG[-1]}" 2>/dev/null
  wait_holder_gone "${BG[-1]}"
done
expect_rc 1 mq-peek k   # the peek returns the lease: the 2nd rollback moves it to k;poison
[ "$(field 'k;poison' '[.body, .abort_count, .delivery_count]')" = '["kbody",2,2]' ] ||
  fail "k;poison after two killed holders: $(field 'k;poison' '[.body, .abort_count, .delivery_count]')"
expect_rc 0 mq-admin create l --max-retries 1
expect_rc 0 mq-send l lbody
mq-receive l --lease 30s >/dev/null 2>"$T/token"
expect_rc 0 mq-admin nack "$(cat "$T/token")"
[ "$(count l)" = 0 ] && [ "$(field 'l;poison' '[.body, .abort_count]')" = '["lbody",1]' ] ||
  fail "a nack at max-retries 1 did not poison: l;poison $(field 'l;poison' '[.body, .abort_count]')"

expect_rc 0 mq-admin locks
expect_out ''
expect_rc 0 mq-admin check
expect_out ''
finish
