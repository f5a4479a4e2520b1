#!/bin/bash
# mq-admin's command word (issue 15): a missing or unknown subcommand is named, with the list
# of subcommands, and exits 2; `mq-admin help` prints the overview and `mq-admin help CMD` the
# command's --help, exit 0. --version is "mq-admin (mq) VERSION".
. "$(dirname "$0")/lib.sh"

list='init, create, set, delete, list, stat, top, purge, check, backup, compact, upgrade, export, import, cursors, delete-cursor, sweep, ack, nack, touch, locks, requeue, move, message-type, end-conversation, conversations, bridge, link, forward, accept, serve'

expect_rc 2 mq-admin nosuchcmd
expect_err_match "^mq-admin: unknown subcommand 'nosuchcmd'; the subcommands are $list \\(see mq-admin help\\) \\(E_INVALIDARG 0x80070057\\)\$"
expect_out ''
expect_rc 2 mq-admin compactt
expect_err_match "unknown subcommand 'compactt'"
# Wherever the common options put the word.
expect_rc 2 mq-admin -s "$T/s" nosuchcmd --json
expect_err_match "unknown subcommand 'nosuchcmd'"
expect_rc 2 mq-admin --store="$T/s" nosuchcmd
expect_err_match "unknown subcommand 'nosuchcmd'"

for args in "" "-s $T/s" "--store $T/s"; do
  expect_rc 2 mq-admin $args
  expect_err_match "^mq-admin: a subcommand is required; the subcommands are $list \\(see mq-admin help\\)"
  expect_out ''
done

expect_rc 0 mq-admin help
grep -q '^Usage: mq-admin' "$T/out" || fail "mq-admin help does not print the overview"
grep -q '^  create ' "$T/out" || fail "mq-admin help does not list create"
grep -q "mq-admin help COMMAND" "$T/out" || fail "mq-admin help does not say how to get a command's help"
[ -s "$T/err" ] && fail "mq-admin help wrote on stderr"
mq-admin --help >"$T/overview"
cmp -s "$T/out" "$T/overview" || fail "mq-admin help differs from mq-admin --help"

for cmd in create stat bridge; do
  expect_rc 0 mq-admin help $cmd
  mq-admin $cmd --help >"$T/want"
  cmp -s "$T/out" "$T/want" || fail "mq-admin help $cmd differs from mq-admin $cmd --help"
  grep -q "^Usage: mq-admin $cmd" "$T/out" || fail "mq-admin help $cmd: $(head -1 "$T/out")"
done
expect_rc 0 mq-admin -s "$T/s" help list
grep -q "^Usage: mq-admin list" "$T/out" || fail "mq-admin -s DIR help list: $(head -1 "$T/out")"
expect_rc 2 mq-admin help nosuchcmd
expect_err_match "^mq-admin: unknown subcommand 'nosuchcmd'; the subcommands are "
expect_rc 2 mq-admin help create list
expect_err_match "^mq-admin: help: 'create' has no subcommands"

# The overview and --version still answer without a subcommand; none of this made a store.
expect_rc 0 mq-admin --help
expect_rc 0 mq-admin --version
grep -Eqx 'mq-admin \(mq\) [0-9]+\.[0-9]+\.[0-9]+' "$T/out" || fail "mq-admin --version: $(cat "$T/out")"
[ -e "$STORE" ] || [ -e "$T/s" ] && fail "a usage error or help created a store"

finish
