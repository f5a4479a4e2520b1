#!/bin/bash
# Several messages in raw mode (issue 15): `mq-receive q --all` (or -n N, --top N above 1)
# with no separator or format would run the bodies together ("12345"); it is a usage error
# (exit 2) with a hint, before the store is touched. -l, -0, --json, --template, --columns,
# and --format each make it fine (--into alone does not: the bodies
# would run together in the file); so does --exec, which hands each body over alone.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
for i in 1 2 3; do expect_rc 0 mq-send q "$i"; done

hint='^mq-receive: several bodies would run together: add -l, -0, --json or a --template \(E_INVALIDARG 0x80070057\)$'
for opts in "--all" "-n 2" "--top 2" "-n 3 --first" "--all --lease 1m"; do
  expect_rc 2 mq-receive q $opts
  expect_err_match "$hint"
  expect_out ''
done
# Refused whatever the queue holds: an empty or missing queue too.
expect_rc 0 mq-admin create empty
expect_rc 2 mq-receive empty --all
expect_err_match "$hint"
expect_rc 2 mq-receive nosuch -n 5
expect_err_match "$hint"
[ "$(mq-admin stat q --json | jq .messages)" = 3 ] || fail "a refused receive removed messages"

# One at a time stays raw.
expect_rc 0 mq-receive q -n 1
expect_out 1
expect_rc 0 mq-receive q --top 1
expect_out 2
expect_rc 0 mq-send q 2
expect_rc 0 mq-send q 1
# Each way to separate them.
expect_rc 0 mq-receive q -n 2 -l
expect_out $'3\n2\n'
expect_rc 0 mq-receive q --all -0
printf '1\0' | cmp -s - "$T/out" || fail "--all -0 printed '$(od -c "$T/out")'"
for i in 1 2; do expect_rc 0 mq-send q "$i"; done
expect_rc 0 mq-receive q --template '{body}'
expect_out 1
for opts in "--json" "--template {body};" "--columns message_body" "--format tsv" "--into $T/into -l"; do
  for i in 1 2; do expect_rc 0 mq-send q "$i"; done
  expect_rc 0 mq-receive q --all $opts
done
for i in 1 2; do expect_rc 0 mq-send q "$i"; done
expect_rc 2 mq-receive q --all --into "$T/raw"
expect_err_match "$hint"
[ ! -s "$T/raw" ] || fail "--all --into with raw bodies wrote '$(cat "$T/raw")'"
expect_rc 0 mq-receive q --all -l
expect_rc 0 mq-send q a
expect_rc 0 mq-send q b
expect_rc 0 mq-receive q --all --exec cat
expect_out 'ab'

finish
