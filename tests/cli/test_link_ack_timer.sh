#!/bin/bash
# The acknowledgement timer (issue 14: "session acknowledgements per window, and on a
# timer"): over a slow link, accept stores and acknowledges what it holds once the first of it
# has waited 200 ms, without a flush or 4000 messages; forward hears of it and removes those
# messages from out;LINK while the rest are still on their way.
. "$(dirname "$0")/lib.sh"
command -v pv >/dev/null || skip "pv is not installed (scripts/setup.sh)"

B=$T/B
expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create dest
# About 1.2 KiB a message on the wire at 1 MiB/s: 2500 messages take some 3 s, below the
# 4000 that make accept store without the timer; forward's batches are of at most 1000, and
# it sends its only flush once the queue is empty, which is all but at the end.
expect_rc 0 mq-admin link add b --via "pv -q -L 1m | mq-admin --store '$B' accept"
seq -f 'message %04g' 2500 >"$T/lines"
expect_rc 0 mq-send -l b:dest <"$T/lines"

mq-admin forward b --once --compress never 2>"$T/forward.err" &
fwd=$!
acked() { mq-admin link stat b --json | jq -e '.acknowledged > 0' >/dev/null; }
until_true 30 acked || fail "no acknowledgement during the transfer"
ours "$fwd" && kill -0 "$fwd" 2>/dev/null || fail "the acknowledgement came only at the end"
backlog=$(mq-admin link stat b --json | jq .backlog)
[ "$backlog" -lt 2500 ] || fail "out;b still holds $backlog messages after an acknowledgement"
wait "$fwd" || fail "forward: $(cat "$T/forward.err")"
[ "$(mq-admin --store "$B" stat dest --json | jq .messages)" = 2500 ] || fail "the far queue"
mq-receive --store "$B" dest --all -l >"$T/got" || fail "receive"
cmp -s "$T/got" "$T/lines" || fail "the messages differ, or their order"
[ "$(mq-admin stat 'out;b' --json | jq .messages)" = 0 ] || fail "out;b not empty"
expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
