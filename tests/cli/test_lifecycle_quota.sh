#!/bin/bash
# Quotas and limits (issue 6.6): a queue's --quota counts the bytes of its message records
# (bodies and properties): a send that fits exactly succeeds, one byte more fails with exit 6
# and stores nothing; under --tx the whole transaction fails. --max-message-size, the label
# limit, and the store's --max-store-size.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq .messages; }
bytes() { mq-admin stat "$1" --json | jq .bytes; }

# Measure one record: the same properties, a body of the same size, a queue name of the same
# length (it is recorded as the destination).
expect_rc 0 mq-admin create p
expect_rc 0 mq-send p -L fixed 0123456789
rec=$(bytes p)
[ "$rec" -gt 10 ] || fail "a record of $rec bytes"

# Exactly three records fit.
expect_rc 0 mq-admin create q --quota $((3 * rec))
for b in 0000000001 0000000002 0000000003; do
  expect_rc 0 mq-send q -L fixed "$b"
done
[ "$(bytes q)" = $((3 * rec)) ] || fail "q holds $(bytes q) bytes, expected $((3 * rec))"
# One byte more than fits: exit 6, nothing stored.
expect_rc 0 mq-admin set q --quota $((4 * rec - 1))
expect_rc 6 mq-send q -L fixed 0000000004
expect_err_match "^mq-send: q: queue quota of $((4 * rec - 1)) bytes would be exceeded .*MQ_ERROR_INSUFFICIENT_RESOURCES"
[ "$(count q)" = 3 ] || fail "a refused send stored something: $(count q)"
# Exactly fitting: succeeds.
expect_rc 0 mq-admin set q --quota $((4 * rec))
expect_rc 0 mq-send q -L fixed 0000000004
[ "$(count q)" = 4 ] || fail "a send that fits exactly was refused"

# --tx: all or nothing. Into a plain queue it is an atomic batch of plain records (no
# transaction id or sequence numbers): room for two of them, not three.
expect_rc 0 mq-admin set q --quota $((4 * rec + 2 * rec + rec / 2))
printf '0000000005\n0000000006\n0000000007\n' | mq-send q -L fixed -l --tx 2>"$T/err"
[ $? = 6 ] || fail "--tx over quota did not exit 6"
[ "$(count q)" = 4 ] || fail "--tx over quota stored $(( $(count q) - 4 )) messages"
printf '0000000005\n0000000006\n' | mq-send q -L fixed -l --tx || fail "--tx that fits failed"
[ "$(count q)" = 6 ] || fail "--tx that fits: $(count q)"
# Receiving frees room.
expect_rc 0 mq-receive q
expect_rc 0 mq-send q -L fixed 0000000008
expect_rc 0 mq-admin check

# --- message size and label ------------------------------------------------------------------
expect_rc 0 mq-admin create small --max-message-size 16
expect_rc 0 mq-send small 0123456789abcdef
expect_rc 6 mq-send small 0123456789abcdefg
[ "$(count small)" = 1 ] || fail "an oversized body was stored"
head -c $((4 * 1024 * 1024)) /dev/zero >"$T/4m"
expect_rc 0 mq-send p -f "$T/4m"
printf x >>"$T/4m"
expect_rc 6 mq-send p -f "$T/4m"
label=$(printf 'é%.0s' $(seq 250))
expect_rc 0 mq-send p -L "$label" ok
expect_rc 2 mq-send p -L "${label}x" toolong
expect_err_match "label longer than 250 characters"

# --- the store's size limit ---------------------------------------------------------------------
S2=$T/limited
expect_rc 0 mq-admin -s "$S2" init --max-store-size 2M
expect_rc 0 mq-admin -s "$S2" create big
head -c 100000 /dev/urandom >"$T/100k"
sent=0
for i in $(seq 60); do
  mq-send -s "$S2" big -f "$T/100k" 2>"$T/err" || break
  sent=$((sent + 1))
done
[ "$sent" -lt 60 ] || fail "a 2M store took 6MB"
[ "$sent" -ge 5 ] || fail "a 2M store took only $sent x 100KB"
grep -q "store is full.*MQ_ERROR_INSUFFICIENT_RESOURCES" "$T/err" || fail "store full: $(cat "$T/err")"
expect_rc 6 mq-send -s "$S2" big -f "$T/100k"
[ "$(mq-admin -s "$S2" stat big --json | jq .messages)" = "$sent" ] || fail "a refused send stored something"
expect_rc 0 mq-admin -s "$S2" check
# Raising the limit lets it grow again.
expect_rc 0 mq-admin -s "$S2" init --max-store-size 64M
expect_rc 0 mq-send -s "$S2" big -f "$T/100k"
expect_rc 2 mq-admin -s "$S2" init --max-store-size 1K
finish
