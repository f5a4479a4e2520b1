#!/bin/bash
# An idle forward --follow keeps its session (issue 24, MS-MQQB's Session Ack Wait Timer: it
# starts when a message is sent with none in flight and stops when all are acknowledged).
# After an idle time longer than --timeout, the next message goes through the same session:
# no "no acknowledgement from the far side", no reconnect (the link's command is started
# once), and no last_error in link stat.
. "$(dirname "$0")/lib.sh"

B=$T/B
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create dest
# The link's command counts its starts.
expect_rc 0 mq-admin link add b --via "echo x >>'$T/starts'; exec mq-admin --store '$B' accept"
mq-admin forward b --follow --timeout 1s 2>"$T/follow.err" &
fwd=$!
BG+=("$fwd")
far_count() { [ "$(mq-admin --store "$B" stat dest --json | jq .messages)" = "$1" ]; }
expect_rc 0 mq-send b:dest first
until_true 20 far_count 1 || fail "the first message did not arrive"
# Idle for three times the timeout.
sleep 3
expect_rc 0 mq-send b:dest second
until_true 20 far_count 2 || fail "the second message did not arrive"
sleep 1.5   # a timer left running would fire now
expect_rc 0 mq-admin link stat b --json
[ "$(jq -r ".last_error // \"\"" "$T/out")" = "" ] || fail "an idle session failed: $(jq -r .last_error "$T/out")"
[ "$(jq -r .forward_pid "$T/out")" = "$fwd" ] || fail "the forward is not running: $(cat "$T/out")"
[ "$(wc -l <"$T/starts")" = 1 ] || fail "the link's command was started $(wc -l <"$T/starts") times"
grep -q 'no acknowledgement' "$T/follow.err" && fail "forward: $(cat "$T/follow.err")"
kill -TERM "$fwd"
wait "$fwd"
rc=$?
[ "$rc" = 0 ] || fail "forward --follow ended with $rc on SIGTERM: $(cat "$T/follow.err")"
expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
