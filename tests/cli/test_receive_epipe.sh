#!/bin/bash
# A receive whose output cannot be written (the reader closed the pipe) rolls back: exit 10
# with one line on stderr, and every message not completely written is still in the queue.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq -r .messages; }

# One big message (far more than a pipe holds) to a reader that reads nothing and exits.
expect_rc 0 mq-admin create q
head -c 2097152 /dev/urandom >"$T/big"
expect_rc 0 mq-send -f "$T/big" q
expect_rc 0 mq-send q small-after
(mq-receive q 2>"$T/err1"; echo $? >"$T/rc1") | head -c 0
[ "$(cat "$T/rc1")" = 10 ] || fail "receive into a closed pipe exited $(cat "$T/rc1"), not 10"
[ "$(wc -l <"$T/err1")" = 1 ] && grep -Eq '^mq-receive: .*(pipe|EPIPE|MQ_BROKEN_PIPE)' "$T/err1" ||
  fail "receive into a closed pipe: stderr '$(cat "$T/err1")'"
[ "$(count q)" = 2 ] || fail "the big message was lost on EPIPE: count $(count q)"
mq-peek q >"$T/got"
cmp -s "$T/big" "$T/got" || fail "the message at the head is not the big one any more"
# The same through -n and --all and --json.
for opts in "-n 2 -0" "--all -0" "--json" "--top 1"; do
  (mq-receive q $opts 2>"$T/err2"; echo $? >"$T/rc2") | head -c 0
  [ "$(cat "$T/rc2")" = 10 ] || fail "receive $opts into a closed pipe exited $(cat "$T/rc2")"
  [ "$(wc -l <"$T/err2")" = 1 ] || fail "receive $opts: stderr '$(cat "$T/err2")'"
  [ "$(count q)" = 2 ] || fail "receive $opts into a closed pipe lost messages: count $(count q)"
done
# A reader that reads part of the message and then leaves.
(mq-receive q 2>/dev/null; echo $? >"$T/rc3") | head -c 100000 >/dev/null
[ "$(cat "$T/rc3")" = 10 ] || fail "receive to a reader leaving midway exited $(cat "$T/rc3")"
[ "$(count q)" = 2 ] || fail "a partly read message was removed"
# mq-peek into a closed pipe just stops; it never removes anything.
(mq-peek q --all -0 2>"$T/err4"; echo $? >"$T/rc4") | head -c 0
[ "$(cat "$T/rc4")" = 0 ] && [ ! -s "$T/err4" ] ||
  fail "peek into a closed pipe: exit $(cat "$T/rc4"), stderr '$(cat "$T/err4")' (expected a quiet 0)"
[ "$(count q)" = 2 ] || fail "peek into a closed pipe changed the queue"
# A reader that stays gets everything.
mq-receive q --all -0 >"$T/got"
{ cat "$T/big"; printf '\0small-after\0'; } | cmp -s - "$T/got" || fail "the full receive after EPIPEs differs"
[ "$(count q)" = 0 ] || fail "the full receive left messages"

# Many messages, several batches' worth (a batch is up to 4,000 messages or 4 MiB, removed
# whole once read whole, or not at all): the reader takes about 5.5 MiB and leaves.
pad=$(printf 'x%.0s' $(seq 990))
for i in $(seq 10000 18999); do echo "$i $pad"; done >"$T/lines"
expect_rc 0 mq-send -l q <"$T/lines"
(mq-receive q --all -l 2>"$T/err5"; echo $? >"$T/rc5") | head -c 5500000 >"$T/partial"
[ "$(cat "$T/rc5")" = 10 ] || fail "--all into a reader that leaves exited $(cat "$T/rc5"), not 10"
[ "$(wc -l <"$T/err5")" = 1 ] || fail "--all EPIPE: stderr '$(cat "$T/err5")'"
left=$(count q)
[ "$left" -lt 9000 ] && [ "$left" -gt 0 ] || fail "--all EPIPE: $left of 9000 left (expected some, not all)"
mq-peek q --all -l >"$T/rest"
# Nothing lost: every line was either completely delivered or is still queued.
grep -c '' "$T/rest" | grep -qx "$left" || fail "peek shows another number of messages than stat"
complete=$(grep -c "^[0-9]* $pad\$" "$T/partial")
{ head -n "$complete" "$T/partial"; cat "$T/rest"; } | sort -u >"$T/union"
sort "$T/lines" | cmp -s - "$T/union" || fail "--all EPIPE: messages lost (delivered $complete, left $left)"
# What stays is the tail of the queue, in order.
tail -n "$left" "$T/lines" | cmp -s - "$T/rest" || fail "--all EPIPE: the messages left are not the tail, in order"
expect_rc 0 mq-admin check

finish
