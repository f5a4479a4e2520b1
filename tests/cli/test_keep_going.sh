#!/bin/bash
# A cron worker does not stall on a poison message (issue 15, section 2): mq-receive --all
# --exec --keep-going rolls a failed message back and goes on with the next, exit 8 at the end;
# a queue's --retry-delay keeps a rolled-back message invisible for that long.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q --max-retries 0
printf '%s\n' a bad c bad2 e | mq-send -l q
handler='b=$(cat); case $b in bad*) exit 3;; esac; echo "$b" >> "$0"'
expect_rc 8 mq-receive q --all --exec sh -c "$handler" "$T/done"
[ "$(cat "$T/done")" = a ] || fail "without --keep-going: $(cat "$T/done")"
rm -f "$T/done"
expect_rc 8 mq-receive q --all --keep-going --exec sh -c "$handler" "$T/done"
[ "$(cat "$T/done" | tr '\n' ' ')" = "c e " ] || fail "with --keep-going: $(cat "$T/done" | tr '\n' ' ')"
grep -q '2 message(s) rolled back, 2 committed' "$T/err" || fail "summary: $(cat "$T/err")"
[ "$(grep -c 'keep-going' "$T/err")" = 2 ] || fail "one note per failure: $(cat "$T/err")"
expect_rc 0 mq-peek q --all -l
expect_out $'bad\nbad2\n'
expect_rc 2 mq-receive q --keep-going -l

# --retry-delay: a rolled-back message waits before it is visible again. 2 s, so that the
# peek and stat after the rollback run inside it even under the sanitizers on a loaded
# machine; checked.
expect_rc 0 mq-admin create r --retry-delay 2s
expect_rc 0 mq-admin list --json
[ "$(jq -r 'select(.queue == "r") | .retry_delay_ms' "$T/out")" = 2000 ] ||
  fail "list: retry_delay_ms"
expect_rc 0 mq-send r x
t0=$(date +%s%3N)
expect_rc 8 mq-receive r --exec false
expect_rc 1 mq-peek r
expect_rc 0 mq-admin stat r --json
t1=$(date +%s%3N)
((t1 - t0 < 2000)) || fail "the checks after the rollback took $((t1 - t0)) ms, not inside the 2 s"
[ "$(jq .delayed "$T/out")" = 1 ] || fail "the rolled-back message is not delayed: $(cat "$T/out")"
expect_rc 0 mq-peek r -w 5s -l
expect_out $'x\n'
expect_rc 0 mq-admin set r --retry-delay 0
expect_rc 8 mq-receive r --exec false
expect_rc 0 mq-peek r -l
expect_out $'x\n'
expect_rc 2 mq-admin set r --retry-delay soon
finish
