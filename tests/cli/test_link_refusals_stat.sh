#!/bin/bash
# What accept keeps for the senders of links is shown (issue 23, defect 8): the refusals kept
# for replays were invisible and never removed. mq-admin stat names the streams and refusals;
# sweep forgets those of a sender silent for 30 days (unit test: transfer_test).
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin init
expect_rc 0 mq-admin -s "$T/far" init
expect_rc 0 mq-admin link add far --via "mq-admin -s $T/far accept"
expect_rc 0 mq-send far:nosuch one
expect_rc 0 mq-send far:nosuch two
expect_rc 0 mq-admin forward far --once
expect_rc 0 mq-admin -s "$T/far" stat
grep -q '^link streams accepted from: 1, refusals kept for their replays: 2 ([0-9]* bytes; sweep forgets those of a sender silent for 30 days)$' "$T/out" ||
  fail "stat's streams line: $(cat "$T/out")"
expect_rc 0 mq-admin -s "$T/far" stat --json
jq -s -e 'map(select(.queue == "system;deadletter"))[0] | .store_accepted_streams == 1 and .store_refusals_kept == 2' "$T/out" >/dev/null ||
  fail "stat --json: $(cat "$T/out")"
expect_rc 0 mq-admin -s "$T/far" stat --format prometheus
grep -q '^mq_store_refusals_kept{store="[^"]*"} 2$' "$T/out" || fail "prometheus: $(grep refusals "$T/out")"
# A sweep within 30 days keeps them.
expect_rc 0 mq-admin -s "$T/far" sweep
expect_rc 0 mq-admin -s "$T/far" stat --json
jq -s -e 'map(select(.queue == "system;deadletter"))[0] | .store_refusals_kept == 2' "$T/out" >/dev/null ||
  fail "sweep forgot refusals of a live sender: $(cat "$T/out")"
# A store with no link into it says nothing of streams.
expect_rc 0 mq-admin stat
grep -q 'link streams' "$T/out" && fail "a store without links: $(cat "$T/out")"
finish
