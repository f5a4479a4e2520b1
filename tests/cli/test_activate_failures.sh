#!/bin/bash
# mq-watch --exec when commands fail (issue 13, defect 1): a failed command holds off new
# receivers for a backoff and then the activator goes on: the failed message comes back and is
# retried (--max-retries > 0), a message sent during the hold is processed once it ends, a
# conversation group freed by a commit is taken up, and between events the activator sleeps
# (its CPU time stays near zero) instead of spinning on a hold that has passed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

# cpu_ticks PID: user + system CPU time of PID so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# idle_cpu PID WHAT: asserts that PID used at most 0.1 s of CPU over 2 s.
idle_cpu() {
  local a b
  a=$(cpu_ticks "$1")
  sleep 2
  b=$(cpu_ticks "$1")
  (((b - a) * 10 <= hz)) || fail "$2: mq-watch used $(((b - a) * 1000 / hz)) ms of CPU in 2 s idle"
}
count() { mq-admin stat "$1" --json | jq .messages; }
queue_empty() { [ "$(count "$1")" = 0 ]; }
logged() { grep -qx "$1" "$T/log" 2>/dev/null; }
failed_twice() { [ "$(grep -c '^never failed' "$T/log")" -ge 2 ]; }

# CMD: "bad" fails the first time it is seen (exit 3) and succeeds after; "never" always
# fails; "slow" takes 1.5 s; everything is logged as "body ok" or "body failed".
CMD='body=$(cat)
case $body in
  bad) if mkdir "$0/seen.bad" 2>/dev/null; then echo "bad failed" >>"$0/log"; exit 3; fi ;;
  never) echo "never failed" >>"$0/log"; exit 3 ;;
  slow*) sleep 1.5 ;;
esac
echo "$body ok" >>"$0/log"'

# --- a message that fails once comes back and is retried; one sent during the hold follows ---
expect_rc 0 mq-admin create q --max-retries 3
BG_TIMEOUT=120
start mq-watch q --max-readers 2 --exec sh -c "$CMD" "$T"
watch=$(tool_pid "$PID")
expect_rc 0 mq-send q bad
until_true 10 logged "bad failed" || fail "the failing command did not run"
expect_rc 0 mq-send q good
until_true 10 logged "good ok" || fail "a message sent during the hold was not processed in 10 s"
until_true 10 logged "bad ok" || fail "the failed message was not retried within 10 s"
until_true 5 queue_empty q || fail "queue not empty after the retry: $(count q)"
idle_cpu "$watch" "after a failure and a success"

# --- a message that always fails and leaves as poison (r, max-retries 1): once the hold has
# passed, nothing spins, and new work still starts promptly. ---------------------------------
expect_rc 0 mq-admin create r --max-retries 1
start mq-watch r --exec sh -c "$CMD" "$T"
watch_r=$(tool_pid "$PID")
expect_rc 0 mq-send r never
until_true 10 logged "never failed" || fail "the failing command did not run on r"
until_true 5 queue_empty r || fail "the poison message did not leave r"
sleep 0.5  # past the first backoff (200 ms)
idle_cpu "$watch_r" "after a failure on an empty queue"
t0=$(date +%s%3N)
expect_rc 0 mq-send r after
until_true 10 logged "after ok" || fail "a message sent after the hold was not processed"
t1=$(date +%s%3N)
((t1 - t0 < 3000)) || fail "a message sent after the hold waited $((t1 - t0)) ms"

# --- after a failure, a receiver that found nothing (its conversation group was held) does not
# stop the activator: the group, freed by an ack, is taken up (s, 2 readers). ----------------
expect_rc 0 mq-admin create s --max-retries 1
h=$(mq-send s c1 --conversation new)
expect_rc 0 mq-send s c2 --conversation "$h"
expect_rc 0 mq-send s never
# Someone else holds the group (c1) under a token lease.
expect_rc 0 mq-receive s --conversation "$h" --top 1 --lease 5m
token=$(cat "$T/err")
start mq-watch s --max-readers 2 --exec sh -c "$CMD" "$T"
watch_s=$(tool_pid "$PID")
until_true 10 failed_twice || fail "the failing command did not run on s: $(cat "$T/log")"
until_true 5 [ -n "$(mq-admin stat 's;poison' --json 2>/dev/null | jq 'select(.messages > 0)')" ] ||
  fail "the failed message did not become poison"
sleep 1  # past the backoff; receivers for c2 found its group held and exited 1
logged "c2 ok" && fail "c2 was processed while its group was held"
expect_rc 0 mq-admin ack "$token"
until_true 10 logged "c2 ok" || fail "a message of a group freed by an ack was never taken up ($(count s) left)"
until_true 5 queue_empty s || fail "s not empty: $(count s)"
idle_cpu "$watch_s" "after the conversation"
finish
