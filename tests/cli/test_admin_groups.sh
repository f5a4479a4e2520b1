#!/bin/bash
# mq-admin's command groups (bridge, link, message-type; issue 15): a missing or unknown
# subcommand of a group is named as the top level names a command (test_admin_help), with the
# group's own subcommands and a pointer to `mq-admin GROUP --help`, exit 2 and nothing on
# stdout; `mq-admin help GROUP SUB` prints `mq-admin GROUP SUB --help`.
. "$(dirname "$0")/lib.sh"

inval=' \(E_INVALIDARG 0x80070057\)$'
# subs GROUP: the subcommands `mq-admin GROUP --help` lists, as "a, b, c".
subs() {
  mq-admin "$1" --help | sed -n '/^Subcommands:/,$s/^  \([a-z-]*\) .*/\1/p' | paste -sd, |
    sed 's/,/, /g'
}
for g in bridge link message-type; do
  list=$(subs $g)
  [ -n "$list" ] || fail "mq-admin $g --help lists no subcommands"
  for args in "$g" "-s $T/s $g" "$g -s $T/s" "$g --store=$T/s"; do
    expect_rc 2 mq-admin $args
    tail="; the $g subcommands are $list \\(see mq-admin $g --help\\)$inval"
    expect_err_match "^mq-admin: a $g subcommand is required$tail"
    expect_out ''
  done
  for args in "$g foo" "$g sideways q" "-s $T/s $g foo --json" "$g -s $T/s foo"; do
    expect_rc 2 mq-admin $args
    expect_err_match "^mq-admin: unknown $g subcommand '(foo|sideways)'$tail"
    expect_out ''
  done
  # --help still answers, before or after the missing word.
  expect_rc 0 mq-admin $g --help
  expect_rc 0 mq-admin --help $g
  expect_rc 0 mq-admin help $g
done
# The audit's cases, word for word.
link_tail="; the link subcommands are add, set, delete, list, stat \\(see mq-admin link --help\\)"
expect_rc 2 mq-admin link foo
expect_err_match "^mq-admin: unknown link subcommand 'foo'$link_tail$inval"
expect_rc 2 mq-admin bridge sideways q
expect_err_match "^mq-admin: unknown bridge subcommand 'sideways'; the bridge subcommands are out, in \\(see mq-admin bridge --help\\)$inval"
expect_rc 2 mq-admin message-type
expect_err_match "^mq-admin: a message-type subcommand is required; the message-type subcommands are create, delete, list, check \\(see mq-admin message-type --help\\)$inval"

# help of a group's subcommand.
for w in "link add" "link stat" "bridge in" "message-type create"; do
  expect_rc 0 mq-admin help $w
  mq-admin $w --help >"$T/want"
  cmp -s "$T/out" "$T/want" || fail "mq-admin help $w differs from mq-admin $w --help"
  grep -q "^Usage: mq-admin $w" "$T/out" || fail "mq-admin help $w: $(head -1 "$T/out")"
done
expect_rc 0 mq-admin -s "$T/s" help link list
grep -q "^Usage: mq-admin link list" "$T/out" || fail "mq-admin -s DIR help link list"
expect_rc 2 mq-admin help link foo
expect_err_match "^mq-admin: unknown link subcommand 'foo'$link_tail$inval"
expect_rc 2 mq-admin help link add more
expect_err_match "^mq-admin: help: 'link add' has no subcommands \\(see mq-admin help link add\\)$inval"
expect_rc 2 mq-admin help create list
expect_err_match "^mq-admin: help: 'create' has no subcommands \\(see mq-admin help create\\)$inval"

# A group's subcommands still run, their words found past options and their values.
expect_rc 0 mq-admin init
expect_rc 0 mq-admin message-type create t1
expect_rc 0 mq-admin message-type -s "$STORE" list
grep -q '^t1	' "$T/out" || fail "message-type list after -s DIR: $(cat "$T/out")"
expect_rc 0 mq-admin link add far --via 'mq-admin --store x accept'
expect_rc 0 mq-admin link list --format json
[ "$(jq -r .link "$T/out")" = far ] || fail "link list: $(cat "$T/out")"
[ -e "$T/s" ] && fail "a usage error or help created a store"

finish
