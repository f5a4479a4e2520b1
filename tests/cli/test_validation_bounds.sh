#!/bin/bash
# Message-type validation does bounded work (issue 23, defect 2): libxml2's duplicate-attribute
# check is quadratic, so a body over limits no real document meets (1000 attributes in an
# element, elements nested 256 deep, 500,000 elements) is refused at once with exit 7 and the
# reason, nothing stored; a body at the limits is checked as before. Over a link the far side
# refuses such a body the same way (NACK_RECEIVE_REJECTED, dead-lettered at the source).
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create adminq
expect_rc 0 mq-admin message-type create order --validation well-formed-xml
attrs() {  # attrs N: one element with N distinct attributes
  python3 -c "import sys; n=int(sys.argv[1]); sys.stdout.write('<a ' + ' '.join('a%d=\"%d\"' % (i, i) for i in range(n)) + '/>')" "$1"
}
attrs 60000 >"$T/wide"
expect_rc 7 mq-send q --message-type order -f "$T/wide"
expect_err_match "^mq-send: q: message type 'order' requires well-formed XML, and mq checks no document over its limits: an element has more than 1000 attributes; nothing was sent \(MQ_VALIDATION_FAILED 0xE00E0012\)$"
attrs 1000 >"$T/thousand"
expect_rc 0 mq-send q --message-type order -f "$T/thousand"
attrs 1001 >"$T/over"
expect_rc 7 mq-send q --message-type order -f "$T/over"
python3 -c "import sys; sys.stdout.write('<a>' * 300 + '</a>' * 300)" >"$T/deep"
expect_rc 7 mq-send q --message-type order -f "$T/deep"
expect_err_match 'nested more than 256 deep'
python3 -c "import sys; sys.stdout.write('<r>' + '<a/>' * 500001 + '</r>')" >"$T/many"
expect_rc 7 mq-send q --message-type order -f "$T/many"
expect_err_match 'more than 500000 elements'
# Comments, CDATA and quoted values are not elements or attributes.
printf '<r><!-- <a b="1" c="2"> --><![CDATA[<x y="1">]]><b t="a=b&gt;c"/></r>' >"$T/fine"
expect_rc 0 mq-send q --message-type order -f "$T/fine"
[ "$(mq-admin stat q --json | jq .messages)" = 2 ] || fail "the queue holds $(mq-admin stat q --json | jq .messages), expected 2"

# Over a link: the far side checks, and refuses without the long parse.
B=$T/B
expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create q
expect_rc 0 mq-admin --store "$B" message-type create order --validation well-formed-xml
expect_rc 0 mq-admin link add b --via "mq-admin --store '$B' accept"
expect_rc 0 mq-send --deadletter --ack nack-receive --admin-queue adminq --message-type order \
  -f "$T/wide" b:q
expect_rc 0 mq-send --message-type order -f "$T/thousand" b:q
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-receive adminq --json
[ "$(jq -r .class "$T/out")" = nack_receive_rejected ] || fail "the far side's answer: $(cat "$T/out")"
[ "$(mq-admin --store "$B" stat q --json | jq .messages)" = 1 ] || fail "the far queue: $(mq-admin --store "$B" stat q --json)"

expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
