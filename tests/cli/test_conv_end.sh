#!/bin/bash
# Ending conversations (issue 5, item 5): mq-admin end-conversation queues EndDialog (empty,
# validation E) or, with --error CODE --description TEXT, Error (its XML body, validation X,
# received before the conversation's other messages); later sends on it fail with exit 5;
# mq-admin conversations [--json] lists each conversation with its group, state, message
# count and lock holder.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
c=$(mq-send q --conversation new --service //svc c.0)
expect_rc 0 mq-send q --conversation "$c" c.1
expect_rc 0 mq-admin conversations
[ "$(cat "$T/out")" = "$c	q	$c	open	2	-" ] || fail "conversations: $(cat "$T/out")"
expect_rc 0 mq-admin end-conversation "$c"
expect_out ''
expect_rc 5 mq-send q --conversation "$c" more
expect_err_match "^mq-send: q: conversation $c has ended \(ended\): no more sends \(MQ_CONVERSATION_CLOSED 0xE00E0011\)$"
expect_rc 0 mq-admin conversations --json
[ "$(jq -r '[.state, .messages, .next_sequence_number, .locked, .service_name] | @tsv' "$T/out")" = "ended	3	3	false	//svc" ] ||
  fail "conversations --json: $(cat "$T/out")"
expect_rc 0 mq-receive q --json
[ "$(jq -r '[.body, .message_type_name, .validation, .message_sequence_number] | @tsv' "$T/out" | tr '\n' ' ')" = \
  "c.0	DEFAULT	N	0 c.1	DEFAULT	N	1 	http://schemas.microsoft.com/SQL/ServiceBroker/EndDialog	E	2 " ] ||
  fail "received: $(jq -c '[.body, .message_type_name, .validation]' "$T/out" | tr '\n' ' ')"

# With an error: the Error message comes first for its conversation.
e=$(mq-send q --conversation new e.0)
expect_rc 0 mq-send q --conversation "$e" e.1
expect_rc 0 mq-admin end-conversation "$e" --error 50001 --description 'out of <stock> & gone'
expect_rc 5 mq-send q --conversation "$e" more
expect_rc 0 mq-receive q --json
jq -r .message_type_name "$T/out" >"$T/types"
[ "$(head -n1 "$T/types")" = http://schemas.microsoft.com/SQL/ServiceBroker/Error ] ||
  fail "Error is not received first: $(tr '\n' ' ' <"$T/types")"
body=$(jq -r 'select(.message_type_name | endswith("/Error")) | .body' "$T/out")
[ "$body" = '<?xml version="1.0" encoding="utf-8"?><Error xmlns="http://schemas.microsoft.com/SQL/ServiceBroker/Error"><Code>50001</Code><Description>out of &lt;stock&gt; &amp; gone</Description></Error>' ] ||
  fail "Error body: $body"
[ "$(jq -r 'select(.message_type_name | endswith("/Error")) | .validation' "$T/out")" = X ] || fail "Error validation"
expect_rc 0 mq-admin conversations --json
[ "$(jq -r "select(.conversation_handle == \"$e\") | .state" "$T/out")" = error ] || fail "state after --error"

# Errors.
expect_rc 3 mq-admin end-conversation "$(cat /proc/sys/kernel/random/uuid)"
expect_err_match "^mq-admin: [0-9a-f-]{36}: no such conversation \(MQ_CONVERSATION_NOT_FOUND"
expect_rc 2 mq-admin end-conversation nope
expect_rc 2 mq-admin end-conversation "$e" --error 1
expect_rc 5 mq-admin end-conversation "$e" --error 1 --description again
expect_rc 0 mq-admin end-conversation "$e"
expect_rc 0 mq-admin check
expect_out ''
finish
