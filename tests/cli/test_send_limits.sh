#!/bin/bash
# Size limits of mq-send: the 4 MiB default message size, --max-message-size, --quota and
# the 250-character label. A refused send exits 6 (or 2 for the label) and stores nothing.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq -r .messages; }
bytes() { mq-admin stat "$1" --json | jq -r .bytes; }

expect_rc 0 mq-admin create q
# Exactly 4 MiB: accepted, and received intact.
head -c 4194304 /dev/urandom >"$T/4m"
expect_rc 0 mq-send -f "$T/4m" q
expect_rc 0 mq-send q <"$T/4m"
[ "$(count q)" = 2 ] || fail "two 4 MiB messages: count is $(count q)"
before=$(bytes q)
# One byte more: refused with 6, nothing stored, by -f and by stdin.
head -c 4194305 /dev/urandom >"$T/4m1"
expect_rc 6 mq-send -f "$T/4m1" q
expect_err_match '^mq-send: q: .*4194305.*MQ_ERROR_INSUFFICIENT_RESOURCES'
expect_rc 6 mq-send q <"$T/4m1"
expect_err_match 'MQ_ERROR_INSUFFICIENT_RESOURCES'
[ "$(count q)" = 2 ] || fail "a refused 4 MiB + 1 send changed the count to $(count q)"
[ "$(bytes q)" = "$before" ] || fail "a refused send changed the byte count"
# ... and with -l, a single over-long line.
head -c 4194305 /dev/zero | tr '\0' a >"$T/line"
expect_rc 6 mq-send -l q < <(cat "$T/line"; echo)
[ "$(count q)" = 2 ] || fail "a refused -l line changed the count to $(count q)"
mq-receive q >"$T/got"
cmp "$T/4m" "$T/got" || fail "4 MiB body changed on the way"
expect_rc 0 mq-admin purge q

# A queue's own limit.
expect_rc 0 mq-admin create small --max-message-size 10
expect_rc 0 mq-send small 0123456789
expect_rc 6 mq-send small 0123456789a
expect_err_match '^mq-send: small: .*11 bytes.*MQ_ERROR_INSUFFICIENT_RESOURCES'
[ "$(count small)" = 1 ] || fail "an 11-byte body in a 10-byte queue changed the count"
expect_rc 2 mq-admin create small2 --max-message-size 0
expect_rc 2 mq-admin create small3 --max-message-size lots
expect_rc 3 mq-peek small3

# Quota: the send that would go over it fails whole, earlier ones stay.
expect_rc 0 mq-admin create quoted --quota 1K
sent=0
pad="some padding to fill the quota quickly"
for i in $(seq 10 50); do
  run mq-send quoted "message number $i, $pad"
  [ "$RC" = 0 ] || break
  sent=$((sent + 1))
done
[ "$RC" = 6 ] || fail "filling a 1K quota ended with exit $RC, not 6"
expect_err_match '^mq-send: quoted: .*quota.*MQ_ERROR_INSUFFICIENT_RESOURCES'
[ "$sent" -gt 0 ] || fail "no send fit into a 1K quota"
[ "$(count quoted)" = "$sent" ] || fail "quota: count $(count quoted) != $sent successful sends"
[ "$(bytes quoted)" -le 1024 ] || fail "quota: $(bytes quoted) bytes stored in a 1K quota"
expect_rc 6 mq-send quoted "message number 99, $pad"
[ "$(count quoted)" = "$sent" ] || fail "a refused send under quota changed the count"
# Room again after a receive.
expect_rc 0 mq-receive quoted
expect_out "message number 10, $pad"
expect_rc 0 mq-send quoted "message number 99, $pad"
[ "$(count quoted)" = "$sent" ] || fail "after receive + send the count is $(count quoted)"
# A -l batch that would exceed the quota at once stores nothing.
expect_rc 6 mq-send -l quoted < <(seq 1 200)
[ "$(count quoted)" = "$sent" ] || fail "a refused -l batch changed the count"

# Labels: 250 characters (not bytes) is the limit.
l250=$(printf 'x%.0s' $(seq 250))
expect_rc 0 mq-send -L "$l250" q body
expect_rc 2 mq-send -L "${l250}x" q body
expect_err_match 'MQ_ERROR_LABEL_TOO_LONG'
u250=$(printf 'é%.0s' $(seq 250))
expect_rc 0 mq-send -L "$u250" q body
expect_rc 2 mq-send -L "${u250}é" q body
expect_rc 0 mq-peek -n 9 q --template '{label}\n'
expect_out "$l250
$u250
"
expect_rc 0 mq-admin check

finish
