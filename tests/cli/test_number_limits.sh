#!/bin/bash
# Numbers out of range (issue 15, section 2): the error names the option, the value and the
# limits that apply ("-n 0": a whole number of at least 1), not CLI11's bounds as stored
# ("not in range 1 to 4611686018427387904"); exit 2, nothing done. --help shows the limits.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q kept
# check WANT_REGEX CMD...: exit 2, one line matching, and never CLI11's stored bounds.
check() {
  local want=$1
  shift
  expect_rc 2 "$@"
  # The help of the command given: mq-admin's subcommand's own.
  local help=$1
  [ "$1" = mq-admin ] && help="mq-admin $2"
  expect_err_match "^$1: $want \(see $help --help\) \(E_INVALIDARG 0x80070057\)$"
  grep -q '4611686018427387904 \|not in range\|Could not convert' "$T/err" &&
    fail "'$*' printed stored bounds: $(cat "$T/err")"
}
for t in mq-peek mq-receive; do
  check "--count: '0' is not allowed: give a whole number of at least 1" $t q -n 0
  check "--count: 'abc' is not allowed: give a whole number of at least 1" $t q -n abc
  check "--count: '-1' is not allowed: give a whole number of at least 1" $t q --count=-1
  check "--top: '0' is not allowed: give a whole number of at least 1" $t q --top 0
  check "--lookup-id: '-1' is not allowed: give a whole number of at least 0" $t q --lookup-id=-1
done
# The one bound that is ours to name: what fits in 62 bits.
expect_rc 2 mq-peek q -n 99999999999999999999
expect_err_match "^mq-peek: --count: '99999999999999999999' is too large \(at most 4611686018427387904\)"
check "--priority: '9' is not allowed: give a whole number from 0 to 7" mq-send q -p 9 x
check "--app: '4294967296' is not allowed: give a whole number from 0 to 4294967295" mq-send --app 4294967296 q x
check "--app: '-1' is not allowed: give a whole number from 0 to 4294967295" mq-send --app=-1 q x
check "--max-readers: '0' is not allowed: give a whole number from 1 to 32767" mq-watch q --max-readers 0 --exec true
check "--max-retries: '-1' is not allowed: give a whole number from 0 to 4294967295" mq-admin create r --max-retries=-1
check "--window: '0' is not allowed: give a whole number from 1 to 1000000" mq-admin forward l --window 0
check "LOOKUP_ID: 'abc' is not allowed: give a whole number of at least 0" mq-admin move q abc --to x
# Nothing was done: the message is still there, nothing else was sent, r was not made.
expect_rc 0 mq-receive q --all -l
expect_out $'kept\n'
expect_rc 0 mq-admin list
grep -qx r "$T/out" && fail "create with a bad --max-retries made the queue"

# --help says the limits.
expect_rc 0 mq-peek --help
grep -Eq -- '-n,--count N:at least 1 ' "$T/out" || fail "mq-peek --help: $(grep -- --count "$T/out")"
expect_rc 0 mq-send --help
grep -Eq -- '-p,--priority INT:0 to 7 ' "$T/out" || fail "mq-send --help: $(grep -- --priority "$T/out")"
finish
