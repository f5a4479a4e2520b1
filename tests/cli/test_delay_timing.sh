#!/bin/bash
# Delayed messages (mq-send --delay / --at): stored at once, invisible to peek, receive, cursors
# and watch before their time, visible never early and not much late: a receiver
# started after the send and waiters already asleep wake at the visible time (the deadline
# comes from the store's index: no polling); --at takes RFC 3339 (with milliseconds and
# offsets) and @EPOCH; sweep promotes due messages without a reader; a promoted message
# arrives (gets its lookup id) at its visible time.
#
# Timing on a loaded machine (issue 13, defect 7): "never early" is asserted strictly (a line
# read before the due time was written before it); "not late" with a generous bound (1 s, 3 s
# under the sanitizers), as a busy 2-core CI machine can deschedule the tools and this script
# for hundreds of ms; no polling is checked apart, by counting the waiter's wake-ups. A check
# that a message is still invisible counts only if it ended before the message was due.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q

# waiter_start CMD...: starts CMD with its stdout on a pipe, readable on fd 3.
waiter_start() {
  rm -f "$T/fifo"
  mkfifo "$T/fifo"
  ( exec timeout -s KILL 20 "$@" >"$T/fifo" 2>"$T/waiter.err" ) &
  PID=$!
  BG+=("$PID")
  printf '%s\n' "$*" >"$T/bg.$PID.cmd"
  exec 3<"$T/fifo"
}
# waiter_line: reads the waiter's next line into LINE and the time it came into NOW.
waiter_line() {
  LINE=
  read -r -t 10 -u 3 LINE || fail "no line from '$(cat "$T/bg.$PID.cmd")'"
  now_us
}
# expect_window WHAT T_US DUE_US: asserts DUE <= T (strictly) and T <= DUE + LATE_MS.
LATE_MS=1000
[ -n "${MQ_SANITIZED:-}" ] && LATE_MS=3000
expect_window() {
  local ms=$((($2 - $3) / 1000))
  [ "$2" -ge "$3" ] || fail "$1: visible $(((${3} - ${2}) / 1000)) ms early"
  [ "$ms" -le "$LATE_MS" ] || fail "$1: visible $ms ms late (more than $LATE_MS ms)"
}
# before_due DUE_US RC CMD...: runs CMD, expecting exit RC and no output; a different result
# fails only if CMD ended before DUE (later, the message may rightly be visible).
before_due() {
  local due=$1 want=$2
  shift 2
  run "$@"
  now_us
  local out_ok=1
  if [ -n "${WANT_OUT:-}" ]; then grep -q "$WANT_OUT" "$T/out" || out_ok=0
  else [ ! -s "$T/out" ] || out_ok=0; fi
  if [ "$NOW" -lt "$due" ] && { [ "$RC" != "$want" ] || [ "$out_ok" = 0 ]; }; then
    fail "'$*' before the due time: exit $RC (expected $want), stdout '$(cat "$T/out")'"
  fi
}

# Before its time a delayed message is stored but seen by no reader (2 s: long against the
# start-up of the tools, even on a loaded machine).
now_us; t0=$NOW
expect_rc 0 mq-send --delay 2s q d1
due=$((t0 + 2000000))
before_due "$due" 1 mq-peek q
[ "$NOW" -ge "$due" ] || grep -q '^mq-peek: q: no message (MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088)$' "$T/err" ||
  fail "mq-peek of a delayed message: $(cat "$T/err")"
before_due "$due" 1 mq-peek q --all -l
before_due "$due" 1 mq-receive q
before_due "$due" 1 mq-peek q --cursor c --first
WANT_OUT='^error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088$' before_due "$due" 1 mq-watch q -t 0
WANT_OUT='^error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088$' before_due "$due" 1 mq-watch q --follow -t 0
run mq-admin stat q --json
now_us
[ "$NOW" -ge "$due" ] || { grep -q '"delayed":1,' "$T/out" && grep -q '"messages":1,' "$T/out"; } ||
  fail "stat after a delayed send: $(cat "$T/out")"
# Still invisible just before its time (1.8 s after the send started).
now_us
[ "$NOW" -lt $((t0 + 1800000)) ] && sleep "$(printf '%d.%06d' $(((t0 + 1800000 - NOW) / 1000000)) $(((t0 + 1800000 - NOW) % 1000000)))"
before_due "$due" 1 mq-peek q
# A receiver started after the send gets it 2 s after the send, not much late.
waiter_start mq-receive q --wait 10s -l
waiter_line
expect_window "mq-send --delay 2s, then mq-receive --wait" "$NOW" "$due"
[ "$LINE" = d1 ] || fail "the receiver got '$LINE', not d1"
wait "$PID" || fail "the receiver exited $?"
exec 3<&-

# Waiters already asleep on the empty queue, each kind: they wake at the visible time.
for w in "mq-receive q --wait 5s -l" "mq-peek q --wait 5s -l" "mq-watch q -t 5s" \
         "mq-watch q --follow" "mq-peek q --cursor c --first --wait 5s -l"; do
  waiter_start $w
  wait_blocked "$PID" poll
  now_us; t0=$NOW
  expect_rc 0 mq-send --delay 300ms q "for $w"
  waiter_line
  expect_window "'$w' asleep before mq-send --delay 300ms" "$NOW" $((t0 + 300000))
  case $w in
    mq-watch*) [[ $LINE =~ ^arrived\ q\ [0-9]+$ ]] || fail "'$w' printed '$LINE'" ;;
    *) [ "$LINE" = "for $w" ] || fail "'$w' printed '$LINE'" ;;
  esac
  case $w in
    *--follow*) kill -TERM "$(tool_pid "$PID")" ;;
  esac
  wait "$PID" || fail "'$w' exited $?"
  exec 3<&-
  expect_rc 0 mq-admin purge q
done

# Two delayed messages, the later one sent first: each becomes visible at its own time.
waiter_start mq-watch q --follow --json
wait_blocked "$PID" poll
now_us; t0=$NOW
expect_rc 0 mq-send --delay 400ms -L late q late
expect_rc 0 mq-send --delay 150ms -L early q early
waiter_line
expect_window "the 150 ms message" "$NOW" $((t0 + 150000))
[[ $LINE == *'"label":"early"}' ]] || fail "first event: $LINE"
waiter_line
expect_window "the 400 ms message" "$NOW" $((t0 + 400000))
[[ $LINE == *'"label":"late"}' ]] || fail "second event: $LINE"
kill -TERM "$(tool_pid "$PID")"
wait "$PID" || fail "mq-watch --follow --json exited $?"
exec 3<&-
expect_rc 0 mq-admin purge q

# --at @EPOCH: the next whole second at least 0.5 s away.
now_us
at=$(((NOW + 1500000) / 1000000))
waiter_start mq-receive q --wait 5s -l
wait_blocked "$PID" poll
expect_rc 0 mq-send --at "@$at" q epoch
before_due $((at * 1000000)) 1 mq-peek q
waiter_line
expect_window "mq-send --at @$at" "$NOW" $((at * 1000000))
[ "$LINE" = epoch ] || fail "--at @EPOCH: got '$LINE'"
wait "$PID" || fail "the receiver exited $?"
exec 3<&-

# --at RFC 3339 with milliseconds, in UTC and with an offset: the same instant, 1.5 s after
# the receiver is waiting (taken before it started, the instant could pass while it started on
# a loaded machine, and a time already past is no delay at all).
waiter_start mq-receive q --wait 5s -n 2 --template '{body} {visible_time}\n'
wait_blocked "$PID" poll
now_us
due_ms=$(((NOW / 1000) + 1500))
utc=$(date -u -d "@$((due_ms / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf '%03d' $((due_ms % 1000)))Z
plus2=$(TZ=Etc/GMT-2 date -d "@$((due_ms / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf '%03d' $((due_ms % 1000)))+02:00
expect_rc 0 mq-send --at "$utc" q utc
expect_rc 0 mq-send --at "$plus2" q plus2
waiter_line
expect_window "mq-send --at $utc" "$NOW" $((due_ms * 1000))
[ "$LINE" = "utc $utc" ] || fail "--at RFC 3339: got '$LINE', expected 'utc $utc'"
waiter_line
[ "$LINE" = "plus2 $utc" ] || fail "--at with +02:00: got '$LINE', expected 'plus2 $utc'"
wait "$PID" || fail "the receiver exited $?"
exec 3<&-

# No delay, or a time already past: visible at once.
expect_rc 0 mq-send --delay 0 q now
expect_rc 0 mq-send --at @1000 q past
expect_rc 0 mq-send --at 2001-01-01T00:00:00Z q past2
expect_rc 0 mq-receive q --all -l
expect_out $'now\npast\npast2\n'
expect_rc 0 mq-admin stat q --json
grep -q '"delayed":0,' "$T/out" || fail "stat: $(cat "$T/out")"

# A delayed message arrives at its visible time: messages sent meanwhile come before it.
now_us; t0=$NOW
expect_rc 0 mq-send --delay 2s q A
expect_rc 0 mq-send q B
# Once due it is no longer counted as delayed: stat, like every reader, promotes it first.
run mq-admin stat q --json
now_us
[ "$NOW" -ge $((t0 + 2000000)) ] || grep -q '"delayed":1,' "$T/out" || fail "stat before the delay: $(cat "$T/out")"
now_us
[ "$NOW" -lt $((t0 + 2100000)) ] && sleep "$(printf '%d.%06d' $(((t0 + 2100000 - NOW) / 1000000)) $(((t0 + 2100000 - NOW) % 1000000)))"
expect_rc 0 mq-admin stat q --json
grep -q '"delayed":0,' "$T/out" || fail "stat after the delay: $(cat "$T/out")"
expect_rc 0 mq-admin sweep
expect_out ''
expect_rc 0 mq-admin stat q --json
grep -q '"delayed":0,' "$T/out" && grep -q '"messages":2,' "$T/out" || fail "stat after sweep: $(cat "$T/out")"
expect_rc 0 mq-receive q --all -l
expect_out $'B\nA\n'
expect_rc 0 mq-admin sweep     # nothing to do is fine

# A timeout shorter than the delay still ends the wait on time.
expect_rc 0 mq-send --delay 2s q slow
now_us; t0=$NOW
expect_rc 1 timeout -s KILL 10 mq-receive q -w 200ms
now_us
expect_err_match 'MQ_ERROR_IO_TIMEOUT 0xC00E001B'
ms=$(((NOW - t0) / 1000))
[ "$ms" -ge 200 ] && [ "$ms" -lt $((1000 + LATE_MS)) ] || fail "-w 200ms with a message due in 2 s took $ms ms"
# A waiter whose next deadline is the delayed message sleeps until then: no polling.
start mq-receive q --wait 5s
wait_blocked "$PID" poll
p=$(tool_pid "$PID")
before=$(awk '/^voluntary_ctxt_switches/ {print $2}' /proc/"$p"/status)
sleep 0.5
after=$(awk '/^voluntary_ctxt_switches/ {print $2}' /proc/"$p"/status)
[ $((after - before)) -le 2 ] ||
  fail "a waiter with a delayed message due later woke $((after - before)) times in 0.5 s"
expect_bg 0 "$PID"
expect_out slow

expect_rc 0 mq-admin check
expect_out ''
finish
