#!/bin/bash
# An id copied from --columns output works with --id (issue 25, trap 2): tsv prints a message
# id as {GUID}\\N (its backslash escaped), and --id, --correlation and mq-admin requeue --id
# take that form as they take {GUID}\N.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin init
expect_rc 0 mq-admin create q
expect_rc 0 mq-send q one
expect_rc 0 mq-send q two
expect_rc 0 mq-peek q --all --columns message_id
id2=$(sed -n 2p "$T/out")
case $id2 in *'}\\'[0-9]*) ;; *) fail "tsv did not escape the id's backslash: $id2" ;; esac
expect_rc 0 mq-peek q --id "$id2"
expect_out two
expect_rc 0 mq-send --correlation "$id2" q reply
expect_rc 0 mq-peek q --all --columns message_id --json
expect_rc 0 mq-receive q --id "$id2" --json
grep -q '"body":"two"' "$T/out" || fail "--id with the tsv form received: $(cat "$T/out")"
# The correlation id given in the tsv form is the message's own id.
raw=${id2/'\\'/'\'}
expect_rc 0 mq-receive q --correlation "$raw" --json
grep -q '"body":"reply"' "$T/out" || fail "--correlation from the tsv form: $(cat "$T/out")"
# A backslash too many is still no id.
expect_rc 2 mq-peek q --id "${id2/'\\'/'\\\'}"
expect_err_match "invalid message id"
finish
