#!/bin/bash
# A transaction sent over a link is bounded (issue 23, defect 4): the far side holds it whole
# until its last message comes, so mq-send refuses a --tx batch into a link beyond 10,000
# messages (status 6, nothing queued); one at the limit is queued.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin init
expect_rc 0 mq-admin link add far --via "mq-admin -s $T/far accept"
seq 10001 >"$T/lines"
expect_rc 6 mq-send --tx -l far:q <"$T/lines"
expect_err_match "a transaction sent over a link holds at most 10000 messages and 256 MiB of bodies"
expect_rc 0 mq-admin stat 'out;far' --json
grep -q '"messages":0[,}]' "$T/out" || fail "a refused transaction left messages: $(cat "$T/out")"
head -n 10000 "$T/lines" >"$T/lines10k"
expect_rc 0 mq-send --tx -l far:q <"$T/lines10k"
expect_rc 0 mq-admin stat 'out;far' --json
grep -q '"messages":10000[,}]' "$T/out" || fail "the transaction at the limit: $(cat "$T/out")"
finish
