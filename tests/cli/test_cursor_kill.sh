#!/bin/bash
# A cursor holder or watcher killed with SIGKILL leaves nothing stuck: the cursor's flock goes
# with the process, so the next `mq-peek Q --cursor c --first --no-wait-lock` works at once
# (no exit 5); while the holder lives, --no-wait-lock fails with exit 5 and a waiting user
# queues behind it. Killed plain waiters leave no trace either, and the store checks clean.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q m1
expect_rc 0 mq-peek q --cursor c --first
expect_out m1
expect_rc 0 mq-receive q
expect_out m1

# 1. A cursor holder blocked in `--next --wait` on the (now empty) queue.
start mq-peek q --cursor c --next --wait; holder=$PID
wait_blocked "$holder" poll
expect_rc 5 timeout -s KILL 10 mq-peek q --cursor c --first --no-wait-lock
expect_err_match '\(MQ_ERROR_SHARING_VIOLATION 0xC00E0009\)$'
expect_out ''
expect_rc 0 mq-admin cursors
expect_out $'q\tc\t1\tin-use\n'
# A second user that waits for the lock queues behind the holder...
start mq-peek q --cursor c --first --wait 10s --template '{lookup_id} {body}\n'; second=$PID
# (a bounded wait for a cursor sleeps in poll() between tries of the lock: filelock.cpp)
wait_blocked "$second" poll
# ... until the holder is killed: then it gets its turn at once.
kill -KILL "$(tool_pid "$holder")"
expect_bg 137 "$holder"
expect_out ''
expect_rc 0 mq-send q m2
expect_bg 0 "$second"
expect_out $'2 m2\n'
expect_rc 0 mq-admin cursors
expect_out $'q\tc\t2\tidle\n'

# Killed again, this time with nothing queued behind it: the next --no-wait-lock user works.
start mq-peek q --cursor c --next --wait; holder=$PID
wait_blocked "$holder" poll
kill -KILL "$(tool_pid "$holder")"
expect_bg 137 "$holder"
now_us; t0=$NOW
expect_rc 0 timeout -s KILL 10 mq-peek q --cursor c --first --no-wait-lock
now_us
expect_out m2
[ $(((NOW - t0) / 1000)) -lt 1000 ] || fail "the cursor took $(((NOW - t0) / 1000)) ms to be free"
expect_rc 1 mq-peek q --cursor c --next --no-wait-lock
expect_err_match 'MQ_ERROR_MESSAGE_NOT_FOUND'

# 2. A watcher holding the named cursor (--follow), killed with SIGKILL.
start mq-watch q --cursor-name c --follow; watcher=$PID
wait_lines "$watcher" 1
wait_blocked "$watcher" poll
expect_rc 0 cat "$T/bg.$watcher.out"
expect_out $'arrived q 2\n'
expect_rc 5 timeout -s KILL 10 mq-peek q --cursor c --first --no-wait-lock
expect_err_match '\(MQ_ERROR_SHARING_VIOLATION 0xC00E0009\)$'
expect_rc 5 timeout -s KILL 10 mq-watch q --cursor-name c --no-wait-lock -t 0
expect_err_match '\(MQ_ERROR_SHARING_VIOLATION 0xC00E0009\)$'
kill -KILL "$(tool_pid "$watcher")"
expect_bg 137 "$watcher"
expect_rc 0 timeout -s KILL 10 mq-peek q --cursor c --first --no-wait-lock
expect_out m2
expect_rc 0 timeout -s KILL 10 mq-watch q --cursor-name c --no-wait-lock -t 0
expect_out $'arrived q 2\n'

# 3. A watcher with an anonymous cursor and plain waiters, killed: nothing is lost or stuck.
start mq-watch q --follow; w=$PID
start mq-receive q --lookup-id 999 --wait; r=$PID   # waits for a message that never comes
start mq-peek q --cursor other --first --wait --template '{body}'; o=$PID
wait_blocked "$w" poll
wait_blocked "$r" poll
kill -KILL "$(tool_pid "$w")"
expect_bg 137 "$w"
expect_out $'arrived q 2\n'
kill -KILL "$(tool_pid "$r")"
expect_bg 137 "$r"
expect_bg 0 "$o"        # m2 was there: it did not need to wait
expect_out m2
expect_rc 0 timeout -s KILL 10 mq-receive q
expect_out m2
start mq-receive q --wait 10s; r=$PID
wait_blocked "$r" poll
kill -KILL "$(tool_pid "$r")"
expect_bg 137 "$r"
expect_rc 0 mq-send q m3
expect_rc 0 timeout -s KILL 10 mq-receive q --wait 5s
expect_out m3
expect_rc 0 mq-admin cursors
expect_out $'q\tc\t2\tidle\nq\tother\t2\tidle\n'
expect_rc 0 mq-admin check
expect_out ''
finish
