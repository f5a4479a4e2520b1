#!/bin/bash
# Rate limits (issue 26, item 3): mq-admin set Q --rate COUNT/PERIOD [--burst N]. A token
# bucket kept in the store limits how fast messages leave the queue, across every process:
#  1. four receivers at once receive at the rate (within 10%), never above it;
#  2. with -w 0 a receive that finds no token behaves as an empty queue (exit 1) and says
#     when the next one comes; with -w it waits for it;
#  3. --burst lets that many leave at once after a quiet spell; stat, list and prometheus
#     show the rate and the tokens;
#  4. mq-watch --exec starts no more receivers than the rate allows, and does not spin;
#  5. a new --rate takes effect at once for waiting receivers; --rate off lifts it; bad
#     rates are usage errors.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"
BG_TIMEOUT=60

count() { mq-admin stat "$1" --json | jq .messages; }
# rate_of FILE: messages per second from the timestamps (s.fraction) in FILE, first to last.
rate_of() { sort -n "$1" | awk 'NR == 1 { a = $1 } { b = $1; n++ } END { printf "%.2f", (n - 1) / (b - a) }'; }
# within RATE WANT: RATE is within 10% of WANT.
within() { awk -v r="$1" -v w="$2" 'BEGIN { exit !(r >= w * 0.9 && r <= w * 1.1) }'; }

# 1. Four receivers, 20/s for 3 s.
expect_rc 0 mq-admin create q --rate 20/s
seq 1000 | mq-send -l q || fail "send"
end=$((${EPOCHREALTIME/./} + 3000000))
for i in 1 2 3 4; do
  (
    while ((${EPOCHREALTIME/./} < end)); do
      mq-receive -w 1s q >/dev/null 2>&1 && echo "$EPOCHREALTIME" >>"$T/times"
    done
  ) &
  BG+=($!)
done
wait
n=$(wc -l <"$T/times")
r=$(rate_of "$T/times")
within "$r" 20 || fail "four receivers at 20/s received $n messages at $r/s"
echo "four receivers at 20/s: $n messages, $r/s"
[ "$((1000 - $(count q)))" = "$n" ] || fail "$n receives recorded, $((1000 - $(count q))) gone"

# 2. No token: -w 0 is exit 1 saying when the next one comes; -w waits for it (50 ms).
expect_rc 0 mq-admin set q --rate 1/h
expect_rc 0 mq-receive q
expect_rc 1 mq-receive q
expect_err_match '^mq-receive: q: rate limit 1/h reached: the next message may leave in 1h \(MQ_ERROR_MESSAGE_NOT_FOUND'
expect_rc 1 mq-receive q -w 200ms
expect_err_match 'timed out waiting for a message: rate limit 1/h reached'
[ "$(mq-peek q -n 1)" != "" ] || fail "peek is not limited"
expect_rc 0 mq-admin set q --rate 20/s
expect_rc 0 mq-receive q
t0=$EPOCHREALTIME
expect_rc 0 mq-receive q -w 5s
dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')
((dt >= 30 && dt < 1000)) || fail "a waiting receive got the next token after $dt ms (expected ~50)"

# 3. --burst: after a quiet spell, that many at once, then the rate.
expect_rc 0 mq-admin set q --rate 2/s --burst 5
sleep 0.1
r0=$EPOCHREALTIME
expect_rc 0 mq-receive q -n 10 -l
r1=$EPOCHREALTIME
[ "$(wc -l <"$T/out")" = 5 ] || fail "--burst 5 let $(wc -l <"$T/out") messages leave at once"
# Each look right after: the tokens that came at 2/s since the receive began, no more (on a
# fast machine fewer than 1; a loaded one may take longer to look, and sees what came since).
# tokens_ok VALUE: 0 <= VALUE <= 2 * (now - r0), and VALUE < 5 (the burst).
tokens_ok() {
  awk -v t="$1" -v hi="$(awk -v a="$r0" -v b="$EPOCHREALTIME" 'BEGIN { print 2 * (b - a) }')" \
    'BEGIN { exit !(t ~ /^[0-9]+(\.[0-9]+)?$/ && t >= 0 && t <= hi + 0.01 && t < 5) }'
}
expect_rc 0 mq-admin stat q
grep -Eq '^q .* on,rate=2/s,burst=5,tokens=[0-9]+\.[0-9]$' "$T/out" || fail "stat: $(cat "$T/out")"
tokens_ok "$(sed -n 's/^q .*,tokens=\([0-9.]*\)$/\1/p' "$T/out")" || fail "stat tokens: $(cat "$T/out")"
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.rate, .rate_per_second, .burst]' "$T/out")" = '["2/s",2,5]' ] ||
  fail "stat --json: $(cat "$T/out")"
tokens_ok "$(jq .tokens "$T/out")" || fail "stat --json tokens: $(cat "$T/out")"
expect_rc 0 mq-admin list --json
[ "$(jq -c 'select(.queue == "q") | [.rate, .burst]' "$T/out")" = '["2/s",5]' ] ||
  fail "list --json: $(cat "$T/out")"
expect_rc 0 mq-admin stat --format prometheus
grep -q '^mq_queue_rate_per_second{store="[^"]*",queue="q"} 2$' "$T/out" || fail "no rate metric"
tokens_ok "$(sed -n 's/^mq_queue_rate_tokens{store="[^"]*",queue="q"} \([0-9.]*\)$/\1/p' "$T/out")" ||
  fail "no tokens metric: $(grep rate_tokens "$T/out")"
sleep 1.1
s0=$EPOCHREALTIME
expect_rc 0 mq-admin stat q --json
s1=$EPOCHREALTIME
# The tokens come at 2/s from the receive's end to the stat's look, whatever the time between
# (a loaded machine): at least 2.2, and fewer than 5 (the burst) unless 2.5 s or more passed.
awk -v t="$(jq .tokens "$T/out")" -v lo="$(awk -v a="$r1" -v b="$s0" 'BEGIN { print 2 * (b - a) }')" \
  -v hi="$(awk -v a="$r0" -v b="$s1" 'BEGIN { print 2 * (b - a) }')" \
  'BEGIN { exit !(t >= 2.2 && t >= lo - 0.01 && t <= hi + 0.01 && (t < 5 || (t == 5 && hi >= 5))) }' ||
  fail "1.1 s at 2/s: $(jq .tokens "$T/out") tokens"

# 4. mq-watch --exec with four readers at 10/s: commands start at the rate, and mq-watch
#    sleeps between tokens instead of spinning.
expect_rc 0 mq-admin create w --rate 10/s
seq 200 | mq-send -l w || fail "send w"
cat >"$T/stamp.sh" <<SH
#!/bin/bash
echo "\$EPOCHREALTIME" >>"$T/wtimes"
SH
chmod +x "$T/stamp.sh"
start timeout -s TERM 3 mq-watch w --max-readers 4 --exec "$T/stamp.sh"
watch=$PID
wpid=$(tool_pid "$watch")
wpid=$(cat /proc/"$wpid"/task/*/children 2>/dev/null | head -n 1 || echo "$wpid")
ticks0=$(awk '{ print $14 + $15 }' /proc/"$wpid"/stat 2>/dev/null || echo 0)
sleep 2.5
ticks1=$(awk '{ print $14 + $15 }' /proc/"$wpid"/stat 2>/dev/null || echo 0)
wait "$watch" 2>/dev/null
r=$(rate_of "$T/wtimes")
within "$r" 10 || fail "mq-watch --exec at 10/s ran $(wc -l <"$T/wtimes") commands at $r/s"
echo "mq-watch --exec at 10/s: $(wc -l <"$T/wtimes") commands, $r/s, $(((ticks1 - ticks0) * 1000 / $(getconf CLK_TCK))) ms CPU"
[ -s "$T/bg.$watch.err" ] && fail "mq-watch said: $(head -c 300 "$T/bg.$watch.err")"
(((ticks1 - ticks0) * 1000 / $(getconf CLK_TCK) < 500)) ||
  fail "mq-watch used $(((ticks1 - ticks0) * 1000 / $(getconf CLK_TCK))) ms of CPU in 2.5 s"

# 5. Receivers waiting on a slow rate wake when it is lifted; bad rates.
expect_rc 0 mq-admin set q --rate 1/h
expect_rc 0 mq-admin set q --burst 1
mq-receive q -n 1 >/dev/null 2>&1
start mq-receive q -w 10s
waiter=$PID
wait_blocked "$waiter" poll
expect_rc 0 mq-admin set q --rate off
expect_bg 0 "$waiter"
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.rate, .tokens]' "$T/out")" = '[null,null]' ] || fail "--rate off: $(cat "$T/out")"
for bad in 5 0/s 1/x 1/0s /s 2000000000/s 1/400d -1/s; do
  expect_rc 2 mq-admin set q --rate "$bad"
  expect_err_match "^mq-admin: q: invalid rate '$bad'"
done
expect_rc 2 mq-admin set q --burst 3
expect_err_match '^mq-admin: q: --burst needs a rate'
expect_rc 2 mq-admin set q --rate 5/s --burst 0
expect_rc 0 mq-admin set q --rate 5/s
expect_rc 0 mq-admin create q --rate 5/s --exist-ok
expect_rc 5 mq-admin create q --rate 6/s --exist-ok
expect_err_match 'rate 5/s, not 6/s'

finish
