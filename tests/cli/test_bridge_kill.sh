#!/bin/bash
# test_bridge_kill.sh: 10,000 messages go out to a quorum queue and back into a second store
# while SIGKILL hits bridge out or bridge in at random moments (at least 50 trials, each
# restarting the bridge it killed): every message arrives exactly once with its properties,
# nothing is left Locked in either store, and nothing is left at the broker.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"
. "$(dirname "$0")/rabbit.sh"
rabbit_start || { echo "cannot start RabbitMQ" >&2; exit 1; }
BG_TIMEOUT=600
TRIALS=${BRIDGE_KILL_TRIALS:-60}
CHUNK=200   # 50 chunks of 200: 10,000 messages
CHUNKS=50

B=$T/storeb
mq-admin init >/dev/null && mq-admin -s "$B" init >/dev/null
# A death returns a lease with abort count + 1: max-retries 0 so that repeated kills never
# make a message poison. The dedup window outlasts the test.
mq-admin create src --max-retries 0 && mq-admin -s "$B" create dst --dedup-window 1h ||
  fail "cannot create queues"
mq-admin bridge out src --amqp "$AMQP_URL" --exchange mqx --routing-key rq --declare ||
  fail "declare"

start_out() { start mq-admin bridge out src --amqp "$AMQP_URL" --exchange mqx --routing-key rq --follow --batch 100; OUT=$PID; }
start_in() { start mq-admin -s "$B" bridge in dst --amqp "$AMQP_URL" --from rq --follow --batch 100 --prefetch 200; IN=$PID; }
start_out
start_in
sent=0 landed=0 chunks=()
# Trials go on past TRIALS (with a chunk each, up to three times as many) while fewer than one
# in five kills landed: how fast a chunk moves depends on the machine, and a kill on an idle
# bridge proves nothing.
for ((trial = 0; trial < TRIALS || (landed * 5 < TRIALS && trial < 3 * TRIALS); trial++)); do
  if [ "$trial" -lt "$CHUNKS" ] || [ "$trial" -ge "$TRIALS" ]; then
    chunks+=("$trial")
    # Properties that tell the chunk: priority, label, app-specific.
    seq -f "m-$trial-%g" 1 "$CHUNK" |
      mq-send -l src -p $((trial % 8)) -L "chunk $trial" --app "$trial" || fail "send chunk $trial"
    sent=$((sent + CHUNK))
  fi
  # 1 to 40 ms: a chunk takes the two bridges some tens of milliseconds, so most kills land
  # while they move it (longer sleeps let them finish and kill idle bridges).
  sleep "$(printf '0.%03d' $((RANDOM % 40 + 1)))"
  # A kill landed mid-transfer when the victim left work undone, read once it is dead (a
  # reading before the kill would give it the reading's time to finish, and under the
  # sanitizers that is long): bridge out, messages still in src (waiting, or Locked in its
  # batch until the next reader returns them); bridge in, messages not yet in dst.
  if ((RANDOM % 2)); then
    killtree "$OUT"; wait "$OUT" 2>/dev/null
    [ "$(mq-admin stat src --json | jq '.messages + .locked')" -gt 0 ] && landed=$((landed + 1))
    start_out
  else
    killtree "$IN"; wait "$IN" 2>/dev/null
    [ "$(mq-admin -s "$B" stat dst --json | jq .messages)" -lt "$sent" ] && landed=$((landed + 1))
    start_in
  fi
done
# Kills that all fell on idle bridges would prove nothing.
((landed * 5 >= TRIALS)) || fail "only $landed of $trial kills landed while the bridge had work"

# Let them finish, then stop them with SIGTERM: they exit 0.
for ((i = 0; i < 600; i++)); do
  n=$(mq-admin -s "$B" stat dst --json | jq .messages)
  [ "$n" -ge "$sent" ] && break
  sleep 0.1
done
sleep 1  # anything still to come (a duplicate the dedup missed) comes now
kill -TERM "$(tool_pid "$OUT")" "$(tool_pid "$IN")"
expect_bg 0 "$OUT"
expect_bg 0 "$IN"

mq-admin stat src --json >"$T/src"
jq -e '.messages == 0 and .locked == 0' "$T/src" >/dev/null || fail "src: $(cat "$T/src")"
mq-admin -s "$B" stat dst --json >"$T/dst"
jq -e ".messages == $sent and .locked == 0" "$T/dst" >/dev/null ||
  fail "dst should hold $sent messages, none Locked: $(cat "$T/dst")"
mq-peek -s "$B" dst --all --json >"$T/all" || fail "peek dst"
jq -r .body "$T/all" | sort >"$T/got"
for c in "${chunks[@]}"; do seq -f "m-$c-%g" 1 "$CHUNK"; done | sort >"$T/want"
cmp -s "$T/want" "$T/got" || fail "not exactly once: $(diff "$T/want" "$T/got" | head -5) ($(uniq -d "$T/got" | wc -l) duplicates)"
bad=$(jq -r 'select((.body | split("-")[1] | tonumber) as $c |
  .label != "chunk \($c)" or .priority != ($c % 8) or .app_specific != $c) | .body' "$T/all" | head -3)
[ -z "$bad" ] || fail "properties changed: $bad"
for ((i = 0; i < 50; i++)); do
  rmqctl -q list_queues name messages >"$T/queues"
  grep -Eq '^rq[[:space:]]+0$' "$T/queues" && break
  sleep 0.2
done
grep -Eq '^rq[[:space:]]+0$' "$T/queues" || fail "messages left at the broker: $(cat "$T/queues")"
echo "trials: $trial ($landed landed while the bridge had work), messages: $sent" >&2
finish
