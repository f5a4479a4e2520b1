#!/bin/bash
# mq-admin touch TOKEN [--lease D] (issue 26, item 1): a --lease kept alive past its original
# end, by its original length or by D from now; every message of a batch lease; an expired
# token is exit 5 and its messages are back (as for ack and nack); touch racing the lease's
# end either extends it (and the ack that follows commits) or finds it over (and the message
# is received again): never both, never lost.
. "$(dirname "$0")/lib.sh"

now_ms() { date +%s%3N; }
expires_ms() { mq-admin locks --json | jq -r .expires | xargs -I{} date -d {} +%s%3N; }

expect_rc 0 mq-admin create q
for b in a b c d; do expect_rc 0 mq-send q "$b"; done

# 1. Touched every 0.4 s, a 1 s lease lives on past its end, by 1 s from each touch.
expect_rc 0 mq-receive q --lease 1s
expect_out 'a'
tok=$(cat "$T/err")
# The new end is checked against the clock read around the last touch, not after it: a loaded
# (ASan) run can take more than half a second to run mq-admin locks and jq.
for i in 1 2 3 4; do
  sleep 0.4
  before=$(now_ms)
  expect_rc 0 mq-admin touch "$tok"
  after=$(now_ms)
  expect_out ''
done
end=$(expires_ms)
((end >= before + 1000 - 1 && end <= after + 1000 + 1)) ||
  fail "after a touch the lease ends $((end - before)) ms after the touch began, expected 1 s"
expect_rc 0 mq-admin ack "$tok"
[ "$(mq-peek q --all -l | tr '\n' ' ')" = 'b c d ' ] || fail "after the ack: $(mq-peek q --all -l)"

# 2. --lease: D from now, for every message of a batch lease.
expect_rc 0 mq-receive q -n 2 -l --lease 1h
tok=$(cat "$T/err")
before=$(now_ms)
expect_rc 0 mq-admin touch "$tok" --lease 600ms
after=$(now_ms)
end=$(expires_ms)
((end >= before + 600 - 1 && end <= after + 600 + 1)) ||
  fail "touch --lease 600ms: the lease ends $((end - before)) ms after the touch began"
[ "$(mq-admin locks --json | jq '.lookup_ids | length')" = 2 ] ||
  fail "the lease holds fewer messages"
sleep 0.8
expect_rc 5 mq-admin touch "$tok"
expect_err_match 'the lease expired; its messages were returned \(MQ_ERROR_TRANSACTION_USAGE'
[ "$(mq-peek q --all --template '{body}:{abort_count} ')" = 'b:1 c:1 d:0 ' ] ||
  fail "after the lease ran out: $(mq-peek q --all --template '{body}:{abort_count} ')"
expect_rc 5 mq-admin ack "$tok"
expect_rc 5 mq-admin touch "$tok"
expect_err_match 'unknown or expired lease token'

# 3. Refusals: a malformed token, a bare or zero length; a process lease has no token.
expect_rc 2 mq-admin touch not-a-token
expect_err_match 'invalid lease token'
expect_rc 0 mq-receive q --lease 30s
tok=$(cat "$T/err")
expect_rc 2 mq-admin touch "$tok" --lease 5
expect_err_match 'give a unit: 5s or 5ms'
expect_rc 2 mq-admin touch "$tok" --lease 0s
expect_rc 5 mq-admin touch "${tok%.*}.00000000000000000000000000000000"
expect_rc 0 mq-admin ack "$tok"
mq-receive q --all -l >/dev/null

# 4. Touch racing the lease's end: each message is received exactly once in the end.
for ((i = 1; i <= 30; i++)); do
  mq-send q "r$i"
  tok=$(mq-receive q --lease 200ms 2>&1 >/dev/null)
  sleep "0.$((180 + RANDOM % 40))"
  if mq-admin touch "$tok" --lease 30s 2>/dev/null; then
    echo "r$i" >>"$T/touched"
    mq-admin ack "$tok" || fail "round $i: the ack after a touch that succeeded failed"
  else
    mq-receive q -w 0 -l >>"$T/again" || fail "round $i: the lease was over, but r$i is not back"
  fi
done
got=$(cat "$T/touched" "$T/again" 2>/dev/null | sort -V | tr '\n' ' ')
[ "$got" = "$(seq -f 'r%g' 30 | tr '\n' ' ')" ] ||
  fail "touched: $(wc -l <"$T/touched"), again: $(wc -l <"$T/again")"
expect_rc 1 mq-receive q -w 0
echo "of 30 raced touches, $(cat "$T/touched" 2>/dev/null | wc -l) extended the lease"
expect_rc 0 mq-admin check
finish
