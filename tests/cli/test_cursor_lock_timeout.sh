#!/bin/bash
# A wait with a timeout at a named cursor is bounded by that timeout even while another
# process holds the cursor (for example in an infinite wait): `mq-peek --cursor c -w 300ms`
# and `mq-watch --cursor-name c -t 300ms` end with MQ_ERROR_IO_TIMEOUT (exit 1) well before
# 2 s instead of queueing behind the holder for as long as it lives. Once the holder is gone
# the cursor serves the next user at once.
. "$(dirname "$0")/lib.sh"
# --- helpers shared by the test_wait/cursor/watch/delay scripts (kept identical in each) ---
# Background tools: each runs under `timeout -s KILL` so that a hang fails the test instead of
# hanging CI, and everything started here is killed (by pid, with its children) at exit.
BG=()
killtree() {
  local c
  kill -STOP "$1" 2>/dev/null
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do killtree "$c"; done
  kill -KILL "$1" 2>/dev/null
}
cleanup() {
  local p
  for p in "${BG[@]}"; do killtree "$p"; done
  rm -rf "$T"
}
trap cleanup EXIT
# start CMD...: runs CMD in the background (killed after $BG_TIMEOUT s, default 60); its pid
# in $PID, its output in $T/bg.$PID.{out,err}.
start() {
  ( exec timeout -s KILL "${BG_TIMEOUT:-60}" "$@" >"$T/bg.$BASHPID.out" 2>"$T/bg.$BASHPID.err" ) &
  PID=$!
  BG+=("$PID")
  printf '%s\n' "$*" >"$T/bg.$PID.cmd"
}
# tool_pid PID: the tool running under the timeout wrapper PID.
tool_pid() {
  local i c
  for ((i = 0; i < 1000; i++)); do
    c=$(cat /proc/"$1"/task/*/children 2>/dev/null)
    [ -n "$c" ] && { echo $c; return 0; }
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}
# wait_blocked PID WHAT: returns once the tool under PID sleeps in the kernel in WHAT (poll:
# its wait, after it has looked in the store; lock: on a cursor's lock file); fails after 10 s.
wait_blocked() {
  local i p w want=poll_schedule
  [ "$2" = lock ] && want=lock
  p=$(tool_pid "$1")
  for ((i = 0; i < 1000; i++)); do
    w=$(cat /proc/"$p"/wchan 2>/dev/null)
    case $w in *"$want"*) return 0 ;; esac
    kill -0 "$p" 2>/dev/null || { w='(it exited)'; break; }
    sleep 0.01
  done
  fail "'$(cat "$T/bg.$1.cmd")' never blocked in $2 (wchan '$w')"
  return 1
}
# expect_bg N PID: waits for PID, asserts its exit status; its output becomes the last run's.
expect_bg() {
  { wait "$2"; } 2>/dev/null  # no "Killed" notice from the shell for a tool killed on purpose
  RC=$?
  cp "$T/bg.$2.out" "$T/out"
  cp "$T/bg.$2.err" "$T/err"
  [ "$RC" = "$1" ] ||
    fail "'$(cat "$T/bg.$2.cmd")' exited $RC, expected $1; stderr: $(head -c 300 "$T/err")"
}
# wait_lines PID N [S]: returns once the tool under PID has printed N lines (fails after S
# seconds, default 20).
wait_lines() {
  local i n=0
  for ((i = 0; i < ${3:-20} * 100; i++)); do
    n=$(cat "$T/bg.$1.out" 2>/dev/null | wc -l)
    [ "$n" -ge "$2" ] && return 0
    sleep 0.01
  done
  fail "'$(cat "$T/bg.$1.cmd")' printed $n lines in ${3:-20} s, not $2"
  return 1
}
# now_us: sets NOW to the wall-clock time in microseconds (no process started).
now_us() { NOW=${EPOCHREALTIME//[!0-9]/}; }
# --- end of helpers ---

expect_rc 0 mq-admin create q
start mq-peek q --cursor c --first --wait; holder=$PID
wait_blocked "$holder" poll

now_us; t0=$NOW
expect_rc 1 timeout -s KILL 5 mq-peek q --cursor c --first --wait 300ms
now_us; ms=$(((NOW - t0) / 1000))
expect_err_match '^mq-peek: q: .*\(MQ_ERROR_IO_TIMEOUT 0xC00E001B\)$'
expect_out ''
[ "$ms" -ge 300 ] && [ "$ms" -lt 2000 ] ||
  fail "mq-peek --cursor c -w 300ms on a cursor held by a waiter took $ms ms (want 300..2000)"

now_us; t0=$NOW
expect_rc 1 timeout -s KILL 5 mq-watch q --cursor-name c -t 300ms
now_us; ms=$(((NOW - t0) / 1000))
expect_out $'error q MQ_ERROR_IO_TIMEOUT 0xC00E001B\n'
[ "$ms" -ge 300 ] && [ "$ms" -lt 2000 ] ||
  fail "mq-watch --cursor-name c -t 300ms on a cursor held by a waiter took $ms ms (want 300..2000)"

# The holder is still the one that gets the first message.
expect_rc 0 mq-send q m1
expect_bg 0 "$holder"
expect_out m1
expect_rc 0 timeout -s KILL 10 mq-peek q --cursor c --current --no-wait-lock
expect_out m1
expect_rc 0 mq-admin check
finish
