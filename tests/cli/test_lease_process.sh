#!/bin/bash
# Locked visibility of mq-receive --exec: while CMD runs, its message is invisible to other
# receivers, plain peeks, cursors and watchers, shown by mq-peek --locked and mq-admin locks;
# SIGKILL of the holder kills CMD (PDEATHSIG) and the next reader (receive, peek, watch,
# mq-admin sweep) returns the message in place with abort_count 1. SIGTERM lets the running
# CMD finish and commit, then mq-receive exits 0 without taking another message.
. "$(dirname "$0")/lib.sh"
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

# wait_for FILE: until FILE exists (5 s at most).
wait_for() {
  local i
  for ((i = 0; i < 250; i++)); do [ -s "$1" ] && return 0; sleep 0.02; done
  fail "timed out waiting for $1"
  return 1
}
# gone PID: the process is dead (a zombie counts: nothing may reap orphans here).
gone() {
  local s
  s=$(ps -o stat= -p "$1" 2>/dev/null)
  [ -z "$s" ] || [[ $s == Z* ]]
}
# hold: starts a receiver whose CMD records its own pid, mq-receive's pid ($PPID) and its
# message in $T/ready, then sleeps. (timeout guards against a hang; signals go to HOLDER,
# the mq-receive process itself.)
hold() {
  rm -f "$T/ready"
  timeout 60 mq-receive q --exec sh -c 'echo "$$ $PPID $MQ_LOOKUP_ID $MQ_DELIVERY_COUNT" >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 30' \
    "$T/ready" 2>"$T/holder.err" &
  BG+=($!)
  HOLDER_JOB=$!
  wait_for "$T/ready"
  read -r CMDPID HOLDER HELD DELIV <"$T/ready"
  BG+=("$HOLDER")
}
kill_holder() {
  kill -9 "$HOLDER"
  wait "$HOLDER_JOB" 2>/dev/null
  [ $? = 137 ] || fail "the holder did not die by SIGKILL"
  local i
  for ((i = 0; i < 100; i++)); do gone "$CMDPID" && break; sleep 0.01; done
  gone "$CMDPID" || fail "CMD $CMDPID outlived its mq-receive (no PDEATHSIG?)"
}

expect_rc 0 mq-admin create q --max-retries 0
for b in a b c; do expect_rc 0 mq-send q "$b"; done

hold
[ "$HELD $DELIV" = "1 1" ] || fail "holder got lookup id $HELD delivery $DELIV, expected 1 1"
expect_rc 0 mq-peek q --all -l
expect_out $'b\nc\n'
expect_rc 0 mq-peek q --locked --all --template '{body}:{delivery_count}:{abort_count} '
expect_out 'a:1:0 b:0:0 c:0:0 '
expect_rc 0 mq-peek q --cursor cur --first
expect_out 'b'
expect_rc 0 mq-watch q -t 0
expect_out 'arrived q 2
'
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.messages, .locked]' "$T/out")" = '[3,1]' ] || fail "stat while held: $(cat "$T/out")"
expect_rc 0 mq-admin locks --json
jq -e --argjson pid "$HOLDER" '.queue == "q" and .kind == "process" and .pid == $pid and .alive == true
    and .expires == null and .lookup_ids == [1]' "$T/out" >/dev/null ||
  fail "locks --json while held (holder $HOLDER): $(cat "$T/out")"
expect_rc 0 mq-receive q -w 0
expect_out 'b'
expect_rc 0 mq-receive q -w 0
expect_out 'c'
expect_rc 1 mq-receive q -w 0
expect_rc 1 mq-receive q -w 200ms
expect_rc 1 mq-receive q --exec true
expect_rc 1 mq-peek q
kill_holder
# Dead but not yet noticed: locks says stale; a plain receive returns and takes it.
expect_rc 0 mq-admin locks --json
jq -e '.alive == false and .lookup_ids == [1]' "$T/out" >/dev/null || fail "locks after the kill: $(cat "$T/out")"
expect_rc 0 mq-receive q --json
[ "$(jq -c '[.body, .lookup_id, .delivery_count, .abort_count]' "$T/out")" = '["a",1,1,1]' ] ||
  fail "after SIGKILL of the holder: $(cat "$T/out")"
expect_rc 0 mq-admin locks
expect_out ''

# The other readers return a dead holder's message too, in place (ahead of later ones).
for reader in peek watch sweep receive-exec; do
  expect_rc 0 mq-send q "x-$reader"
  expect_rc 0 mq-send q "y-$reader"
  hold
  kill_holder
  case $reader in
    peek)
      expect_rc 0 mq-peek q --all --template '{body}:{abort_count} '
      expect_out "x-$reader:1 y-$reader:0 " ;;
    watch)
      expect_rc 0 mq-watch q -t 0
      expect_out "arrived q $HELD
" ;;
    sweep)
      expect_rc 0 mq-admin sweep
      expect_rc 0 mq-peek q --all --template '{body}:{abort_count} '
      expect_out "x-$reader:1 y-$reader:0 " ;;
    receive-exec)
      expect_rc 0 mq-receive q --exec sh -c '[ "$(cat)" = "$0" ] && [ "$MQ_ABORT_COUNT" = 1 ] && [ "$MQ_DELIVERY_COUNT" = 2 ]' "x-$reader"
      ;;
  esac
  expect_rc 0 mq-admin locks
  expect_out ''
  expect_rc 0 mq-admin stat q --json
  [ "$(jq .locked "$T/out")" = 0 ] || fail "after $reader: $(cat "$T/out")"
  mq-receive q --all -0 >/dev/null
done

# --batch: a killed holder returns every message of the batch, in place.
for b in b1 b2 b3; do expect_rc 0 mq-send q "$b"; done
rm -f "$T/ready"
timeout 60 mq-receive q --all --batch --exec sh -c 'echo "$$ $PPID $MQ_COUNT" >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 30' \
  "$T/ready" 2>/dev/null &
HOLDER_JOB=$!
BG+=("$HOLDER_JOB")
wait_for "$T/ready"
read -r CMDPID HOLDER n <"$T/ready"
BG+=("$HOLDER")
[ "$n" = 3 ] || fail "--batch CMD got MQ_COUNT $n, expected 3"
expect_rc 1 mq-peek q
kill_holder
expect_rc 0 mq-peek q --all --template '{body}:{delivery_count}:{abort_count} '
expect_out 'b1:1:1 b2:1:1 b3:1:1 '
expect_rc 0 mq-admin locks
expect_out ''
[ -z "$(find "$STORE" -name 'lease.*')" ] || fail "lease lock files left: $(find "$STORE" -name 'lease.*')"
mq-receive q --all -0 >/dev/null

# SIGTERM: the running CMD finishes (and commits), no new message is taken, exit 0.
for b in t1 t2 t3; do expect_rc 0 mq-send q "$b"; done
rm -f "$T/ready"
timeout 20 mq-receive q --all --exec sh -c 'echo $PPID >"$0"; sleep 0.6; cat >>"$0.done"' "$T/ready" 2>"$T/term.err" &
job=$!
BG+=("$job")
wait_for "$T/ready"
kill -TERM "$(cat "$T/ready")"
wait "$job"
rc=$?
[ "$rc" = 0 ] || fail "mq-receive --exec exited $rc after SIGTERM: $(cat "$T/term.err")"
[ "$(cat "$T/ready.done" 2>/dev/null)" = t1 ] || fail "the running CMD did not finish: '$(cat "$T/ready.done" 2>/dev/null)'"
expect_rc 0 mq-peek q --locked --all --template '{body}:{abort_count} '
expect_out 't2:0 t3:0 '
expect_rc 0 mq-admin locks
expect_out ''
expect_rc 0 mq-admin check
expect_out ''
finish
