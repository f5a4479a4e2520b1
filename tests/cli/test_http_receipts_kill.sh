#!/bin/bash
# Commitment receipts over HTTP under kills: 2,000 messages received in the far store, each
# asking for ACK_RECEIVE, whose receipts its forward posts back while that forward and this
# store's serve are each killed (SIGKILL) several times: every acknowledgement arrives here
# once (a receipt posted again is stored once, by its id), none left in the far out;back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

N=2000
FAR=$T/far
export BG_TIMEOUT=300
HERE=$(loopback_port) THERE=$(loopback_port)
expect_rc 0 mq-admin init
expect_rc 0 mq-admin create acks
expect_rc 0 mq-admin --store "$FAR" init
expect_rc 0 mq-admin --store "$FAR" create q
expect_rc 0 mq-admin link add far --url "http://127.0.0.1:$THERE/msmq" \
  --receipts-url "http://127.0.0.1:$HERE/msmq/private\$/order_queue\$"
expect_rc 0 mq-admin --store "$FAR" link add back --url "http://127.0.0.1:$HERE/msmq"

serve() {
  sleep 0.2  # the old one's port
  start mq-admin serve --http "127.0.0.1:$HERE"
  SERVE=$PID
  until_true 10 grep -qs "listening on" "$T/bg.$SERVE.err" || fail "this store's serve did not start"
}
start mq-admin --store "$FAR" serve --http "127.0.0.1:$THERE"
until_true 10 grep -qs "listening on" "$T/bg.$PID.err" || fail "the far serve did not start"
serve

seq 1 $N | mq-send -l --ack full-receive --admin-queue acks far:q || fail "send"
expect_rc 0 timeout 60 mq-admin forward far --once
mq-admin stat acks --json | jq -e '.messages == 0' >/dev/null || fail "acknowledgements before any receive"
mq-receive --store "$FAR" -l -n $((N + 1)) q >"$T/got"
[ "$(wc -l <"$T/got")" = $N ] || fail "the far store received $(wc -l <"$T/got") messages, not $N"
[ "$(mq-admin --store "$FAR" stat 'out;back' --json | jq -r .messages)" = $N ] ||
  fail "out;back holds $(mq-admin --store "$FAR" stat 'out;back' --json | jq -r .messages) receipts, not $N"

forward() {
  start mq-admin --store "$FAR" forward back --follow --timeout 2s --connections 2
  FWD=$PID
}
forward
acks() { mq-admin stat acks --json | jq -r .messages; }
midway=0
for round in 1 2 3 4 5 6; do
  sleep 0.0$((RANDOM % 5 + 3))
  [ "$(acks)" -lt $N ] && midway=$((midway + 1))
  if ((round % 2)); then kill_and_restart FWD forward; else kill_and_restart SERVE serve; fi
done
[ "$midway" -ge 3 ] || fail "only $midway kills came before every receipt was here"
until_true 120 sh -c '[ "$(mq-admin --store "$1" stat "out;back" --json | jq -r .messages)" = 0 ]' _ "$FAR" ||
  fail "out;back still holds $(mq-admin --store "$FAR" stat 'out;back' --json | jq -r .messages) receipts (here: $(acks))"
mq-receive acks --all --json >"$T/acks"
[ "$(jq -r .class "$T/acks" | sort | uniq -c | awk '{print $1, $2}')" = "$N ack_receive" ] ||
  fail "the acknowledgements here: $(jq -r .class "$T/acks" | sort | uniq -c)"
[ "$(jq -r .correlation_id "$T/acks" | sort -u | wc -l)" = $N ] ||
  fail "$(jq -r .correlation_id "$T/acks" | sort | uniq -d | wc -l) messages acknowledged twice"
finish
