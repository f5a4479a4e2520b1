#!/bin/bash
# Transactional messages have priority 0 (issue 24, MSMQ): in a transactional queue a --tx
# send is delivered in the order the transactions committed, whatever -p said; -p with --tx
# there gets one note on stderr; --json shows priority 0. Into a plain queue --tx is an
# atomic batch only: priorities kept, and no transactional properties (Eod, xact id,
# sequence numbers) that a far MSMQ would act on.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create tq --transactional
expect_rc 0 mq-send tq --tx -p 1 earlier
expect_err_match '^mq-send: tq: transactional messages have priority 0 here'
[ "$(wc -l <"$T/err")" = 1 ] || fail "one note, got: $(cat "$T/err")"
printf 'later-1\nlater-2\n' | mq-send tq --tx -l -p 7 2>"$T/err2" || fail "second --tx send"
[ "$(grep -c 'priority 0' "$T/err2")" = 1 ] || fail "the note once per send, got: $(cat "$T/err2")"
expect_rc 0 mq-send tq --tx plain-tx
expect_out ''
[ ! -s "$T/err" ] || fail "no -p, no note: $(cat "$T/err")"
expect_rc 0 mq-peek tq --all --json
[ "$(jq -r '"\(.body) \(.priority)"' "$T/out" | tr '\n' ',')" = "earlier 0,later-1 0,later-2 0,plain-tx 0," ] ||
  fail "transactional queue: delivered as $(jq -r '"\(.body) \(.priority)"' "$T/out" | tr '\n' ',')"
expect_rc 0 mq-receive tq
expect_out 'earlier'

# A plain queue: --tx is an atomic batch; priorities kept, no transactional properties.
expect_rc 0 mq-admin create pq
printf 'a\nb\n' | mq-send pq --tx -l -p 5 2>"$T/err3" || fail "--tx into a plain queue"
[ ! -s "$T/err3" ] || fail "a plain queue keeps priorities: no note, got: $(cat "$T/err3")"
expect_rc 0 mq-send pq -p 6 high
expect_rc 0 mq-peek pq --all --json
[ "$(jq -c '[.body, .priority, .eod_first, .eod_last, .xact_id, .tx_sequence_number]' "$T/out" | tr -d '\n')" = \
  '["high",6,false,false,null,0]["a",5,false,false,null,0]["b",5,false,false,null,0]' ] ||
  fail "--tx into a plain queue: $(jq -c '[.body, .priority, .eod_first, .eod_last, .xact_id, .tx_sequence_number]' "$T/out" | tr -d '\n')"

expect_rc 0 mq-admin check
finish
