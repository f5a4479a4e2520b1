#!/bin/bash
# mq-watch --follow reports exactly one event per message: 10,000 messages sent by 4
# concurrent senders (single sends and -l batches, 20 of them delayed by 200 ms) give 10,000
# "arrived" lines whose lookup ids are exactly those of `mq-peek --all`, in arrival order,
# none twice; a second watcher started in the middle of the burst reports the same set.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

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
