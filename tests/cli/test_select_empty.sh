#!/bin/bash
# An empty value of an option that selects messages (--id "$id" with $id unset) is a usage
# error (exit 2) that takes nothing; it used to count as the option not given, so mq-receive
# took the head of the queue.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q first
expect_rc 0 mq-send q second
for cmd in "mq-receive q --id" "mq-receive q --correlation" "mq-receive q --conversation" \
           "mq-peek q --id" "mq-peek q --correlation"; do
  read -ra words <<<"$cmd"
  expect_rc 2 "${words[@]}" ''
  expect_err_match "^${words[0]}: ${words[2]}: empty \(an unset variable\?\): it would select any message"
  expect_out ''
  expect_rc 2 "${words[@]}=" 2>/dev/null
done
expect_rc 2 mq-receive q --group ''
expect_out ''
expect_rc 0 mq-peek q --all -l
expect_out $'first\nsecond\n'
finish
