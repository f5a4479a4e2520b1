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

# mq-receive --retry-delay (issue 29): the delay of a failed message whose queue sets none;
# the queue's own wins; without --exec it is a usage error.
expect_rc 0 mq-admin create d
expect_rc 0 mq-send d x
expect_rc 8 mq-receive d --retry-delay 1s --exec false
expect_rc 0 mq-admin stat d --json
[ "$(jq .delayed "$T/out")" = 1 ] || fail "--retry-delay 1s did not delay: $(cat "$T/out")"
expect_rc 0 mq-peek d -w 5s -l
expect_out $'x\n'
expect_rc 0 mq-admin set d --retry-delay 1h
expect_rc 8 mq-receive d --retry-delay 1ms --exec false
expect_rc 1 mq-peek d -w 500ms
expect_rc 2 mq-receive d --retry-delay 1s
expect_rc 2 mq-receive d --retry-delay forever --exec true

# --keep-going past a message that waits its retry delay, and comes back at the tail while
# the run goes on: the run takes every other message, not only those before it came back.
expect_rc 0 mq-admin create k
printf '%s\n' x s1 s2 s3 s4 | mq-send k -l
expect_rc 8 mq-receive k --all --keep-going --retry-delay 1s --exec sh -c \
  'b=$(cat); [ "$b" = x ] && exit 3; sleep 0.6'
expect_rc 0 mq-admin stat k --json
[ "$(jq .messages "$T/out")" = 1 ] || fail "k holds $(jq .messages "$T/out") messages, not x alone"
expect_rc 0 mq-peek k --all -l -w 5s  # x, once its delay is over
expect_out $'x\n'

# A command that cannot run (126, 127: sh's "cannot execute" and "not found") returns its
# message untouched (no abort counted) and ends the run at once, --keep-going or not.
expect_rc 0 mq-admin create c --max-retries 1
printf '%s\n' a b | mq-send c -l
expect_rc 127 mq-receive c --all --keep-going --exec sh -c 'exec ./no-such-program'
grep -q 'returned untouched' "$T/err" || fail "127: $(cat "$T/err")"
expect_rc 126 mq-receive c --exec sh -c 'exit 126'
expect_rc 0 mq-peek c --json
[ "$(jq .abort_count "$T/out")" = 0 ] || fail "an abort was counted: $(cat "$T/out")"
expect_rc 0 mq-admin stat c --json
[ "$(jq .messages "$T/out")" = 2 ] || fail "c lost a message (poison at 1 retry?): $(cat "$T/out")"

# -q: no message is exit 1 without a line on stderr.
expect_rc 0 mq-admin create empty
expect_rc 1 mq-receive empty --quiet -w 0
[ -s "$T/err" ] && fail "mq-receive --quiet wrote: $(cat "$T/err")"
expect_rc 1 mq-receive empty --quiet -w 100ms
[ -s "$T/err" ] && fail "mq-receive --quiet wrote after a wait: $(cat "$T/err")"
expect_rc 1 mq-receive empty -w 0
[ -s "$T/err" ] || fail "mq-receive without --quiet said nothing of the empty queue"
finish
