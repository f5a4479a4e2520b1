#!/bin/bash
# mq-send refusals: bad option values (2), a missing queue (3, unless --create), a disabled
# queue (5), journals and system queues (2). None of them stores anything.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq -r .messages; }

expect_rc 0 mq-admin create q
bad_opts=(
  "-p 8" "-p -1" "-p x" "--priority 99"
  "--ack full-receive" "--ack bogus --admin-queue q" "--ack full-receive --admin-queue ../bad"
  "--correlation zz" "--correlation 0123" "-c 00112233445566778899aabbccddeeff0011223" "-c {nope}\\1"
  "--ttbr bogus" "--ttrq 5x" "--ttbr 1.5" "--app 4294967296" "--app -1" "--body-type nonsense"
  "--response-queue a/b" "--no-such-option" "-f"
)
for opts in "${bad_opts[@]}"; do
  expect_rc 2 mq-send $opts q body
  expect_err_match '^mq-send: .*\((E_INVALIDARG|MQ_ERROR_[A-Z_]+) 0x[0-9A-F]{8}\)$'
done
[ "$(count q)" = 0 ] || fail "a refused send stored something"

# A missing queue: 3, and it is not created; --create makes it.
expect_rc 3 mq-send nosuch body
expect_err_match '^mq-send: nosuch: .*MQ_ERROR_QUEUE_NOT_FOUND'
expect_rc 3 mq-send -l nosuch < <(printf 'a\nb\n')
expect_err_match 'MQ_ERROR_QUEUE_NOT_FOUND'
expect_rc 0 mq-admin list
grep -qx nosuch "$T/out" && fail "a failed send created the queue"
expect_rc 0 mq-send --create nosuch body
expect_out ''
[ "$(count nosuch)" = 1 ] || fail "--create did not deliver the message"
# --create on an existing queue is harmless.
expect_rc 0 mq-send --create nosuch body2
[ "$(count nosuch)" = 2 ] || fail "--create on an existing queue lost a message"

# A disabled queue refuses sends with 5; enabled again, it takes them.
expect_rc 0 mq-admin set q --status off
expect_rc 5 mq-send q body
expect_err_match '^mq-send: q: .*MQ_ERROR_QUEUE_NOT_ACTIVE'
expect_rc 5 mq-send -l q < <(printf 'a\nb\n')
expect_rc 5 mq-send --create q body
[ "$(count q)" = 0 ] || fail "a disabled queue took a message"
expect_rc 0 mq-admin set q --status on
expect_rc 0 mq-send q body
[ "$(count q)" = 1 ] || fail "an enabled queue did not take the message"

# No sending to a journal, a subqueue or a system queue.
for target in 'q;journal' 'q;poison' 'system;deadletter' 'system;journal'; do
  expect_rc 2 mq-send "$target" body
  expect_err_match 'MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION'
done
expect_rc 1 mq-peek 'q;journal'
expect_rc 1 mq-peek 'system;deadletter'
expect_rc 0 mq-admin check

finish
