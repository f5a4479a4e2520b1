#!/bin/bash
# Issue 12: mq-admin compact rewrites the store to its live size, only while no other process
# has it open; processes that start meanwhile wait for it; a sender and a receiver running
# throughout lose and duplicate nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

N=${MQ_COMPACT_N:-1000000}
KEEP=$((N / 100))
expect_rc 0 mq-admin create q
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "%0100d\n", i }' | mq-send -l q
mq-receive q -n $((N - KEEP)) -l >/dev/null
[ "$(mq-admin stat q --json | jq -r .messages)" = "$KEEP" ] || fail "setup: not $KEEP left"
F=$T/fresh
mq-admin -s "$F" init >/dev/null && mq-admin -s "$F" create q >/dev/null
mq-peek q --all -l | mq-send -s "$F" -l q
fresh=$(stat -c %s "$F/data.mdb")
big=$(stat -c %s "$STORE/data.mdb")

# Refused while another process has the store open (a waiting receive), in time.
mq-admin create idle
start mq-receive idle --wait 30s
sleep 0.5
expect_rc 5 mq-admin compact --wait 300ms
expect_err_match "mq-store: the store is in use by other processes"
[ "$(stat -c %s "$STORE/data.mdb")" = "$big" ] || fail "a refused compact changed data.mdb"
# With --wait long enough it runs once that process has gone.
( sleep 1; mq-send idle wake-up ) &
expect_rc 0 mq-admin compact --wait 20s
grep -q "compacted: data.mdb $big -> " "$T/err" || fail "compact's summary: $(cat "$T/err")"
small=$(stat -c %s "$STORE/data.mdb")
[ "$small" -le $((fresh * 2)) ] || fail "compacted to $small bytes; a fresh store with the same messages has $fresh"
expect_rc 0 mq-admin check
[ "$(mq-admin stat q --json | jq -r .messages)" = "$KEEP" ] || fail "compact lost messages"
mq-peek q --all -l | cmp -s - <(mq-peek -s "$F" q --all -l) || fail "compact changed the messages"
[ ! -e "$STORE/compact.tmp" ] || fail "compact left compact.tmp"

# A sender and a receiver running throughout: every message exactly once.
expect_rc 0 mq-admin create live
(for i in $(seq 1 400); do mq-send live "m$i" || echo "send $i failed" >&2; done; echo done >"$T/sent") 2>"$T/send.err" &
(while [ ! -e "$T/sent" ] || [ "$(mq-admin stat live --json | jq -r .messages)" != 0 ]; do
   mq-receive live --wait 200ms >>"$T/got" 2>/dev/null; echo >>"$T/got"
 done) &
for i in 1 2 3; do
  sleep 0.3
  mq-admin compact --wait 30s 2>>"$T/compact.err" || fail "compact $i while sending and receiving failed: $(tail -n1 "$T/compact.err")"
done
wait
[ ! -s "$T/send.err" ] || fail "sends failed: $(head -n3 "$T/send.err")"
grep -v '^$' "$T/got" | sort >"$T/got.sorted"
seq -f 'm%g' 1 400 | sort | cmp -s - "$T/got.sorted" ||
  fail "after compactions under load: $(grep -vc '^$' "$T/got") received, $(sort "$T/got.sorted" | uniq -d | wc -l) twice"
expect_rc 0 mq-admin check

finish
