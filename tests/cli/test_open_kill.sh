#!/bin/bash
# A process killed while LMDB makes the store's lock file must cost nothing already committed.
#
# The first process to open a store (no other has it open) makes lock.mdb again under an
# fcntl lock of LMDB's: its last transaction id is 0 until the end of the open. Stopped there
# (gdb, at the return of mdb_env_setup_locks) and killed while a sender waits to open the
# store, it left that sender a lock file whose last transaction id was 0: the send started
# from the older of the two meta pages and committed to the slot readers do not pick. The
# last message sent before, and this one, were lost without an error, and mq-admin check
# passed (test_kill_random saw it as a message lost and another delivered twice). Opens and
# closes of a store now take turns (lmdb.cpp, OpenCloseLock): the sender opens only after the
# killed one is gone, and makes the lock file again itself.
. "$(dirname "$0")/lib.sh"
command -v gdb >/dev/null || skip "no gdb (scripts/setup.sh installs it)"
command -v mdb_stat >/dev/null || skip "no mdb_stat (lmdb-utils)"
nm "$MQ_BIN/mq-peek" 2>/dev/null | grep -q ' mdb_env_setup_locks$' ||
  skip "mq-peek has no symbol mdb_env_setup_locks (stripped?)"

last_txn() { mdb_stat -e "$STORE" | sed -n 's/.*Last transaction ID: //p'; }
count() { mq-admin stat q --json | jq .messages; }

expect_rc 0 mq-admin create q
for b in m1 m2 m3; do expect_rc 0 mq-send q "$b"; done
# The last transaction odd: its meta page is slot 1, and slot 0 holds the one before, which
# is where a writer that believes the last transaction is 0 starts.
(($(last_txn) % 2 == 1)) || expect_rc 0 mq-send q m4
before=$(count)
txn=$(last_txn)

# mq-peek stopped inside its open, holding LMDB's exclusive lock of a lock file just made.
cat >"$T/gdb.cmd" <<EOF
set pagination off
break mdb_env_setup_locks
run
finish
shell touch $T/stopped
shell sleep 1
kill
quit
EOF
gdb -q -batch -x "$T/gdb.cmd" --args "$MQ_BIN/mq-peek" q >"$T/gdb.log" 2>&1 &
gdb_pid=$!
until_true 20 test -e "$T/stopped" || { fail "gdb never stopped mq-peek: $(tail -n 5 "$T/gdb.log")"; finish; }
grep -q " in mdb_env_open ()" "$T/gdb.log" || fail "gdb did not stop in mdb_env_open after mdb_env_setup_locks: $(tail -n 3 "$T/gdb.log")"
# A send that opens the store meanwhile: it waits for the stopped peek, which gdb then kills.
mq-send q after >"$T/send.out" 2>"$T/send.err" &
send_pid=$!
wait "$gdb_pid"
wait "$send_pid"
rc=$?
[ $rc = 0 ] || fail "the send exited $rc: $(cat "$T/send.err")"

[ "$(count)" = $((before + 1)) ] || fail "the store holds $(count) messages, not $((before + 1))"
got=$(mq-peek q --all -l | tr '\n' ' ')
case $got in
  "m1 m2 m3 after " | "m1 m2 m3 m4 after ") ;;
  *) fail "the queue holds '$got': a committed message is lost" ;;
esac
[ "$(last_txn)" -gt "$txn" ] || fail "the last transaction went back from $txn to $(last_txn)"
run mq-admin check
[ "$RC" = 0 ] || fail "mq-admin check exited $RC: $(head -n 3 "$T/out" "$T/err")"
# And the store goes on: one more send and receive.
expect_rc 0 mq-send q more
[ "$(mq-receive q --all -l | tail -n 1)" = more ] || fail "the last message received is not 'more'"
finish
