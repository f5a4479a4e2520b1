#!/bin/bash
# Several messages in raw mode from mq-peek (issue 15), as from mq-receive
# (test_receive_separator): `mq-peek q --all` or -n N, --top N above 1, with no separator or
# format would run the bodies together ("12345"); it is a usage error (exit 2) with the same
# hint, before the store is touched. -l, -0, --json, --template, --columns, and --format each
# make it fine; --into alone does not (the bodies would run together in the file).
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
for i in 1 2 3; do expect_rc 0 mq-send q "$i"; done

hint='^mq-peek: several bodies would run together: add -l, -0, --json or a --template \(E_INVALIDARG 0x80070057\)$'
for opts in "--all" "-n 2" "--count=3" "--top 2" "-n 3 --first" "--all --wait 0"; do
  expect_rc 2 mq-peek q $opts
  expect_err_match "$hint"
  expect_out ''
done
# Whatever the queue holds: an empty or missing queue too, and a missing store.
expect_rc 0 mq-admin create empty
expect_rc 2 mq-peek empty --all
expect_err_match "$hint"
expect_rc 2 mq-peek nosuch -n 5
expect_err_match "$hint"
expect_rc 2 mq-peek -s "$T/nostore" q --all
expect_err_match "$hint"
[ -e "$T/nostore" ] && fail "a refused peek created a store"

# One at a time stays raw, at a cursor too.
expect_rc 0 mq-peek q
expect_out 1
expect_rc 0 mq-peek q -n 1 --last
expect_out 3
expect_rc 0 mq-peek q --cursor c --first
expect_out 1
expect_rc 0 mq-peek q --cursor c --next
expect_out 2
# Each way to separate them.
expect_rc 0 mq-peek q -n 2 -l
expect_out $'1\n2\n'
expect_rc 0 mq-peek q --all -0
printf '1\0002\0003\000' | cmp -s - "$T/out" || fail "--all -0 printed '$(od -c "$T/out")'"
expect_rc 0 mq-peek q --all --template '{body};'
expect_out '1;2;3;'
for opts in "--json" "--columns message_body" "--format tsv" "--format csv" "--into $T/into -l"; do
  expect_rc 0 mq-peek q --all $opts
done
[ -s "$T/into" ] || fail "--all --into wrote nothing"
expect_rc 2 mq-peek q --all --into "$T/raw"
expect_err_match 'several bodies would run together'
[ ! -s "$T/raw" ] || fail "--all --into with raw bodies wrote '$(cat "$T/raw")'"
finish
