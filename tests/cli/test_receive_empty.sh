#!/bin/bash
# When there is nothing to take: an empty queue gives 1 (MQ_ERROR_MESSAGE_NOT_FOUND) and no
# output, a disabled queue 5, a missing one 3; a shell loop over mq-receive ends on 1.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
for tool in mq-peek mq-receive; do
  for opts in "" "-n 5 -l" "--all -l" "--top 3 -0" "--first" "--last" "--json" "-l"; do
    expect_rc 1 $tool q $opts
    expect_err_match "^$tool: q: no message \\(MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\\)\$"
    expect_out ''
  done
  expect_rc 3 $tool nosuch
  expect_err_match "^$tool: nosuch: .*MQ_ERROR_QUEUE_NOT_FOUND"
done

# Fewer than asked for is success.
expect_rc 0 mq-send q only
expect_rc 0 mq-receive q -n 10 -l
expect_out $'only\n'
expect_rc 1 mq-receive q

# A disabled queue: receive refuses with 5 and leaves the messages; enabled again, they come.
expect_rc 0 mq-send q kept
expect_rc 0 mq-admin set q --status off
expect_rc 5 mq-receive q
expect_err_match '^mq-receive: q: .*MQ_ERROR_QUEUE_NOT_ACTIVE'
expect_out ''
expect_rc 5 mq-receive q --all -l
expect_rc 0 mq-admin set q --status on
expect_rc 0 mq-receive q
expect_out kept
# A disabled empty queue says it is disabled, not empty.
expect_rc 0 mq-admin set q --status off
expect_rc 5 mq-receive q
expect_rc 0 mq-admin set q --status on

# The loop of CLI.md: ends on exit 1 after taking every message exactly once, in order.
expect_rc 0 mq-send -l q < <(seq 1 25)
recv() { mq-receive q 2>"$T/loop.err"; local rc=$?; echo $rc >"$T/loop.rc"; return $rc; }
got=()
while body=$(recv); do
  got+=("$body")
  [ "${#got[@]}" -le 30 ] || break
done
[ "$(cat "$T/loop.rc")" = 1 ] || fail "the receive loop ended with exit $(cat "$T/loop.rc"), not 1"
grep -q MQ_ERROR_MESSAGE_NOT_FOUND "$T/loop.err" || fail "the loop's last receive said: $(cat "$T/loop.err")"
[ "${got[*]}" = "$(seq 1 25 | tr '\n' ' ' | sed 's/ $//')" ] ||
  fail "the receive loop got '${got[*]}'"
# An empty body is a message too: the loop must not stop on it.
expect_rc 0 mq-send q ''
expect_rc 0 mq-send q after-empty
n=0
while body=$(mq-receive q 2>/dev/null); do n=$((n + 1)); [ $n -le 5 ] || break; done
[ "$n" = 2 ] || fail "the loop took $n messages around an empty body, not 2"

finish
