#!/bin/bash
# Retry backoff (issue 26, item 2): mq-admin create/set --retry-backoff FACTOR,
# --retry-delay-max DURATION, --retry-jitter FRACTION. After the n-th rollback a message
# waits retry-delay x FACTOR^(n-1), at most the maximum, less up to the jitter's part of it;
# abort_count drives it, so it holds when the receiver is killed; stat --json says when the
# first delayed message is due (next_due_time).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

# due_at Q: when Q's first delayed message is due, ms since the epoch (none: none delayed).
due_at() {
  local due
  due=$(mq-admin stat "$1" --json | jq -r .next_due_time)
  if [ "$due" = null ]; then echo none; else date -d "$due" +%s%3N; fi
}
now_ms() { date +%s%3N; }
# expect_due Q WANT T0 T1: the rollback that ran between T0 and T1 (ms since the epoch) made
# Q's first delayed message due WANT ms after it.
expect_due() {
  local due look
  due=$(due_at "$1")
  # stat's own maintenance ran at some time before it returned: a look that ends after the
  # due time (a loaded machine, ASan: stat alone can take 50 ms) may find the message
  # promoted, and there is nothing left to check then.
  look=$(now_ms)
  if [ "$due" = none ] && ((look >= $3 + $2)); then return 0; fi
  if [ "$due" = none ]; then
    fail "$1: no message is delayed when a look ended $((look - $3)) ms after the rollback began, expected one due at $2 ms"
    return
  fi
  if [ "$due" = none ] || ((due < $3 + $2 || due > $4 + $2)); then
    fail "$1: the message is due $((due - $3)) ms after the rollback began and" \
      "$((due - $4)) ms after it ended, expected $2 ms"
  fi
}

# 1. 200 ms, doubled, at most 1 s: 200, 400, 800, 1000, 1000.
expect_rc 0 mq-admin create q --retry-delay 200ms --retry-backoff 2 --retry-delay-max 1s \
  --max-retries 0
expect_rc 0 mq-send q x
for want in 200 400 800 1000 1000; do
  t0=$(now_ms)
  expect_rc 8 mq-receive q -w 5s --exec false
  expect_due q "$want" "$t0" "$(now_ms)"
done
[ "$(mq-peek q -w 2s --template '{abort_count}')" = 5 ] || fail "abort_count is not 5"
[ "$(mq-admin list --json | jq -c 'select(.queue == "q") | [.retry_backoff,
  .retry_delay_max_ms, .retry_jitter]')" = '[2,1000,0]' ] || fail "list --json: $(mq-admin list --json)"

# 2. Across crashes of the receiver: 300 ms, then 900 ms (backoff 3), counted by the rollback
# that finds the killed receiver's lease (sweep).
expect_rc 0 mq-admin create c --retry-delay 300ms --retry-backoff 3
expect_rc 0 mq-send c y
for want in 300 900; do
  kill_holder c
  t0=$(now_ms)
  expect_rc 0 mq-admin sweep
  expect_due c "$want" "$t0" "$(now_ms)"
  sleep 1
done

# 3. A receiver's --retry-delay (no queue delay) grows the same way.
expect_rc 0 mq-admin create r --retry-backoff 4
expect_rc 0 mq-send r z
for want in 250 1000; do
  t0=$(now_ms)
  expect_rc 8 mq-receive r -w 5s --retry-delay 250ms --exec false
  expect_due r "$want" "$t0" "$(now_ms)"
done

# 4. Jitter: 20 messages rolled back together (nack) return at 20 different times between
# 5 s and 10 s (jitter 0.5); nack --delay D is D exactly, no backoff, no jitter.
expect_rc 0 mq-admin create j --retry-delay 10s --retry-jitter 50%
seq 20 | mq-send -l j
tok=$(mq-receive j --all -l --lease 1m 2>&1 >/dev/null)
t0=$(now_ms)
expect_rc 0 mq-admin nack "$tok"
slack=$(($(now_ms) - t0))
now=$t0
mq-admin export -q j | jq -r .visible_time | while read -r t; do
  echo $(($(date -d "$t" +%s%3N) - now))
done >"$T/delays"
[ "$(wc -l <"$T/delays")" = 20 ] || fail "export shows $(wc -l <"$T/delays") delayed messages"
[ "$(sort -u "$T/delays" | wc -l)" -ge 15 ] || fail "jittered delays: $(tr '\n' ' ' <"$T/delays")"
awk -v most=$((10000 + slack)) '$1 < 5000 || $1 > most { bad = 1 } END { exit bad }' "$T/delays" ||
  fail "a jittered delay is outside 5 s..10 s: $(tr '\n' ' ' <"$T/delays")"
expect_rc 0 mq-admin create n --retry-delay 1s --retry-backoff 10 --retry-jitter 1
expect_rc 0 mq-send n w
tok=$(mq-receive n --lease 1m 2>&1 >/dev/null)
t0=$(now_ms)
expect_rc 0 mq-admin nack "$tok" --delay 2s
expect_due n 2000 "$t0" "$(now_ms)"

# 5. Refusals; create --exist-ok compares them.
expect_rc 2 mq-admin set q --retry-backoff 0.5
expect_err_match 'retry-backoff must be from 1 to 1000'
expect_rc 2 mq-admin set q --retry-backoff two
expect_rc 2 mq-admin set q --retry-jitter 1.5
expect_rc 2 mq-admin set q --retry-delay-max 5
expect_err_match 'give a unit'
expect_rc 0 mq-admin create q --exist-ok --retry-backoff 2 --retry-delay-max 1s
expect_rc 5 mq-admin create q --exist-ok --retry-backoff 3
expect_err_match 'retry-backoff 2, not 3'
expect_rc 0 mq-admin check
finish
