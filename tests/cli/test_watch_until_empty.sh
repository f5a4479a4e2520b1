#!/bin/bash
# mq-watch --until-empty (issue 26, item 6): exit 0 as soon as the queue holds no message in any
# state, at once when it is empty; a Locked message counts until it is received, and one rolled
# back is there again; a delayed message counts; -w D ends with MQ_ERROR_IO_TIMEOUT, exit 1;
# no polling: it sleeps in poll(2) while it waits.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q

# 1. Already empty: at once, text and JSON.
expect_rc 0 mq-watch q --until-empty
expect_out 'empty q
'
expect_rc 0 mq-watch q --until-empty --json -w 0
expect_out '{"event":"empty","queue":"q"}
'

# 2. Not empty: -w 0 and -w 300ms are the timeout event, exit 1.
expect_rc 0 mq-send q one
expect_rc 1 mq-watch q --until-empty -w 0
expect_out 'error q MQ_ERROR_IO_TIMEOUT 0xC00E001B
'
expect_rc 1 mq-watch q --until-empty -w 300ms --json
expect_out '{"event":"error","queue":"q","error":"MQ_ERROR_IO_TIMEOUT","code":"0xC00E001B"}
'

# 3. A Locked message (a --lease receive) is not empty; rolled back (nack) it is visible again,
# still not empty; received, the watcher ends at once.
expect_rc 0 mq-receive q --lease 1h
tok=$(cat "$T/err")
start mq-watch q --until-empty
w=$PID
wait_blocked "$w" poll
expect_rc 0 mq-admin nack "$tok"
sleep 0.3
kill -0 "$w" 2>/dev/null || fail "--until-empty ended when a Locked message was rolled back"
expect_rc 0 mq-receive q
expect_out 'one'
t0=$(date +%s%3N)
wait "$w"
rc=$?
t1=$(date +%s%3N)
[ "$rc" = 0 ] || fail "--until-empty after the last receive exited $rc"
[ "$(cat "$T/bg.$w.out")" = 'empty q' ] || fail "--until-empty printed '$(cat "$T/bg.$w.out")'"
((t1 - t0 < 2000)) || fail "--until-empty took $((t1 - t0)) ms to see the queue empty"

# 4. The --exec receiver that fails rolls back (not empty); one that succeeds empties it.
expect_rc 0 mq-send q two
start mq-watch q --until-empty
w=$PID
wait_blocked "$w" poll
expect_rc 8 mq-receive q --exec sh -c 'cat >/dev/null; exit 3'
sleep 0.3
kill -0 "$w" 2>/dev/null || fail "--until-empty ended when an --exec receive rolled back"
expect_rc 0 mq-receive q --exec sh -c 'cat >/dev/null'
wait "$w" || fail "--until-empty after the --exec receive exited $?"

# 5. A delayed message counts; a purge empties the queue.
expect_rc 0 mq-send q later --delay 1h
expect_rc 1 mq-watch q --until-empty -w 0
start mq-watch q --until-empty
w=$PID
wait_blocked "$w" poll
expect_rc 0 mq-admin purge q
wait "$w" || fail "--until-empty after a purge exited $?"

# 6. Refusals: what does not go with it; a missing queue.
expect_rc 2 mq-watch q --until-empty --follow
expect_err_match 'until-empty watches the whole queue'
expect_rc 2 mq-watch q --until-empty --exec true
expect_rc 3 mq-watch nosuch --until-empty
finish
