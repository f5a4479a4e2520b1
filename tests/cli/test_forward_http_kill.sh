#!/bin/bash
# Two stores over HTTP on 127.0.0.1 ([MC-MQSRM]'s exactly-once, in-order stream): 1,000
# transactional messages forwarded while mq-admin forward and the far mq-admin serve are
# each killed (SIGKILL) several times: all arrive once, in order, none left in out;far.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

export BG_TIMEOUT=300
HERE=$(loopback_port)
THERE=$(loopback_port)
FAR=$T/far
expect_rc 0 mq-admin init
expect_rc 0 mq-admin --store "$FAR" init
expect_rc 0 mq-admin --store "$FAR" create tq --transactional

start mq-admin serve --http "127.0.0.1:$HERE"
until_true 10 grep -qs "listening on" "$T/bg.$PID.err" || fail "this store's serve did not start"
far_serve() {
  sleep 0.2  # the old one's port
  start mq-admin --store "$FAR" serve --http "127.0.0.1:$THERE"
  FARSERVE=$PID
  until_true 10 grep -qs "listening on" "$T/bg.$FARSERVE.err" || fail "the far serve did not start"
}
forward() {
  start mq-admin forward far --follow --timeout 2s --connections 8
  FWD=$PID
}
expect_rc 0 mq-admin link add far --url "http://127.0.0.1:$THERE/msmq" \
  --receipts-url "http://127.0.0.1:$HERE/msmq/private\$/order_queue\$"
# 1,000 messages, 100 transactions of 10.
for ((i = 0; i < 100; i++)); do
  seq $((i * 10 + 1)) $((i * 10 + 10)) | mq-send --tx -l far:tq || fail "send"
done
far_serve
forward
stored() { mq-admin --store "$FAR" stat tq --json | jq -r .messages; }
# Kill each side at moments the transfer is under way.
midway=0
for round in 1 2 3 4 5 6; do
  sleep 0.0$((RANDOM % 5 + 3))
  n=$(stored)
  [ "$n" -lt 1000 ] && midway=$((midway + 1))
  if ((round % 2)); then
    kill_and_restart FWD forward
  else
    kill_and_restart FARSERVE far_serve
  fi
done
# The kills must hit a transfer under way, or the test proves nothing.
[ "$midway" -ge 3 ] || fail "only $midway kills came before the far store had every message"
until_true 120 sh -c '[ "$(mq-admin stat "out;far" --json | jq -r .messages)" = 0 ]' ||
  fail "out;far still holds $(mq-admin stat 'out;far' --json | jq -r .messages) messages (far: $(stored))"
kill -TERM "$(tool_pid "$FWD")"
wait "$FWD"
mq-receive --store "$FAR" -l -n 2000 tq >"$T/got"
seq 1 1000 | cmp -s - "$T/got" ||
  fail "the far tq does not hold 1..1000 once, in order: $(wc -l <"$T/got") lines, $(sort -n "$T/got" | uniq -d | wc -l) twice"
finish
