#!/bin/bash
# A queue set to status OFF or deleted ends every wait on it at once with exit 5: mq-receive
# --wait, mq-peek --wait (plain and at a named cursor), mq-watch (once, --follow, and --follow
# with a named cursor). A wait on a queue that is already disabled exits 5 at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

WAITERS=(
  "mq-receive q --wait"
  "mq-receive q --wait 30s --json"
  "mq-peek q --wait"
  "mq-peek q --cursor c --first --wait"
  "mq-watch q"
  "mq-watch q --json -t 30s"
  "mq-watch q --follow"
  "mq-watch q --cursor-name w --follow"
)

# run_all EVENT SYMBOL ADMIN...: starts every waiter on the empty queue q, waits until each
# sleeps, runs ADMIN, and asserts that each waiter exits 5 within 1 s with one line naming
# SYMBOL on stderr and nothing on stdout. The waiters' ends are timed first, one wait after
# the other with nothing between (the checks of one waiter's output, a dozen processes, once
# counted in the time of the next ones: under the sanitizers on a loaded machine the last
# waiters' times held several hundred ms of them).
run_all() {
  local event=$1 symbol=$2 i t0 ms tool
  shift 2
  local pids=() ended=() rcs=()
  for i in "${!WAITERS[@]}"; do
    start ${WAITERS[$i]}
    pids+=("$PID")
  done
  for i in "${!pids[@]}"; do wait_blocked "${pids[$i]}" poll; done
  now_us; t0=$NOW
  expect_rc 0 "$@"
  for i in "${!pids[@]}"; do
    { wait "${pids[$i]}"; } 2>/dev/null
    rcs+=($?)
    now_us; ended+=("$NOW")
  done
  for i in "${!pids[@]}"; do
    cp "$T/bg.${pids[$i]}.out" "$T/out"
    cp "$T/bg.${pids[$i]}.err" "$T/err"
    [ "${rcs[$i]}" = 5 ] ||
      fail "'${WAITERS[$i]}' exited ${rcs[$i]}, expected 5; stderr: $(head -c 300 "$T/err")"
    ms=$(((ended[i] - t0) / 1000))
    tool=${WAITERS[$i]%% *}
    expect_err_match "^$tool: q: .* \\($symbol 0x[0-9A-F]{8}\\)\$"
    expect_out ''
    [ "$ms" -lt 1000 ] || fail "'${WAITERS[$i]}' took $ms ms to end after the queue was $event"
  done
}

expect_rc 0 mq-admin create q
run_all "disabled" MQ_ERROR_QUEUE_NOT_ACTIVE mq-admin set q --status off

# Already disabled: every wait refuses at once.
for w in "${WAITERS[@]}"; do
  now_us; t0=$NOW
  expect_rc 5 timeout -s KILL 10 $w
  now_us
  case $w in
    mq-watch*) expect_err_match "^mq-watch: q: .*\\(MQ_ERROR_INVALID_HANDLE 0xC00E0007\\)\$" ;;
    *) expect_err_match "^${w%% *}: q: .*\\(MQ_ERROR_QUEUE_NOT_ACTIVE 0x[0-9A-F]{8}\\)\$" ;;
  esac
  expect_out ''
  [ $(((NOW - t0) / 1000)) -lt 1000 ] || fail "'$w' on a disabled queue took $(((NOW - t0) / 1000)) ms"
done

# Enabled again, waits work again: a message ends one.
expect_rc 0 mq-admin set q --status on
start mq-receive q --wait
wait_blocked "$PID" poll
expect_rc 0 mq-send q back
expect_bg 0 "$PID"
expect_out back

# Deleted while they wait.
run_all "deleted" MQ_ERROR_QUEUE_DELETED mq-admin delete q
expect_rc 3 mq-peek q
expect_err_match '^mq-peek: q: .*\(MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003\)$'

# A queue re-created under the same name is a new queue: waits on it work.
expect_rc 0 mq-admin create q
start mq-watch q
wait_blocked "$PID" poll
expect_rc 0 mq-send q again
expect_bg 0 "$PID"
expect_out "arrived q 1"$'\n'

# Deleted while waiters wait with a timeout (not just infinite waits).
expect_rc 0 mq-receive q
expect_out again
start mq-receive q --wait 20s; p1=$PID
start mq-peek q -w 20s; p2=$PID
wait_blocked "$p1" poll
wait_blocked "$p2" poll
expect_rc 0 mq-admin delete q
expect_bg 5 "$p1"
expect_err_match '^mq-receive: q: .*\(MQ_ERROR_QUEUE_DELETED 0x[0-9A-F]{8}\)$'
expect_bg 5 "$p2"
expect_err_match '^mq-peek: q: .*\(MQ_ERROR_QUEUE_DELETED 0x[0-9A-F]{8}\)$'

expect_rc 0 mq-admin check
expect_out ''
finish
