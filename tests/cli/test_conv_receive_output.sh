#!/bin/bash
# A conversation group's receive obeys the rule of every receive of several messages (issue
# 24): raw bodies without -l or -0 would run together, so it is refused with exit 2 and
# nothing is received; with -l, -0, --json, --columns or a --template the group is received
# whole. The same for --lease, --into alone, and a group's --conversation/--group receive; a
# group of one message prints its body as a plain receive does.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq .messages; }
expect_rc 0 mq-admin create orders
expect_rc 0 mq-send orders --conversation new first
h=$(cat "$T/out")
expect_rc 0 mq-send orders --conversation "$h" second

expect_rc 2 mq-receive orders
expect_out ''
expect_err_match 'several bodies would run together: add -l, -0, --json or a --template'
[ "$(count orders)" = 2 ] || fail "a refused group receive removed messages: $(count orders) left"
expect_rc 2 mq-receive orders --conversation "$h"
expect_rc 2 mq-receive orders --into "$T/file"
[ ! -s "$T/file" ] || fail "--into alone wrote: $(cat "$T/file")"
expect_rc 2 mq-receive orders --lease 1m
expect_out ''
[ "$(count orders)" = 2 ] || fail "refused receives removed messages: $(count orders) left"
expect_rc 0 mq-admin stat orders --json
[ "$(jq .locked "$T/out")" = 0 ] || fail "a refused --lease left messages locked: $(cat "$T/out")"

expect_rc 0 mq-receive orders -l
expect_out $'first\nsecond\n'
[ "$(count orders)" = 0 ] || fail "-l did not take the group"

# The other separated forms take it whole.
for form in "--json" "--columns message_body" "--template {body}|" "-0"; do
  expect_rc 0 mq-send orders --conversation new one
  h=$(cat "$T/out")
  expect_rc 0 mq-send orders --conversation "$h" two
  # shellcheck disable=SC2086
  expect_rc 0 mq-receive orders $form
  [ "$(count orders)" = 0 ] || fail "$form did not take the group"
done

# A group of one message is one body.
expect_rc 0 mq-send orders --conversation new alone
expect_rc 0 mq-receive orders
expect_out 'alone'

expect_rc 0 mq-admin check
finish
