#!/bin/bash
# mq-admin top (issue 28): the pipe form (a block of lines, or a JSON object, per interval;
# -n COUNT), the full-screen form under tmux (a queue's row with fresh counts and a rate
# within two intervals; s, /, p and q; the terminal restored), its refusals, a stopped top
# that pins no pages under a writer, and a store mounted read-only.
. "$(dirname "$0")/lib.sh"
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

expect_rc 0 mq-admin init
expect_rc 0 mq-admin create jobs
nq=$(mq-admin list | wc -l)  # jobs and the system queues

# 1. Not on a terminal: COUNT blocks of a store line, a heading, a row per queue and a blank.
run mq-admin top -n 3 --interval 200ms
[ "$RC" = 0 ] || fail "top -n 3 exited $RC: $(cat "$T/err")"
[ "$(wc -l <"$T/out")" = $((3 * (nq + 3))) ] ||
  fail "top -n 3 printed $(wc -l <"$T/out") lines, expected $((3 * (nq + 3))): $(cat "$T/out")"
[ "$(mq-admin top -n 3 --interval 200ms | wc -l)" = $((3 * (nq + 3))) ] || fail "top | wc -l"
grep -Eq '^QUEUE +MESSAGES +DELAYED +LOCKED +IN/S +OUT/S' "$T/out" || fail "no heading"
grep -Eq "^jobs +0 +0 +0 " "$T/out" || fail "no row for jobs: $(cat "$T/out")"
# A reader that goes away ends it quietly.
expect_rc 0 sh -c 'mq-admin top --interval 50ms | head -n1 >/dev/null'

# Rates: messages sent and received during the run show in the second object's rates.
mq-admin top -n 2 --interval 1s --json >"$T/json" &
top=$!
# The sends come after the first sample (a fixed pause was too short for a loaded ASan run:
# the first sample then already held them, and the second showed no rate).
until_true 10 test -s "$T/json" || fail "top --json printed no first sample within 10 s"
seq 30 | mq-send -l jobs
mq-receive jobs -n 10 -l >/dev/null
wait "$top" || fail "top --json exited $?"
[ "$(wc -l <"$T/json")" = 2 ] || fail "top -n 2 --json printed $(wc -l <"$T/json") lines"
jq -e -s '.[0].queues[] | select(.queue == "jobs") | .in_per_s == null' "$T/json" >/dev/null ||
  fail "the first sample has a rate: $(head -1 "$T/json")"
jq -e -s 'map(.queues[] | select(.queue == "jobs"))[1] | .messages == 20 and .in_per_s > 15
          and .in_per_s < 40 and .out_per_s > 5 and .sent_total == 30' "$T/json" >/dev/null ||
  fail "the second sample's jobs row: $(tail -1 "$T/json")"
# Only the queues named.
run mq-admin top jobs -n 1 --json
jq -e '.queues | length == 1 and .[0].queue == "jobs"' "$T/out" >/dev/null ||
  fail "top jobs: $(cat "$T/out")"

# Refusals: a bare number (which unit?), a zero interval, a queue that is not there.
expect_rc 2 mq-admin top -n 1 --interval 5
expect_err_match 'give a unit: 5s or 5ms'
expect_rc 2 mq-admin top -n 1 --interval 0s
expect_err_match 'interval'
expect_rc 3 mq-admin top nosuch -n 1
expect_err_match 'nosuch'

# 2. On a terminal (tmux): the row of jobs moves within two intervals; keys; q exits 0.
if command -v tmux >/dev/null; then
  sock=$T/tmux
  tm() { tmux -S "$sock" "$@"; }
  screen() { tm capture-pane -p -t top; }
  tm new-session -d -s top -x 110 -y 30 \
    "env PATH='$PATH' MQ_STORE='$STORE' NO_COLOR=1 mq-admin top --interval 500ms; \
     echo EXIT=\$? >'$T/top.exit'; sleep 60"
  until_true 10 sh -c "tmux -S '$sock' capture-pane -p -t top | grep -q '^jobs '" ||
    fail "no row for jobs on the screen: $(screen)"
  seq 40 | mq-send -l jobs
  mq-receive jobs -n 5 -l >/dev/null
  # 20 + 40 - 5 = 55 messages, and a rate in (IN/S, or IN~ after the next tick), within two
  # intervals (1 s).
  row_moved() { screen | awk '$1 == "jobs" && $2 == 55 && ($5 + 0 > 0 || $7 + 0 > 0) { f = 1 }
                              END { exit !f }'; }
  until_true 2 row_moved || fail "the jobs row did not move in two intervals: $(screen)"
  tm send-keys -t top s
  until_true 3 sh -c "tmux -S '$sock' capture-pane -p -t top | grep -q 'sorted by messages'" ||
    fail "s did not change the sort: $(screen | tail -1)"
  tm send-keys -t top / d e a d Enter
  until_true 3 sh -c "! tmux -S '$sock' capture-pane -p -t top | grep -q '^jobs '" ||
    fail "the filter 'dead' kept jobs: $(screen)"
  screen | grep -q '^system;deadletter ' || fail "the filter 'dead' hid the dead letters"
  tm send-keys -t top p
  until_true 3 sh -c "tmux -S '$sock' capture-pane -p -t top | grep -q '^PAUSED'" ||
    fail "p did not pause: $(screen | tail -1)"
  tm send-keys -t top q
  until_true 5 test -s "$T/top.exit" || fail "q did not end top: $(screen)"
  [ "$(cat "$T/top.exit" 2>/dev/null)" = EXIT=0 ] || fail "q: $(cat "$T/top.exit" 2>/dev/null)"
  # The terminal is restored: out of the alternate screen, the cursor shown.
  [ "$(tm display-message -p -t top '#{alternate_on}')" = 0 ] ||
    fail "top left the terminal in the alternate screen"
  [ "$(tm display-message -p -t top '#{cursor_flag}')" = 1 ] || fail "top left the cursor hidden"
  tm kill-server 2>/dev/null
else
  fail "tmux is not installed (scripts/setup.sh installs it)"
fi

# 3. A stopped top pins no pages: rounds of sends and receives grow data.mdb no more than
# without it (as test_pipe_reader's paused peek).
A=$T/plain B=$T/watched
pinned_setup "$A" "$B"
churn "$A"
mq-admin -s "$B" top --interval 10ms >/dev/null &
top=$!
BG+=("$top")
sleep 0.3
# Stopped between samples: a sample is a few short read transactions (a millisecond, longer
# under ASan), and a stop that lands inside one pins pages for the stopper's reason, not
# top's. What top must not do is hold one between samples.
in_txn() { mdb_stat -r "$B" | awk -v p="$top" '$1 == p && $3 != "-" { f = 1 } END { exit !f }'; }
for ((i = 0; i < 200; i++)); do
  kill -STOP "$top"
  in_txn || break
  kill -CONT "$top"
  sleep 0.01
done
((i < 200)) || fail "top was inside a read transaction at each of 200 stops"
stopped=$SECONDS
churn "$B"
while ((SECONDS - stopped < 6)); do sleep 0.5; done  # stopped for 5 s at least
kill -CONT "$top"
kill "$top"
wait "$top" 2>/dev/null
pinned_check "$A" "$B" "a stopped top"

# 4. A store on a read-only mount (as root: a bind mount in a private mount namespace).
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  run unshare -m sh -c "mount --bind -o ro '$STORE' '$STORE' && mount -o remount,bind,ro '$STORE' &&
    mq-admin top -n 1 --json"
  [ "$RC" = 0 ] || fail "top on a read-only store exited $RC: $(cat "$T/err")"
  jq -e '.read_only and (.queues[] | select(.queue == "jobs") | .messages == 55)' "$T/out" \
    >/dev/null || fail "top on a read-only store: $(cat "$T/out")"
fi

finish
