#!/bin/bash
# mq-watch --follow (an anonymous cursor in arrival order) reports a message that was Locked
# when it passed and that a rollback returns later, once; a message Locked and then received
# is never reported. A message that `mq-admin requeue` brings back keeps its lookup id and is
# not reported by a follower that passed that id (mq-watch(1), Following a queue), while a
# watch without --follow sees it at the head.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

events() { grep -c '^arrived' "$T/bg.$W.out"; }
has_events() { [ "$(events)" -ge "$1" ]; }

expect_rc 0 mq-admin create q --max-retries 0
expect_rc 0 mq-send q first
expect_rc 0 mq-send q second
# Holds "first" Locked until $T/go exists, then fails: the message comes back.
start mq-receive q --exec sh -c 'while [ ! -e "$0/go" ]; do sleep 0.02; done; exit 1' "$T"
R=$PID
until_true 10 sh -c '[ "$(mq-admin stat q --json | grep -o "\"locked\":[0-9]*" | cut -d: -f2)" = 1 ]' ||
  fail "the receive never Locked the first message"
start mq-watch --follow q
W=$PID
until_true 10 has_events 1 || fail "the follower did not report the visible message"
expect_rc 0 mq-send q third
until_true 10 has_events 2 || fail "the follower did not report a new message"
touch "$T/go"
wait "$R"
until_true 10 has_events 3 || fail "the follower never reported the message a rollback returned"
sleep 0.3
[ "$(events)" = 3 ] || fail "the follower printed $(events) events for 3 messages: $(cat "$T/bg.$W.out")"
ids=$(awk '{print $3}' "$T/bg.$W.out" | sort -n | tr '\n' ' ')
[ "$ids" = "1 2 3 " ] || fail "the follower reported lookup ids '$ids', expected 1 2 3"

# Locked when passed, then received: never reported.
expect_rc 0 mq-send q fourth
until_true 10 has_events 4 || fail "the follower did not report the fourth message"
rm -f "$T/go"
start mq-receive q --exec sh -c 'while [ ! -e "$0/go" ]; do sleep 0.02; done; cat >/dev/null' "$T"
R=$PID
until_true 10 sh -c '[ "$(mq-admin stat q --json | grep -o "\"locked\":[0-9]*" | cut -d: -f2)" = 1 ]' ||
  fail "the second receive never Locked a message"
touch "$T/go"
wait "$R"
sleep 0.3
[ "$(events)" = 4 ] || fail "a message received after the follower passed it was reported: $(cat "$T/bg.$W.out")"

# Requeue from the poison subqueue: the message keeps its lookup id.
expect_rc 0 mq-admin move q 2 --to poison
expect_rc 0 mq-admin requeue 'q;poison' --all
sleep 0.3
[ "$(events)" = 4 ] || fail "a requeued message (an old lookup id) was reported by the follower"
expect_rc 0 mq-watch q -t 0
grep -q '^arrived q ' "$T/out" || fail "a watch without --follow did not see the requeued message"
finish
