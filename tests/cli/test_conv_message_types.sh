#!/bin/bash
# Message types and validation (issue 5, item 4): mq-admin message-type create/delete/list;
# a send whose type says empty with a body, or well-formed-xml with a body that is not
# well-formed XML (libxml2), fails with exit 7 and stores nothing (not even the other
# messages of its transaction); the validation column reports N, E or X.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin message-type create //orders/New --validation well-formed-xml
expect_rc 0 mq-admin message-type create //orders/Ping --validation empty
expect_rc 0 mq-admin message-type create //orders/Note
expect_rc 5 mq-admin message-type create //orders/Note --validation empty
expect_err_match "^mq-admin: //orders/Note: message type already exists \(MQ_MESSAGE_TYPE_EXISTS"
expect_rc 5 mq-admin message-type create DEFAULT
expect_rc 2 mq-admin message-type create //x --validation valid-xml
expect_rc 0 mq-admin message-type list
grep -q $'^//orders/New\tX\twell-formed-xml$' "$T/out" || fail "list: $(cat "$T/out")"
grep -q $'^//orders/Ping\tE\tempty$' "$T/out" || fail "list: $(cat "$T/out")"
grep -q $'^DEFAULT\tN\tnone$' "$T/out" || fail "list lacks DEFAULT"
expect_rc 0 mq-admin message-type list --json
[ "$(jq -r 'select(.name == "//orders/Note") | .validation' "$T/out")" = N ] || fail "list --json"

c=$(mq-send q --conversation new --message-type //orders/New '<order id="1"><item>pen</item></order>')
expect_rc 7 mq-send q --conversation "$c" --message-type //orders/New '<order><item>pen</order>'
expect_err_match "^mq-send: q: message type '//orders/New' requires well-formed XML: .*; nothing was sent \(MQ_VALIDATION_FAILED 0xE00E0012\)$"
expect_rc 7 mq-send q --conversation "$c" --message-type //orders/New 'not xml'
expect_rc 7 mq-send q --conversation "$c" --message-type //orders/New ''
expect_rc 7 mq-send q --conversation "$c" --message-type //orders/Ping 'x'
expect_err_match "^mq-send: q: message type '//orders/Ping' requires an empty body \(1 bytes given\); nothing was sent"
expect_rc 0 mq-send q --conversation "$c" --message-type //orders/Ping ''
expect_rc 0 mq-send q --conversation "$c" --message-type //orders/Note 'anything <at all'
# Without a conversation the type is checked too.
expect_rc 7 mq-send q --message-type //orders/New '<a>'
expect_rc 0 mq-send q --message-type //orders/New '<a/>'
# One bad line in a --tx send stores nothing.
printf '<a/>\n<b>\n' | mq-send -l --tx q --conversation "$c" --message-type //orders/New 2>"$T/err"
[ $? = 7 ] || fail "--tx with a bad line did not exit 7"
expect_rc 0 mq-peek q --all --json
# Delivery order, priority then arrival: the plain message was sent last (issue 15).
[ "$(jq -r '[.message_sequence_number, .validation, .message_type_name] | @tsv' "$T/out" | tr '\n' ' ')" = \
  "0	X	//orders/New 1	E	//orders/Ping 2	N	//orders/Note 0	X	//orders/New " ] ||
  fail "stored: $(jq -c '[.message_sequence_number, .validation, .message_type_name]' "$T/out" | tr '\n' ' ')"
# A failed send leaves no gap in the sequence.
expect_rc 0 mq-send q --conversation "$c" last
expect_rc 0 mq-peek q --all --json
[ "$(jq -r 'select(.body == "last") | .message_sequence_number' "$T/out")" = 3 ] || fail "gap after failed sends"

expect_rc 0 mq-admin message-type delete //orders/Ping
expect_rc 3 mq-admin message-type delete //orders/Ping
expect_err_match "no such message type \(MQ_MESSAGE_TYPE_NOT_FOUND"
expect_rc 3 mq-send q --conversation "$c" --message-type //orders/Ping ''
expect_rc 2 mq-admin message-type delete DEFAULT
expect_rc 0 mq-admin check
expect_out ''
finish
