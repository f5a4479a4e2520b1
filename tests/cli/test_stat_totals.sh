#!/bin/bash
# mq-admin stat shows what CLI.md promises (issue 15, section 1): the readers waiting (a running
# mq-receive --wait), the messages sent and received since the queue was made, the store's file
# size and live size; Prometheus counters are typed counter with _total names. The text table
# leaves the totals out (it is 100 columns wide already): `stat --help` and mq-admin(1) say
# where they are.
. "$(dirname "$0")/lib.sh"

mq-admin stat --help | tr -s ' \n' ' ' >"$T/help"
grep -q 'sent and received since the queue was made are in --json (sent_total, received_total) and --format prometheus' "$T/help" ||
  fail "stat --help does not say where the totals are: $(cat "$T/help")"
mandoc -T ascii "$MQ_SRC/man/mq-admin.1" 2>/dev/null | sed 's/.\x08//g' | tr -s ' \n' ' ' >"$T/page"
grep -q 'since it was made are totals for monitoring .* they are in --json (sent_total, received_total) and --format prometheus (mq_queue_sent_total, mq_queue_received_total), not in the table' "$T/page" ||
  fail "mq-admin(1) does not say where the totals are"

expect_rc 0 mq-admin create q
for i in 1 2 3; do expect_rc 0 mq-send q "m$i"; done
expect_rc 0 mq-receive q -n 3 -l
expect_rc 0 mq-admin create w
mq-receive w -w 30s --into "$T/w1" -l &
p1=$!
mq-peek w --wait 30s --into "$T/w2" &
p2=$!
n=0
for ((i = 0; i < 500; i++)); do
  n=$(mq-admin stat w --json | jq .waiting)
  [ "$n" = 2 ] && break
  sleep 0.02
done
[ "$n" = 2 ] || fail "stat shows $n waiting readers, expected 2"
expect_rc 0 mq-admin stat w
grep -Eq '^QUEUE +MESSAGES +DELAYED +LOCKED +BYTES +OLDEST +WAITING +STATUS$' "$T/out" ||
  fail "text header: $(head -1 "$T/out")"
grep -Eq '^w +0 +0 +0 +0 +- +2 +on$' "$T/out" || fail "text row: $(cat "$T/out")"
expect_rc 0 mq-admin stat w --format prometheus
grep -q '^mq_queue_waiting_readers{store="[^"]*",queue="w"} 2$' "$T/out" || fail "prometheus waiting: $(grep waiting "$T/out")"
# Two messages: the receive takes one, and the peek, whenever it looks, still finds the other
# (with one, a peek that wakes after the receive has taken it rightly waits on).
printf 'wake1\nwake2\n' | mq-send -l w || fail "send the wake-ups"
wait "$p1" || fail "the waiting receive failed"
wait "$p2" || fail "the waiting peek failed"
expect_rc 0 mq-receive w -l   # the one left
expect_rc 0 mq-admin stat w --json
[ "$(jq .waiting "$T/out")" = 0 ] || fail "waiting after the wake: $(cat "$T/out")"

# A reader killed while waiting is not counted; sweep removes its mark.
mq-receive w -w 30s -l >/dev/null &
p3=$!
for ((i = 0; i < 500; i++)); do
  [ "$(mq-admin stat w --json | jq .waiting)" = 1 ] && break
  sleep 0.02
done
kill -9 "$p3"
wait "$p3" 2>/dev/null
expect_rc 0 mq-admin stat w --json
[ "$(jq .waiting "$T/out")" = 0 ] || fail "a killed waiter is counted: $(cat "$T/out")"
ls "$STORE/locks" | grep -q "^wait\." || fail "no wait mark left by the killed reader (test assumption)"
expect_rc 0 mq-admin sweep
ls "$STORE/locks" | grep -q "^wait\." && fail "sweep left a dead reader's wait mark"

# Totals: q had 3 sends and 3 receives; w 2 and 2 (the peek received nothing).
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.sent_total, .received_total]' "$T/out")" = '[3,3]' ] || fail "q totals: $(cat "$T/out")"
[ "$(jq '.store_file_bytes > 0 and .store_used_bytes > 0 and .store_used_bytes <= .store_file_bytes' "$T/out")" = true ] ||
  fail "store sizes in --json: $(cat "$T/out")"
expect_rc 0 mq-admin stat w --json
[ "$(jq -c '[.sent_total, .received_total]' "$T/out")" = '[2,2]' ] || fail "w totals: $(cat "$T/out")"
expect_rc 0 mq-admin stat --format prometheus
grep -q '^# TYPE mq_queue_sent_total counter$' "$T/out" || fail "no counter mq_queue_sent_total"
grep -q '^# TYPE mq_queue_received_total counter$' "$T/out" || fail "no counter mq_queue_received_total"
grep -q '^# TYPE mq_queue_journal_dropped_total counter$' "$T/out" || fail "journal_dropped is not a counter"
grep -q '^mq_queue_sent_total{store="[^"]*",queue="q"} 3$' "$T/out" || fail "q sent_total sample"
grep -q '^mq_queue_received_total{store="[^"]*",queue="q"} 3$' "$T/out" || fail "q received_total sample"
# Every counter has a _total name, every _total is a counter.
grep '^# TYPE' "$T/out" | awk '($4 == "counter") != ($3 ~ /_total$/) { print; bad = 1 } END { exit bad }' ||
  fail "counter types and _total names disagree"
finish
