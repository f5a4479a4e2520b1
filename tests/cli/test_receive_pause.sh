#!/bin/bash
# mq-admin set Q --receive off|on (issue 26, item 4): with receiving paused sends go on,
# peeks see the messages, receivers find nothing (-w 0: exit 1, saying why), waiting
# receivers keep waiting and each gets a message at once when it is on again, mq-watch
# --exec starts no receiver; stat, list and --json show it; --status off still stops both.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin set q --receive off

# 1. Sends go on; peek sees; receive finds nothing and says why.
expect_rc 0 mq-send q one
expect_rc 0 mq-peek q
expect_out 'one'
expect_rc 1 mq-receive q -w 0
expect_err_match '^mq-receive: q: receiving is paused \(mq-admin set q --receive on\) \(MQ_ERROR_MESSAGE_NOT_FOUND'
expect_rc 1 mq-receive q -w 200ms
expect_err_match 'timed out waiting for a message: receiving is paused'
expect_rc 1 mq-receive q --lease 1m -w 0
expect_rc 1 mq-receive q -w 0 --exec true
[ "$(mq-admin stat q --json | jq -r '.status + " " + .receive + " " + (.messages | tostring)')" = 'on off 1' ] ||
  fail "stat --json: $(mq-admin stat q --json)"
mq-admin stat q | grep -Eq '^q +.* paused$' || fail "stat: $(mq-admin stat q)"
[ "$(mq-admin list --json | jq -r 'select(.queue == "q") | .receive')" = off ] ||
  fail "list --json: $(mq-admin list --json)"
mq-admin stat q --format prometheus | grep -q '^mq_queue_receiving{.*queue="q"} 0$' ||
  fail "prometheus: no mq_queue_receiving 0"

# 2. Three receivers wait; receiving on, each gets one message promptly.
expect_rc 0 mq-send q two
expect_rc 0 mq-send q three
pids=()
for i in 1 2 3; do
  start mq-receive q -w 20s
  pids+=("$PID")
  wait_blocked "$PID" poll
done
sleep 0.3
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "a waiting receiver ended while paused"; done
t0=$(date +%s%3N)
expect_rc 0 mq-admin set q --receive on
got=
for p in "${pids[@]}"; do
  expect_bg 0 "$p"
  got+="$(cat "$T/out") "
done
t1=$(date +%s%3N)
[ "$(tr ' ' '\n' <<<"$got" | sort | tr '\n' ' ')" = ' one three two ' ] || fail "the receivers got '$got'"
((t1 - t0 < 3000)) || fail "the waiting receivers took $((t1 - t0)) ms to wake"
expect_rc 1 mq-receive q -w 0
expect_err_match 'no message'

# 3. mq-watch --exec starts nothing while paused, and handles all once it is on.
expect_rc 0 mq-admin set q --receive off
for i in 1 2 3 4; do mq-send q "m$i"; done
start mq-watch q --max-readers 2 --exec sh -c 'b=$(cat); echo "$b" >> "$0/done"' "$T"
w=$PID
sleep 1
[ -e "$T/done" ] && fail "mq-watch --exec started a receiver while receiving was paused"
[ "$(mq-admin stat q --json | jq .messages)" = 4 ] || fail "messages left the paused queue"
expect_rc 0 mq-admin set q --receive on
for ((i = 0; i < 500; i++)); do
  [ "$(grep -c . "$T/done" 2>/dev/null)" = 4 ] && break
  sleep 0.02
done
[ "$(sort "$T/done" 2>/dev/null | grep . | tr '\n' ' ')" = 'm1 m2 m3 m4 ' ] ||
  fail "the activator handled '$(cat "$T/done" 2>/dev/null)'"
kill -TERM "$(tool_pid "$w")"
expect_bg 0 "$w"

# 4. Create paused; a conversation receive and a cursor receive are paused too; --status off
# still refuses sends.
expect_rc 0 mq-admin create p --receive off
[ "$(mq-admin list --json | jq -r 'select(.queue == "p") | .receive')" = off ] ||
  fail "create --receive off: $(mq-admin list --json)"
expect_rc 0 mq-admin create p --receive off --exist-ok
expect_rc 5 mq-admin create p --receive on --exist-ok
expect_err_match 'receive off, not on'
expect_rc 0 mq-send p x
expect_rc 0 mq-peek p --cursor c --first
expect_rc 1 mq-receive p --cursor c --current
expect_err_match 'receiving is paused'
expect_rc 0 mq-admin set p --status off
expect_rc 5 mq-send p y
expect_rc 0 mq-admin set p --status on --receive on
expect_rc 0 mq-receive p
expect_out 'x'
expect_rc 2 mq-admin set p --receive maybe
expect_rc 0 mq-admin check
finish
