#!/bin/bash
# A usage error names the help of the command that was given (issue 25, trap 3): a
# subcommand's error points to that subcommand's --help (mq-admin link add --help), not to the
# tool's, CLI11's own messages included; the tool's own errors still point to the tool.
. "$(dirname "$0")/lib.sh"

expect_rc 2 mq-admin link add
expect_err_match '^mq-admin: NAME is required \(see mq-admin link add --help\) \(E_INVALIDARG 0x80070057\)$'
expect_rc 2 mq-admin link add far
expect_err_match '^mq-admin: --via or --url is required \(see mq-admin link add --help\)'
expect_rc 2 mq-admin message-type create
expect_err_match '\(see mq-admin message-type create --help\)'
expect_rc 2 mq-admin create q --no-such-option
expect_err_match '\(see mq-admin create --help\)'
expect_rc 2 mq-admin bridge out
expect_err_match '\(see mq-admin bridge out --help\)'
expect_rc 2 mq-peek q --no-such-option
expect_err_match '\(see mq-peek --help\)'
# What the help names works.
expect_rc 0 mq-admin link add --help
grep -q -- '--via' "$T/out" || fail "mq-admin link add --help does not describe --via"
finish
