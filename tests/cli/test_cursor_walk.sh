#!/bin/bash
# Named cursors (MQMSG_FIRST, CURRENT, NEXT kept in the store): the walk follows delivery order
# (priority, then arrival), persists across invocations, is independent per name, survives
# the removal of the message it stands on, and, while other processes send and receive, never
# returns a message twice nor skips one that is still present.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

TPL='{lookup_id} {body}\n'
cur() { expect_rc "$1" mq-peek q --cursor "${CUR:-c}" "${@:2}" --template "$TPL"; }

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q m1           # lookup 1
expect_rc 0 mq-send q m2           # 2
expect_rc 0 mq-send -p 5 q m3      # 3, higher priority: first in delivery order
expect_rc 0 mq-send q m4           # 4
# Delivery order: 3 1 2 4.

# A cursor never moved has no next message (MQ_ERROR_ILLEGAL_CURSOR_ACTION, 7), and nothing
# to receive at; CURRENT is its first move (MSMQ "Cursor Behavior"): to the first message,
# which it peeks (cursor e).
CUR=e cur 0 --current; expect_out $'3 m3\n'
CUR=e cur 0 --next; expect_out $'1 m1\n'
expect_rc 0 mq-admin delete-cursor q e
cur 7 --next
expect_err_match '^mq-peek: q: .*\(MQ_ERROR_ILLEGAL_CURSOR_ACTION 0xC00E001C\)$'
expect_rc 7 mq-receive q --cursor c --current
expect_err_match '^mq-receive: q: .*\(MQ_ERROR_ILLEGAL_CURSOR_ACTION 0xC00E001C\)$'
expect_rc 0 mq-peek q --all --template '{lookup_id} '
expect_out '3 1 2 4 '

# first / current / next, each a separate process: the position is kept in the store.
cur 0 --first;   expect_out $'3 m3\n'
cur 0 --current; expect_out $'3 m3\n'
cur 0 --current; expect_out $'3 m3\n'
cur 0 --next;    expect_out $'1 m1\n'
cur 0 --next;    expect_out $'2 m2\n'
cur 0 --current; expect_out $'2 m2\n'
# Another cursor is independent.
CUR=d cur 0 --first; expect_out $'3 m3\n'
cur 0 --current; expect_out $'2 m2\n'
CUR=d cur 0 --next; expect_out $'1 m1\n'
# Peeking at a cursor removes nothing.
expect_rc 0 mq-peek q --all --template '{lookup_id} '
expect_out '3 1 2 4 '

# Someone else receives the message after the cursor: NEXT skips what is gone.
expect_rc 0 mq-receive q --lookup-id 4
expect_out m4
cur 1 --next
expect_err_match '^mq-peek: q: no message \(MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\)$'
expect_out ''
# A failed NEXT does not move the cursor.
cur 0 --current; expect_out $'2 m2\n'
# A message sent later is found by NEXT.
expect_rc 0 mq-send q m5            # 5
cur 0 --next; expect_out $'5 m5\n'

# Receive at the cursor: the message goes; CURRENT then says it was received (exit 1), and
# NEXT continues after the place where it stood.
expect_rc 0 mq-send q m6            # 6
expect_rc 0 mq-receive q --cursor c --current
expect_out m5
cur 1 --current
expect_err_match '^mq-peek: q: .*\(MQ_ERROR_MESSAGE_ALREADY_RECEIVED 0x[0-9A-F]{8}\)$'
expect_out ''
expect_rc 1 mq-receive q --cursor c --current
expect_err_match '^mq-receive: q: .*\(MQ_ERROR_MESSAGE_ALREADY_RECEIVED 0x[0-9A-F]{8}\)$'
cur 0 --next; expect_out $'6 m6\n'
# Received by someone else (not at the cursor): the same.
expect_rc 0 mq-receive q --lookup-id 6
cur 1 --current
expect_err_match 'MQ_ERROR_MESSAGE_ALREADY_RECEIVED'

# NEXT --wait at the end waits for the next message to arrive.
start mq-peek q --cursor c --next --wait 10s --template "$TPL"
wait_blocked "$PID" poll
expect_rc 0 mq-send q m7            # 7
expect_bg 0 "$PID"
expect_out $'7 m7\n'
cur 0 --current; expect_out $'7 m7\n'
# ... or gives up with MQ_ERROR_IO_TIMEOUT.
cur 1 --next --wait 200ms
expect_err_match '^mq-peek: q: timed out waiting for a message \(MQ_ERROR_IO_TIMEOUT 0xC00E001B\)$'

# A message of higher priority sent after the cursor passed is behind it (MSMQ cursors walk
# the delivery order), so NEXT does not return it; FIRST does.
expect_rc 0 mq-send -p 7 q urgent   # 8
cur 1 --next
cur 0 --first; expect_out $'8 urgent\n'
cur 0 --next;  expect_out $'3 m3\n'
cur 0 --next;  expect_out $'1 m1\n'
# A NEXT that waits at the end of the queue moves to the next message that arrives, wherever
# its priority places it (MSMQ), and the walk goes on from there in delivery order.
cur 0 --next;  expect_out $'2 m2\n'
cur 0 --next;  expect_out $'7 m7\n'
start mq-peek q --cursor c --next --wait 10s --template "$TPL"
wait_blocked "$PID" poll
expect_rc 0 mq-send -p 6 q high     # 9: before m3 in delivery order
expect_bg 0 "$PID"
expect_out $'9 high\n'
cur 0 --next;  expect_out $'3 m3\n'

# FIRST --wait on an empty queue waits for the first message.
expect_rc 0 mq-admin purge q
start mq-peek q --cursor c --first --wait 10s --template "$TPL"
wait_blocked "$PID" poll
expect_rc 0 mq-send q m9            # 10
expect_bg 0 "$PID"
expect_out $'10 m9\n'

# The walk while 2 processes receive and 1 sends: strictly increasing lookup ids (the queue
# order at one priority: nothing twice), and every message still present at the end that lies
# within the walk was returned by it (nothing skipped).
expect_rc 0 mq-admin purge q
expect_rc 0 mq-send -l q < <(seq -f 'w%g' 1 300)   # lookup ids 11..310
first=$(mq-peek q --all --template '{lookup_id}\n' | head -1)
[ "$first" = 11 ] || fail "expected the walk to start at lookup id 11, not '$first'"
(
  # Receives every third of the original messages, from the end backwards.
  for ((id = 310; id >= 11; id -= 3)); do
    timeout -s KILL 20 mq-receive q --lookup-id "$id" >/dev/null 2>>"$T/walk-errors.1"
  done
) &
r1=$!; BG+=($r1)
(
  # Takes 40 messages from the head, some of them where the walk stands.
  for ((i = 0; i < 40; i++)); do
    timeout -s KILL 20 mq-receive q >/dev/null 2>>"$T/walk-errors.2"
    sleep 0.005
  done
) &
r2=$!; BG+=($r2)
(
  for ((i = 1; i <= 100; i++)); do
    timeout -s KILL 20 mq-send q "s$i" 2>>"$T/walk-errors.3" || echo "mq-send exited $?" >>"$T/walk-errors.3"
  done
  timeout -s KILL 20 mq-send q END
) &
s1=$!; BG+=($s1)
: >"$T/walk"
rc=0
timeout -s KILL 20 mq-peek q --cursor walk --first --template "$TPL" >>"$T/walk" || rc=$?
[ $rc = 0 ] || fail "the walk's --first exited $rc"
while :; do
  timeout -s KILL 20 mq-peek q --cursor walk --next --wait 10s --template "$TPL" >>"$T/walk"
  rc=$?
  [ $rc = 0 ] || { fail "the walk's --next --wait exited $rc"; break; }
  [ "$(tail -n 1 "$T/walk" | cut -d' ' -f2)" = END ] && break
done
wait $r1 $r2 $s1
cat "$T"/walk-errors.3 2>/dev/null | grep -q . && fail "the sender failed: $(head -3 "$T/walk-errors.3")"
# The head receiver may find the queue empty only if the walk ran far ahead; errors other than
# "no message" are failures.
grep -hv 'MQ_ERROR_MESSAGE_NOT_FOUND' "$T"/walk-errors.[12] 2>/dev/null | grep -q . &&
  fail "a receiver failed: $(grep -hv MQ_ERROR_MESSAGE_NOT_FOUND "$T"/walk-errors.[12] | head -3)"
cut -d' ' -f1 "$T/walk" >"$T/walk.ids"
sort -n -c "$T/walk.ids" 2>/dev/null || fail "the walk went backwards: $(tr '\n' ' ' <"$T/walk.ids" | head -c 300)"
dups=$(sort -n "$T/walk.ids" | uniq -d | head -3)
[ -z "$dups" ] || fail "the walk returned lookup ids twice: $dups"
last=$(tail -n 1 "$T/walk.ids")
mq-peek q --all --template '{lookup_id}\n' >"$T/present"
missing=$(awk -v last="$last" 'NR == FNR { seen[$1] = 1; next } $1 <= last && !($1 in seen)' \
  "$T/walk.ids" "$T/present" | head -5)
[ -z "$missing" ] || fail "the walk skipped messages still present: $missing"
# Bodies belong to their lookup ids (each message returned is the one at that id).
awk '$1 >= 11 && $1 <= 310 && $2 != "w" ($1 - 10) { print; exit 1 }' "$T/walk" >"$T/bad" ||
  fail "the walk printed a wrong body: $(cat "$T/bad")"
n=$(wc -l <"$T/walk")
[ "$n" -ge 100 ] || fail "the walk returned only $n messages"

expect_rc 0 mq-admin check
expect_out ''
finish
