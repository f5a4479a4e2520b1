#!/bin/bash
# RETENTION ON (issue 5, item 2): received conversation messages stay with status 0, are never
# received again, peek shows them; mq-admin end-conversation removes them (plain messages are
# retained too: test_retention_plain). Also through --exec (commit) and mq-admin set
# --retention off.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q --retention on
expect_rc 0 mq-admin list --json
[ "$(jq -r 'select(.queue == "q") | .retention' "$T/out")" = on ] || fail "list does not show retention on"
c=$(mq-send q --conversation new c.0)
expect_rc 0 mq-send q --conversation "$c" c.1
expect_rc 0 mq-receive q -l
expect_out $'c.0\nc.1\n'
expect_rc 1 mq-receive q
expect_rc 1 mq-receive q --conversation "$c"
expect_rc 0 mq-peek q --all --json
[ "$(jq -r '[.body, .status] | @tsv' "$T/out" | tr '\n' ' ')" = "c.0	0 c.1	0 " ] ||
  fail "retained rows: $(jq -c '[.body, .status]' "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-admin stat q --json
[ "$(jq -r '[.messages, .retained] | @tsv' "$T/out")" = "2	2" ] || fail "stat: $(cat "$T/out")"
expect_rc 0 mq-admin check
expect_out ''

# Through a transactional receive: committed messages are retained, a new one arrives after.
expect_rc 0 mq-send q --conversation "$c" c.2
expect_rc 0 mq-receive q --exec cat
expect_out 'c.2'
expect_rc 0 mq-peek q --all --json
[ "$(jq -r '[.body, .status] | @tsv' "$T/out" | tr '\n' ' ')" = "c.0	0 c.1	0 c.2	0 " ] ||
  fail "retained rows after --exec: $(jq -c '[.body, .status]' "$T/out" | tr '\n' ' ')"

# end-conversation removes them and queues EndDialog (which is received, and retained too).
expect_rc 0 mq-admin end-conversation "$c"
expect_rc 0 mq-peek q --all --json
[ "$(jq -r '[.message_type_name, .status, .message_sequence_number] | @tsv' "$T/out")" = \
  "http://schemas.microsoft.com/SQL/ServiceBroker/EndDialog	1	3" ] ||
  fail "after end-conversation: $(cat "$T/out")"
expect_rc 0 mq-receive q --json
[ "$(jq -r '.validation' "$T/out")" = E ] || fail "EndDialog validation is not E"
expect_rc 0 mq-admin end-conversation "$c"
expect_rc 1 mq-peek q
expect_rc 0 mq-admin check
expect_out ''

# RETENTION OFF again: messages are removed on receive.
expect_rc 0 mq-admin set q --retention off
d=$(mq-send q --conversation new d.0)
expect_rc 0 mq-receive q -l
expect_out $'d.0\n'
expect_rc 1 mq-peek q
expect_rc 2 mq-admin create r --retention maybe
finish
