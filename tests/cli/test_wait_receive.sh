#!/bin/bash
# Waiting readers (-w/--wait): a waiter started before the send wakes and takes exactly that
# message; -w DURATION on an empty queue ends with exit 1 (MQ_ERROR_IO_TIMEOUT) after at least
# DURATION and well before 2 s; -w 0 looks once (MQ_ERROR_MESSAGE_NOT_FOUND); a bare -w/--wait
# waits forever; sends to another queue do not wake a waiter; a waiter sleeps (no polling).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create other

# 1. A waiter started before the send gets exactly that message, and only one waiter takes it.
for tool in "mq-receive -w" "mq-receive --wait" "mq-receive -w 10s" "mq-receive --wait=10s" \
            "mq-peek -w" "mq-peek --wait 10s"; do
  start $tool q
  wait_blocked "$PID" poll
  expect_rc 0 mq-send q "hello from $tool"
  expect_bg 0 "$PID"
  expect_out "hello from $tool"
  [ -s "$T/err" ] && fail "'$tool' wrote to stderr: $(cat "$T/err")"
  if [ "${tool%% *}" = mq-peek ]; then
    expect_rc 0 mq-receive q   # peek left it there
    expect_out "hello from $tool"
  fi
  expect_rc 1 mq-peek q
done

# The waiter takes the message that arrives, in full (properties too), and leaves the rest.
start mq-receive q --wait 10s --template '{lookup_id} {priority} {label} {body}\n'
wait_blocked "$PID" poll
expect_rc 0 mq-send -p 6 -L lbl q first
expect_bg 0 "$PID"
lookup=$(mq-peek q --all --template '{lookup_id}\n' 2>/dev/null)
[ -z "$lookup" ] || fail "queue not empty after the waiter took the only message: $lookup"
got=$(cat "$T/out")
case $got in
  [0-9]*" 6 lbl first") ;;
  *) fail "waiter printed '$got', expected 'LOOKUP 6 lbl first'" ;;
esac

# A send to another queue does not end the wait; the one to the waited queue does.
start mq-receive q --wait 10s
wait_blocked "$PID" poll
expect_rc 0 mq-send other not-for-q
sleep 0.2
kill -0 "$PID" 2>/dev/null || fail "a send to another queue ended the wait on q"
expect_rc 0 mq-send q for-q
expect_bg 0 "$PID"
expect_out for-q
expect_rc 0 mq-receive other
expect_out not-for-q

# Two waiters, one message: one gets it, the other keeps waiting until a second arrives.
start mq-receive q --wait 10s; p1=$PID
start mq-receive q --wait 10s; p2=$PID
wait_blocked "$p1" poll
wait_blocked "$p2" poll
expect_rc 0 mq-send q one
sleep 0.2
alive=0
kill -0 "$p1" 2>/dev/null && alive=$((alive + 1))
kill -0 "$p2" 2>/dev/null && alive=$((alive + 1))
[ "$alive" = 1 ] || fail "$alive of 2 waiters still wait after one message (expected 1)"
expect_rc 0 mq-send q two
expect_bg 0 "$p1"; a=$(cat "$T/out")
expect_bg 0 "$p2"; b=$(cat "$T/out")
[ "$(printf '%s\n' "$a" "$b" | sort | tr '\n' ' ')" = "one two " ] ||
  fail "two waiters got '$a' and '$b', expected one and two"

# A waiter sleeps: no wake-ups while nothing happens (a 10 ms poll would make ~50).
start mq-receive q --wait 10s
wait_blocked "$PID" poll
p=$(tool_pid "$PID")
before=$(awk '/^voluntary_ctxt_switches/ {print $2}' /proc/"$p"/status)
sleep 0.5
after=$(awk '/^voluntary_ctxt_switches/ {print $2}' /proc/"$p"/status)
[ $((after - before)) -le 2 ] ||
  fail "a waiting mq-receive woke $((after - before)) times in 0.5 s with nothing to do"
expect_rc 0 mq-send q wake
expect_bg 0 "$PID"
expect_out wake

# 2. -w 200ms on an empty queue: exit 1 with MQ_ERROR_IO_TIMEOUT after >= 200 ms and < 2 s.
for cmd in "mq-receive q -w 200ms" "mq-receive q --wait 200ms" "mq-peek q --wait=200ms" \
           "mq-receive q -w 0.2s" "mq-peek q -w 200ms --json"; do
  now_us; t0=$NOW
  expect_rc 1 timeout 10 $cmd
  now_us; ms=$(((NOW - t0) / 1000))
  tool=${cmd%% *}
  expect_err_match "^$tool: q: timed out waiting for a message \\(MQ_ERROR_IO_TIMEOUT 0xC00E001B\\)\$"
  expect_out ''
  [ "$ms" -ge 200 ] || fail "'$cmd' gave up after $ms ms, before 200 ms"
  [ "$ms" -lt 2000 ] || fail "'$cmd' gave up after $ms ms, expected well under 2 s"
done
# -w 1s: the same with another unit.
now_us; t0=$NOW
expect_rc 1 timeout 10 mq-receive q -w 1s
now_us; ms=$(((NOW - t0) / 1000))
expect_err_match 'MQ_ERROR_IO_TIMEOUT 0xC00E001B'
[ "$ms" -ge 1000 ] && [ "$ms" -lt 2500 ] || fail "-w 1s gave up after $ms ms"

# -w 0 (and no -w) look once: MQ_ERROR_MESSAGE_NOT_FOUND at once.
for cmd in "mq-receive q -w 0" "mq-receive q --wait 0" "mq-peek q --wait=0" "mq-receive q"; do
  now_us; t0=$NOW
  expect_rc 1 timeout 10 $cmd
  now_us; ms=$(((NOW - t0) / 1000))
  expect_err_match "^${cmd%% *}: q: no message \\(MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\\)\$"
  [ "$ms" -lt 1000 ] || fail "'$cmd' took $ms ms to look once"
done

# A bare --wait before the queue name, or followed by another option, waits forever: it is
# still waiting after 0.5 s, and a message ends it.
for args in "-w q" "--wait q" "q --wait --json" "q -w -l" "q --wait infinite" "q -w -1"; do
  start mq-receive $args
  wait_blocked "$PID" poll
  sleep 0.5
  kill -0 "$PID" 2>/dev/null || fail "'mq-receive $args' did not wait"
  expect_rc 0 mq-send q "for $args"
  expect_bg 0 "$PID"
  case $args in
    *--json*) grep -q "\"body\":\"for $args\"" "$T/out" || fail "'mq-receive $args' printed $(cat "$T/out")" ;;
    *-l*) expect_out "for $args"$'\n' ;;
    *) expect_out "for $args" ;;
  esac
done

# A message already there is taken without waiting.
expect_rc 0 mq-send q ready
now_us; t0=$NOW
expect_rc 0 timeout 10 mq-receive q --wait 10s
now_us
expect_out ready
[ $(((NOW - t0) / 1000)) -lt 1000 ] || fail "a waiter took $(((NOW - t0) / 1000)) ms for a message already there"

# A missing queue is not waited for.
expect_rc 3 timeout 10 mq-receive nosuch --wait
expect_err_match '^mq-receive: nosuch: .*\(MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003\)$'
expect_rc 3 timeout 10 mq-peek nosuch -w 10s
expect_err_match '^mq-peek: nosuch: .*\(MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003\)$'

expect_rc 0 mq-admin check
expect_out ''
finish
