#!/bin/bash
# One way to say each thing (issue 15, section 2): -w/--wait and -t/--timeout on mq-peek,
# mq-receive and mq-watch; mq-watch --cursor NAME --first|--current|--next as mq-peek (the old
# --cursor ACTION --cursor-name NAME still works); --format json wherever --json is.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
for t in mq-peek mq-receive; do
  for w in -w --wait -t --timeout; do
    expect_rc 1 $t q $w 0
    expect_rc 1 $t q $w 50ms
    expect_err_match 'MQ_ERROR_IO_TIMEOUT'
  done
  expect_rc 1 $t q --timeout=50ms
  expect_rc 2 $t q -t 1x
done
for w in -w --wait -t --timeout; do
  expect_rc 1 mq-watch q $w 0
  expect_out $'error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
  expect_rc 1 mq-watch q $w 50ms
  expect_out $'error q MQ_ERROR_IO_TIMEOUT 0xC00E001B\n'
done
# An optional duration: -t alone waits forever, so a message sent later ends it.
(sleep 0.3; mq-send q late) &
expect_rc 0 mq-peek q -t -l
expect_out $'late\n'
wait

# mq-watch with mq-peek's cursor syntax, and the old one.
expect_rc 0 mq-send q second
expect_rc 7 mq-watch q --cursor c --next -t 1s   # never moved (with -t 0: an ArrivedError)
expect_rc 0 mq-watch q --cursor c --first
expect_out $'arrived q 1\n'
expect_rc 0 mq-watch q --cursor c --current -t 0
expect_out $'arrived q 1\n'
expect_rc 0 mq-watch q --cursor c --next -t 0
expect_out $'arrived q 2\n'
expect_rc 1 mq-watch q --cursor c --next -t 0
# The cursor is mq-peek's: it stands on message 2.
expect_rc 0 mq-peek q --cursor c --current -l
expect_out $'second\n'
expect_rc 0 mq-watch q --cursor first --cursor-name old
expect_out $'arrived q 1\n'
expect_rc 0 mq-watch q --cursor next --cursor-name old -t 0
expect_out $'arrived q 2\n'
expect_rc 2 mq-watch q --cursor c
expect_err_match "invalid cursor action 'c': use first, current or next \\(or --cursor NAME with --first, --current or --next\\)"
expect_rc 2 mq-watch q --first
expect_rc 2 mq-watch q --cursor c --first --cursor-name d
expect_rc 2 mq-watch q --cursor c --first --next

# --format json wherever --json is; text is the other value.
for cmd in list cursors locks conversations "message-type list"; do
  a=$(mq-admin $cmd --json) || fail "$cmd --json failed"
  b=$(mq-admin $cmd --format json) || fail "$cmd --format json failed"
  [ "$a" = "$b" ] || fail "$cmd: --format json differs from --json"
  expect_rc 0 mq-admin $cmd --format text
  expect_rc 2 mq-admin $cmd --format xml
done
expect_rc 0 mq-watch q -t 0 --format json
[ "$(jq -r .event "$T/out")" = arrived ] || fail "watch --format json: $(cat "$T/out")"
expect_rc 2 mq-watch q -t 0 --format yaml
finish
