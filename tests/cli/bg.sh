# bg.sh: sourced after lib.sh by the tests that run tools in the background (waits, cursors,
# watches, delays): starting them under a timeout, and killing them all at exit.
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
  for p in "${BG[@]}"; do ours "$p" && killtree "$p"; done
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
# kill_holder Q: starts `mq-receive Q --exec sleep 30`, waits (up to 5 s) until it holds a
# message Locked, and kills it and its command with SIGKILL: a receiver that died holding
# the message, whose lease the next reader or sweep returns.
kill_holder() {
  local i w
  start mq-receive "$1" -w 5s --exec sleep 30
  w=$PID
  for ((i = 0; i < 500; i++)); do
    [ "$(mq-admin stat "$1" --json | jq .locked)" = 1 ] && break
    sleep 0.01
  done
  killtree "$w"
  wait "$w" 2>/dev/null
}
# kill_and_restart VAR FN: SIGKILLs the tool whose start job is in $VAR, waits for it, then
# runs FN, which starts it again (and sets VAR).
kill_and_restart() {
  kill -KILL "$(tool_pid "${!1}")"
  wait "${!1}" 2>/dev/null
  "$2"
}
# loopback_port: a TCP port of 127.0.0.1 free now.
loopback_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
