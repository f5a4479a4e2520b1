#!/bin/bash
# What all tools share on the command line: --help and --version (0), usage errors (2, one
# line on stderr, never CLI11's own 100-127), and mq-admin's common options on either side of
# the subcommand.
. "$(dirname "$0")/lib.sh"

for tool in mq-send mq-peek mq-receive mq-admin; do
  expect_rc 0 $tool --help
  grep -q "Usage: $tool" "$T/out" || fail "$tool --help does not show its usage"
  [ -s "$T/err" ] && fail "$tool --help wrote on stderr"
  expect_rc 0 $tool -h
  grep -q "Usage: $tool" "$T/out" || fail "$tool -h does not show its usage"
  expect_rc 0 $tool --version
  grep -Eqx "$tool \\(mq\\) [0-9]+\\.[0-9]+\\.[0-9]+" "$T/out" ||
    fail "$tool --version printed '$(cat "$T/out")'"
  # Usage errors: unknown option, missing option argument, missing/extra positionals.
  for args in "--no-such-option q" "q --no-such-option" "-s" "--store" "-Z q" "q extra1 extra2 extra3"; do
    expect_rc 2 $tool $args
    expect_err_match "^$tool: .*\\(E_INVALIDARG 0x80070057\\)\$"
    [ -s "$T/out" ] && fail "$tool $args printed on stdout"
  done
done
for tool in mq-peek mq-receive; do
  expect_rc 2 $tool
  expect_err_match "^$tool: .*E_INVALIDARG"
  expect_rc 2 $tool q -n notanumber
  expect_rc 2 $tool q -n -3
done
expect_rc 2 mq-send
expect_rc 2 mq-admin
expect_err_match '^mq-admin: .*E_INVALIDARG'
expect_rc 2 mq-admin frobnicate
expect_rc 2 mq-admin create
expect_rc 2 mq-admin create q --no-such-option
expect_rc 2 mq-admin list extra
expect_rc 2 mq-admin stat q --json --format prometheus
expect_rc 0 mq-admin create --help
grep -q 'Usage: mq-admin create' "$T/out" || fail "mq-admin create --help does not show its usage"
# A failed parse leaves no store behind.
[ -e "$STORE" ] && fail "a usage error created the store"

# --store before or after the subcommand, long or short; same store either way.
S=$T/explicit
expect_rc 0 mq-admin --store "$S" init
expect_rc 0 mq-admin --store "$S" create before
expect_rc 0 mq-admin create after --store "$S"
expect_rc 0 mq-admin -s "$S" create short-before
expect_rc 0 mq-admin create short-after -s "$S"
expect_rc 0 mq-admin -s "$S" list
expect_out $'after\nbefore\nshort-after\nshort-before\nsystem;deadletter\nsystem;deadxact\nsystem;journal\n'
cp "$T/out" "$T/list1"
expect_rc 0 mq-admin list -s "$S"
cmp -s "$T/out" "$T/list1" || fail "mq-admin list -s DIR differs from mq-admin -s DIR list"
expect_rc 0 mq-admin list --store="$S"
cmp -s "$T/out" "$T/list1" || fail "mq-admin list --store=DIR differs"
[ -e "$STORE" ] && fail "an explicit --store also touched \$MQ_STORE"
# The other tools take --store anywhere too.
expect_rc 0 mq-send before -s "$S" body
expect_rc 0 mq-peek before --store "$S"
expect_out body
expect_rc 0 mq-receive --store "$S" before
expect_out body

# -- ends options: a body or queue that starts with '-'.
expect_rc 0 mq-send -s "$S" before -- -n
expect_rc 0 mq-receive -s "$S" -- before
expect_out -n

# mq-send builds only the options its command line names (cli::OptionScan, for start-up
# time); a line that names one in any form, or one it lacks, reads as with all of them.
expect_rc 0 mq-admin create lazy
expect_rc 0 mq-send --label=eq -p6 --app 7 lazy a
printf 'b\nc\n' | mq-send -lp 5 lazy || fail "mq-send -lp 5 failed"
expect_rc 0 mq-send lazy -- -dash
expect_rc 0 mq-peek lazy --all --json
[ "$(jq -c '[.label, .priority, .app_specific, .body]' "$T/out" | tr '\n' ' ')" = \
  '["eq",6,7,"a"] ["",5,0,"b"] ["",5,0,"c"] ["",3,0,"-dash"] ' ] ||
  fail "options read lazily: $(jq -c '[.label, .priority, .app_specific, .body]' "$T/out")"
expect_rc 2 mq-send -l0 lazy
expect_err_match '^mq-send: --lines excludes --null \(see mq-send --help\)'
expect_rc 2 mq-send --delay 1s --at @1 lazy x
expect_err_match '^mq-send: --delay excludes --at'
expect_rc 0 mq-send -L -x lazy x
[ "$(mq-peek lazy --last --json | jq -r .label)" = -x ] || fail "-L -x: the label is not -x"
expect_rc 2 mq-send --priority=9 lazy x
expect_err_match "^mq-send: --priority: '9' is not allowed"

finish
