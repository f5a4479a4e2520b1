#!/bin/bash
# Delayed messages (mq-send --delay / --at): stored at once, invisible to peek, receive, cursors
# and watch before their time, visible neither early nor more than 50 ms late: a receiver
# started after the send and waiters already asleep wake at the visible time (the deadline
# comes from the store's index: no polling); --at takes RFC 3339 (with milliseconds and
# offsets) and @EPOCH; sweep promotes due messages without a reader; a promoted message
# arrives (gets its lookup id) at its visible time.
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
# expect_window WHAT T_US DUE_US: asserts DUE <= T <= DUE + 50 ms.
expect_window() {
  local ms=$((($2 - $3) / 1000))
  [ "$2" -ge "$3" ] || fail "$1: visible $(((${3} - ${2}) / 1000)) ms early"
  # Under the sanitizers every process starts several times slower: the bound is for the
  # real build, the sanitized one only checks that nothing is early or absurdly late.
  local late=50
  [ -n "${MQ_SANITIZED:-}" ] && late=1000
  [ "$ms" -le "$late" ] || fail "$1: visible $ms ms late (more than $late ms)"
}

# Before its time a delayed message is stored but seen by no reader.
now_us; t0=$NOW
expect_rc 0 mq-send --delay 300ms q d1
expect_rc 1 mq-peek q
expect_err_match '^mq-peek: q: no message \(MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\)$'
expect_rc 1 mq-peek q --all
expect_out ''
expect_rc 1 mq-receive q
expect_out ''
expect_rc 1 mq-peek q --cursor c --first
expect_rc 1 mq-watch q -t 0
expect_out $'error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
expect_rc 1 mq-watch q --follow -t 0
expect_out $'error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
expect_rc 0 mq-admin stat q --json
grep -q '"delayed":1,' "$T/out" && grep -q '"messages":1,' "$T/out" ||
  fail "stat after a delayed send: $(cat "$T/out")"
# Still invisible just before its time (250 ms after the send started).
now_us
sleep "0.$(printf '%06d' $((250000 - (NOW - t0))))" 2>/dev/null
expect_rc 1 mq-peek q
# A receiver started after the send gets it 300 ms after the send, not more than 50 ms late.
waiter_start mq-receive q --wait 5s -l
waiter_line
expect_window "mq-send --delay 300ms, then mq-receive --wait" "$NOW" $((t0 + 300000))
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
expect_rc 1 mq-peek q
waiter_line
expect_window "mq-send --at @$at" "$NOW" $((at * 1000000))
[ "$LINE" = epoch ] || fail "--at @EPOCH: got '$LINE'"
wait "$PID" || fail "the receiver exited $?"
exec 3<&-

# --at RFC 3339 with milliseconds, in UTC and with an offset: the same instant.
now_us
due_ms=$(((NOW / 1000) + 400))
utc=$(date -u -d "@$((due_ms / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf '%03d' $((due_ms % 1000)))Z
plus2=$(TZ=Etc/GMT-2 date -d "@$((due_ms / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf '%03d' $((due_ms % 1000)))+02:00
waiter_start mq-receive q --wait 5s -n 2 --template '{body} {visible_time}\n'
wait_blocked "$PID" poll
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
expect_rc 0 mq-send --delay 200ms q A
expect_rc 0 mq-send q B
# Once due it is no longer counted as delayed: stat, like every reader, promotes it first.
expect_rc 0 mq-admin stat q --json
grep -q '"delayed":1,' "$T/out" || fail "stat before the delay: $(cat "$T/out")"
sleep 0.3
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
[ "$ms" -ge 200 ] && [ "$ms" -lt 1000 ] || fail "-w 200ms with a message due in 2 s took $ms ms"
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
