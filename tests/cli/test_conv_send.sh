#!/bin/bash
# mq-send --conversation (issue 5, item 1): `new` begins a conversation and prints its handle;
# each message of a conversation gets the next message_sequence_number from 0, with no gaps
# under concurrent senders; a conversation is in its own group unless --group puts it in
# another (and --group on a later send moves it, like MOVE CONVERSATION); bad handles are
# exit 2, unknown ones exit 3; --delay does not go with a conversation.
. "$(dirname "$0")/lib.sh"

UUID_RE='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create other

expect_rc 0 mq-send q --conversation new --service //svc --contract //c first
h=$(cat "$T/out")
[[ $h =~ $UUID_RE ]] || fail "--conversation new printed '$h', not a UUID"
expect_rc 0 mq-send q --conversation "$h" second
expect_rc 0 mq-send q --conversation "{$h}" --message-type DEFAULT third
expect_out ''
expect_rc 0 mq-peek q --all --json
[ "$(jq -c '[.message_sequence_number, .conversation_handle, .conversation_group_id, .service_name, .service_contract_name, .message_type_name, .validation, .status]' "$T/out" | sort | tr '\n' ' ')" = \
  "[0,\"$h\",\"$h\",\"//svc\",\"//c\",\"DEFAULT\",\"N\",1] [1,\"$h\",\"$h\",\"//svc\",\"//c\",\"DEFAULT\",\"N\",1] [2,\"$h\",\"$h\",\"//svc\",\"//c\",\"DEFAULT\",\"N\",1] " ] ||
  fail "conversation columns: $(jq -c '[.message_sequence_number, .conversation_group_id, .service_name]' "$T/out" | tr '\n' ' ')"

# -l: one conversation, sequence numbers in line order; --print-id after the handle.
printf 'a\nb\nc\n' | mq-send -l q --conversation new --print-id >"$T/lout"
[ "$(wc -l <"$T/lout")" = 4 ] || fail "--conversation new -l --print-id printed $(wc -l <"$T/lout") lines"
h2=$(head -n1 "$T/lout")
expect_rc 0 mq-admin conversations --json
[ "$(jq -r "select(.conversation_handle == \"$h2\") | [.messages, .next_sequence_number, .state] | @tsv" "$T/out")" = "3	3	open" ] ||
  fail "conversation $h2: $(cat "$T/out")"

# --group: a new conversation in an existing group; a later send moves it.
g=$(mq-send q --conversation new --group "$h" x)
expect_rc 0 mq-peek q --all --json
[ "$(jq -r "select(.conversation_handle == \"$g\") | .conversation_group_id" "$T/out")" = "$h" ] ||
  fail "--group did not put the new conversation in group $h"
newgroup=$(cat /proc/sys/kernel/random/uuid)
expect_rc 0 mq-send q --conversation "$g" --group "$newgroup" y
expect_rc 0 mq-admin conversations --json
[ "$(jq -r "select(.conversation_handle == \"$g\") | .conversation_group_id" "$T/out")" = "$newgroup" ] ||
  fail "--group on a later send did not move the conversation"
expect_rc 0 mq-peek q --all --json
[ "$(jq -r "select(.conversation_handle == \"$g\") | .conversation_group_id" "$T/out" | sort -u)" = "$newgroup" ] ||
  fail "the moved conversation's messages do not show their new group"
expect_rc 0 mq-admin check
expect_out ''
expect_rc 0 mq-receive q --group "$newgroup" -l
expect_out $'x\ny\n'

# Errors.
expect_rc 2 mq-send q --conversation nonsense z
expect_err_match "^mq-send: q: invalid conversation handle 'nonsense': expected a UUID or 'new' \(E_INVALIDARG"
expect_rc 3 mq-send q --conversation "$(cat /proc/sys/kernel/random/uuid)" z
expect_err_match "^mq-send: q: no conversation [0-9a-f-]+ \(mq-send --conversation new begins one\) \(MQ_CONVERSATION_NOT_FOUND 0xE00E0010\)$"
expect_rc 3 mq-send other --conversation "$h" z
expect_err_match "conversation $h belongs to another queue"
expect_rc 2 mq-send q --conversation "$h" --delay 1s z
expect_err_match "^mq-send: q: --delay and --at do not go with --conversation"
expect_rc 2 mq-send q --group "$h" z
expect_err_match "^mq-send: q: --group, --service and --contract go with --conversation"
expect_rc 3 mq-send q --conversation "$h" --message-type //no/such/type z
expect_err_match "no message type '//no/such/type'"
expect_rc 0 mq-admin check

# Concurrent senders on one conversation: 4 x 50 sends, sequence numbers 0..199, no gaps,
# no duplicates.
c=$(mq-send q --conversation new seed)
for w in 1 2 3 4; do
  (for i in $(seq 50); do mq-send q --conversation "$c" "$w.$i" || echo "send failed" >&2; done) &
done
wait
expect_rc 0 mq-peek q --all --json
jq -r "select(.conversation_handle == \"$c\") | .message_sequence_number" "$T/out" | sort -n >"$T/seqs"
seq 0 200 >"$T/want"
cmp -s "$T/seqs" "$T/want" || fail "concurrent senders: sequence numbers $(head -c 200 "$T/seqs" | tr '\n' ' ')... are not 0..200"
expect_rc 0 mq-receive q --conversation "$c" --json
jq -r .message_sequence_number "$T/out" >"$T/got"
cmp -s "$T/got" "$T/want" || fail "received sequence numbers out of order"
expect_rc 0 mq-admin check
expect_out ''
finish
