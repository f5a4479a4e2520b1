#!/bin/bash
# 4 senders and 4 receivers at once over 20,000 messages: each message is received exactly
# once, none is left, and the store checks clean afterwards.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
SENDERS=4 RECEIVERS=4 PER_SENDER=5000 CHUNK=25

sender() {  # sender N: sends its numbered lines in chunks of -l sends, and single sends
  local s=$1 i
  for ((i = 0; i < PER_SENDER; i += CHUNK)); do
    if ((i % 1000 == 0)); then
      # Now and then single sends, for the per-process path.
      mq-send q "s$s-$i" || echo "mq-send q exited $?" >>"$T/errors"
      seq -f "s$s-%g" $((i + 1)) $((i + CHUNK - 1)) | mq-send -l q ||
        echo "mq-send -l exited $?" >>"$T/errors"
    else
      seq -f "s$s-%g" "$i" $((i + CHUNK - 1)) | mq-send -l q || echo "mq-send -l exited $?" >>"$T/errors"
    fi
  done
}

receiver() {  # receiver N: takes batches until the senders are done and the queue is empty
  local r=$1 rc finished
  while :; do
    if [ $SECONDS -gt 120 ]; then
      echo "receiver $r gave up after 120 s" >>"$T/errors"
      break
    fi
    finished=0
    [ -e "$T/senders-done" ] && finished=1
    mq-receive q -n 100 -l >>"$T/recv.$r" 2>>"$T/recv-err.$r"
    rc=$?
    if [ $rc = 1 ]; then
      [ $finished = 1 ] && break
      sleep 0.01
    elif [ $rc != 0 ]; then
      echo "mq-receive exited $rc" >>"$T/errors"
      break
    fi
  done
}

: >"$T/errors"
for r in $(seq 1 $RECEIVERS); do receiver "$r" & rpids+=($!); done
for s in $(seq 1 $SENDERS); do sender "$s" & spids+=($!); done
wait "${spids[@]}"
touch "$T/senders-done"
wait "${rpids[@]}"

[ -s "$T/errors" ] && fail "tools failed during the run: $(sort "$T/errors" | uniq -c | head -5)"
for s in $(seq 1 $SENDERS); do seq -f "s$s-%g" 0 $((PER_SENDER - 1)); done | sort >"$T/expected"
cat "$T"/recv.[0-9]* | sort >"$T/received"
total=$(wc -l <"$T/received")
[ "$total" = 20000 ] || fail "received $total messages, expected 20000"
dups=$(uniq -d "$T/received" | head -5)
[ -z "$dups" ] || fail "messages received more than once: $dups"
cmp -s "$T/expected" "$T/received" || fail "the received messages are not the ones sent: $(diff "$T/expected" "$T/received" | head -5)"
# Each receiver's own stream keeps each sender's order (FIFO within a priority).
for r in $(seq 1 $RECEIVERS); do
  for s in $(seq 1 $SENDERS); do
    grep "^s$s-" "$T/recv.$r" | sed 's/^s[0-9]*-//' >"$T/seqs"
    sort -n -c "$T/seqs" 2>/dev/null || fail "receiver $r got sender $s's messages out of order"
  done
done
expect_rc 0 mq-admin stat q --json
jq -e '.messages == 0 and .bytes == 0' "$T/out" >/dev/null || fail "left in the queue: $(cat "$T/out")"
expect_rc 1 mq-peek q
expect_rc 0 mq-admin check
expect_out ''

finish
