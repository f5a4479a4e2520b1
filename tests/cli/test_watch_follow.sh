#!/bin/bash
# mq-watch --follow reports exactly one event per message: 10,000 messages sent by 4
# concurrent senders (single sends and -l batches, 20 of them delayed by 200 ms) give 10,000
# "arrived" lines whose lookup ids are exactly those of `mq-peek --all`, in arrival order,
# none twice; a second watcher started in the middle of the burst reports the same set.
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

SENDERS=4 PER=2500 BATCH=49
TOTAL=$((SENDERS * PER))
expect_rc 0 mq-admin create q
# A watcher slower than the senders still has to be proved right: let it run long enough.
BG_TIMEOUT=300
start mq-watch q --follow; w1=$PID
wait_blocked "$w1" poll

sender() {  # sender N: PER messages as rounds of one single send and one -l batch of 49
  local s=$1 i delay
  for ((i = 0; i < PER; i += BATCH + 1)); do
    delay=()
    # Sender 1 delays its first 20 single sends: they become visible 200 ms later.
    [ "$s" = 1 ] && [ $((i / (BATCH + 1))) -lt 20 ] && delay=(--delay 200ms)
    timeout -s KILL 30 mq-send "${delay[@]}" q "s$s-$i" ||
      echo "sender $s: mq-send exited $?" >>"$T/errors"
    seq -f "s$s-%g" $((i + 1)) $((i + BATCH)) | timeout -s KILL 30 mq-send -l q ||
      echo "sender $s: mq-send -l exited $?" >>"$T/errors"
  done
}
: >"$T/errors"
spids=()
for s in $(seq 1 $SENDERS); do
  sender "$s" &
  spids+=($!)
  BG+=($!)
done
# A second watcher joins while the senders are busy.
for ((i = 0; i < 2000; i++)); do
  n=$(mq-admin stat q --json | sed -n 's/.*"messages":\([0-9]*\).*/\1/p')
  [ "${n:-0}" -ge 3000 ] && break
  sleep 0.01
done
start mq-watch q --follow; w2=$PID
wait "${spids[@]}"
[ -s "$T/errors" ] && fail "senders failed: $(head -3 "$T/errors")"

# Keeping up: both have reported every message within 5 s of the last send (an event costs
# microseconds; 10,000 take well under a second when nothing else is slow).
for ((i = 0; i < 500; i++)); do
  n1=$(wc -l <"$T/bg.$w1.out") n2=$(wc -l <"$T/bg.$w2.out")
  [ "$n1" -ge $TOTAL ] && [ "$n2" -ge $TOTAL ] && break
  sleep 0.01
done
[ "$n1" -ge $TOTAL ] && [ "$n2" -ge $TOTAL ] ||
  fail "mq-watch --follow fell behind: $n1 and $n2 of $TOTAL events 5 s after the last send"
# Exactly once, however long it takes (up to 240 s more).
wait_lines "$w1" $TOTAL 240
wait_lines "$w2" $TOTAL 240
# Nothing more comes: both sleep again; then SIGTERM ends them with 0.
sleep 0.3
wait_blocked "$w1" poll
wait_blocked "$w2" poll
kill -TERM "$(tool_pid "$w1")" "$(tool_pid "$w2")"
mq-peek q --all --template '{lookup_id}\n' | sort -n >"$T/present"
[ "$(wc -l <"$T/present")" = $TOTAL ] || fail "the queue holds $(wc -l <"$T/present") messages, not $TOTAL"
for w in $w1 $w2; do
  expect_bg 0 "$w"
  [ -s "$T/err" ] && fail "watcher wrote to stderr: $(head -3 "$T/err")"
  bad=$(grep -v -m 3 -E '^arrived q [0-9]+$' "$T/out")
  [ -z "$bad" ] || fail "watcher printed lines that are not events: $bad"
  cut -d' ' -f3 "$T/out" >"$T/ids"
  n=$(wc -l <"$T/ids")
  [ "$n" = $TOTAL ] || fail "watcher printed $n events for $TOTAL messages"
  sort -n -c "$T/ids" 2>/dev/null || fail "watcher events are not in arrival order: $(sort -n -c "$T/ids" 2>&1)"
  dups=$(sort -n "$T/ids" | uniq -d | head -3 | tr '\n' ' ')
  [ -z "$dups" ] || fail "watcher reported messages twice: $dups"
  sort -n "$T/ids" | cmp -s - "$T/present" ||
    fail "watcher's lookup ids differ from mq-peek --all: $(sort -n "$T/ids" | diff - "$T/present" | head -5 | tr '\n' ' ')"
done
# The delayed messages were reported after they became visible, with their new lookup ids.
expect_rc 0 mq-admin stat q --json
grep -q '"delayed":0,' "$T/out" || fail "delayed messages remain: $(cat "$T/out")"
expect_rc 0 mq-admin check
expect_out ''
finish
