#!/bin/bash
# A cursor holder or watcher killed with SIGKILL leaves nothing stuck: the cursor's flock goes
# with the process, so the next `mq-peek Q --cursor c --first --no-wait-lock` works at once
# (no exit 5); while the holder lives, --no-wait-lock fails with exit 5 and a waiting user
# queues behind it. Killed plain waiters leave no trace either, and the store checks clean.
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
wait_blocked "$second" lock
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
