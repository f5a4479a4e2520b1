#!/bin/bash
# Issue 14's semantics over links: a --ttbr that runs out while the message waits in out;LINK is
# NACK_RECEIVE_TIMEOUT_AT_SENDER (a --ttrq that runs out first stays NACK_REACH_QUEUE_TIMEOUT);
# the name 'out' is reserved for the links' outgoing queues (no queue of the user's, or
# subqueue of one, can be out;LINK); ACK_RECEIVE and the receive-side NACKs (receive timeout,
# purge, deletion) of a message that came over a link travel back to the sender's admin queue
# through the reverse link (mq-admin link set --return); conversations travel: mq-send
# LINK:QUEUE --conversation new|HANDLE numbers the messages here, the far store begins the
# conversation with the first and keeps their handle, group, sequence and message type (checked
# there against its own message types: NACK_RECEIVE_REJECTED if it fails or is unknown); ending
# such a conversation at the sending end (mq-admin end-conversation [--error]) sends its
# EndDialog or Error message after the others and ends it at the far side.
. "$(dirname "$0")/lib.sh"

B=$T/B
count() { mq-admin "$@" --json | jq -s 'map(.messages) | add // 0'; }

expect_rc 0 mq-admin create adminq
expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create dest
expect_rc 0 mq-admin link add b --via "mq-admin --store '$B' accept"

# --- expiry in out;LINK ---------------------------------------------------------------------------
expect_rc 0 mq-send --ttbr 200ms --deadletter --ack nack-receive --admin-queue adminq b:dest ttbr
expect_rc 0 mq-send --ttrq 200ms --ttbr 1h --deadletter --ack full-receive --admin-queue adminq b:dest ttrq
sleep 0.5
expect_rc 0 mq-admin sweep
[ "$(count stat 'out;b')" = 0 ] || fail "expired messages stayed in out;b"
expect_rc 0 mq-receive adminq --all --json
[ "$(jq -r .class "$T/out" | tr '\n' ' ')" = "nack_receive_timeout_at_sender nack_reach_queue_timeout " ] ||
  fail "expiry classes in out;b: $(jq -r .class "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-receive 'system;deadletter' --all --json
[ "$(jq -r '[.class, .body] | join(" ")' "$T/out" | tr '\n' ',')" = \
  "nack_receive_timeout_at_sender ttbr,nack_reach_queue_timeout ttrq," ] ||
  fail "expiry dead letters: $(jq -r '[.class, .body] | join(" ")' "$T/out" | tr '\n' ',')"

# --- 'out' is reserved ------------------------------------------------------------------------------
expect_rc 2 mq-admin create out
expect_err_match "^mq-admin: out: invalid queue name: 'out' is reserved: out;LINK is the outgoing queue"
expect_rc 2 mq-send --create out x
expect_err_match "^mq-send: out: invalid queue name: 'out' is reserved"
expect_rc 2 mq-admin create 'out;x'
expect_rc 2 mq-send 'out;b' x
expect_rc 3 mq-send 'DIRECT=OS:.\private$\out' x   # no such queue, and none can be made
expect_rc 2 mq-send b:out x
expect_err_match '^mq-send: b:out: invalid queue name: a remote queue is a plain queue name'
expect_rc 2 mq-send --admin-queue 'out;b' --ack full-receive b:dest x
expect_err_match "^mq-send: out;b: a link's outgoing queue takes no acknowledgements or replies"
expect_rc 2 mq-send --response-queue 'out;b' b:dest x
expect_rc 2 mq-admin link add journal --via x
expect_err_match "^mq-admin: journal: 'journal' is reserved"
expect_rc 0 mq-admin link add c --via x
expect_rc 0 mq-send b:dest waits
lookup=$(mq-peek 'out;b' --json | jq .lookup_id)
expect_rc 2 mq-admin move 'out;b' "$lookup" --to c
expect_err_match "links' outgoing queues"
expect_rc 2 mq-admin requeue 'out;b'
[ "$(count stat 'out;b')" = 1 ] || fail "out;b changed"
[ "$(count stat 'out;c')" = 0 ] || fail "out;c changed"
expect_rc 0 mq-admin link delete c
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-receive --store "$B" dest
expect_out 'waits'

# --- receive-side acknowledgements travel back through the reverse link ---------------------------
expect_rc 0 mq-admin --store "$B" link add back --via "mq-admin --store '$STORE' accept"
expect_rc 0 mq-admin link set b --return back
expect_rc 0 mq-admin --store "$B" create gone
ids=()
send() {  # send QUEUE BODY [options]: with full-receive acks to adminq; remembers its id
  local q=$1 body=$2
  shift 2
  mq-send --print-id --ack full-receive --admin-queue adminq "$@" "b:$q" "$body" >"$T/id" ||
    fail "send to b:$q"
  local id guid
  id=$(cat "$T/id")  # {GUID}\N, which a correlation id shows as 40 hex digits
  guid=${id#\{}
  guid=${guid%%\}*}
  ids+=("$(printf '%s%08x' "${guid//-/}" "${id##*\\}")")
}
send dest received
send dest late --ttbr 4s  # time enough to get there, even slowed down (sanitizers)
send dest purged
expect_rc 0 mq-admin forward b --once
send gone deleted
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-peek --store "$B" gone --json
[ "$(jq -r .admin_queue "$T/out")" = back:adminq ] || fail "admin queue at the far side: $(cat "$T/out")"
expect_rc 0 mq-peek --store "$B" dest --all --json
[ "$(jq -r .body "$T/out" | tr '\n' ' ')" = "received late purged " ] ||
  fail "at the far side: $(jq -r .body "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-receive --store "$B" dest
expect_out 'received'
sleep 4.2  # late's ttbr runs out at the far side
expect_rc 0 mq-admin --store "$B" sweep
expect_rc 0 mq-admin --store "$B" purge dest
expect_rc 0 mq-admin --store "$B" delete gone
[ "$(count stat adminq)" = 0 ] || fail "acknowledgements arrived before the reverse forward"
expect_rc 0 mq-peek --store "$B" 'out;back' --all --json
[ "$(jq -r .destination_queue "$T/out" | sort -u)" = adminq ] ||
  fail "acknowledgements waiting in out;back: $(cat "$T/out")"
expect_rc 0 mq-admin --store "$B" forward back --once
expect_rc 0 mq-receive adminq --all --json
[ "$(jq -r '[.class, .correlation_id] | join(" ")' "$T/out" | tr '\n' ',')" = \
  "ack_receive ${ids[0]},nack_receive_timeout ${ids[1]},nack_q_purged ${ids[2]},nack_q_deleted ${ids[3]}," ] ||
  fail "acknowledgements back at the sender: $(jq -c '[.class, .correlation_id, .label]' "$T/out" | tr '\n' ',') for ${ids[*]}"
[ "$(count --store "$B" stat 'out;back')" = 0 ] || fail "out;back not empty"

# --- conversations over a link --------------------------------------------------------------------
expect_rc 0 mq-admin --store "$B" message-type create order --validation well-formed-xml
expect_rc 0 mq-send --conversation new --service shop --contract orders --message-type order \
  b:dest '<o n="1"/>'
h=$(cat "$T/out")
[[ $h =~ ^[0-9a-f-]{36}$ ]] || fail "mq-send LINK:QUEUE --conversation new printed '$h'"
printf '<o n="2"/>\n<o n="3"/>\n' | mq-send -l --conversation "$h" --message-type order b:dest ||
  fail "send on a conversation through a link"
g=$(cat /proc/sys/kernel/random/uuid)
expect_rc 0 mq-send --conversation new --group "$g" b:dest other
h2=$(cat "$T/out")
expect_rc 3 mq-send --conversation "$g" b:dest x
expect_err_match "no conversation $g through link b"
expect_rc 3 mq-send --conversation "$h" b:gone x
expect_err_match "conversation $h goes to b:dest"
expect_rc 2 mq-send --conversation "$h" --group "$g" b:dest x
expect_err_match 'sets the group of a new one only'
# Refused for their content: NACK_RECEIVE_REJECTED, which goes to senders that ask for
# receive NACKs (MSMQ's rule for that class).
expect_rc 0 mq-send --conversation "$h" --message-type order --deadletter --ack nack-receive \
  --admin-queue adminq b:dest 'not xml <'
expect_rc 0 mq-send --conversation "$h" --message-type nosuch --ack nack-receive \
  --admin-queue adminq b:dest x
expect_rc 0 mq-admin --store "$B" create small --quota 2k
expect_rc 0 mq-send --conversation new --ack nack-reach-queue --admin-queue adminq b:small \
  "$(head -c 3000 /dev/zero | tr '\0' x)"
h3=$(cat "$T/out")
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-receive adminq --all --json
[ "$(jq -r .class "$T/out" | tr '\n' ' ')" = "nack_receive_rejected nack_receive_rejected nack_q_exceed_quota " ] ||
  fail "message types checked at the far side: $(jq -r .class "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-admin --store "$B" conversations --json
[ "$(jq -r 'select(.conversation_handle == "'"$h"'") | [.queue, .state, .next_sequence_number, .service_name] | join(" ")' "$T/out")" = "dest open 3 shop" ] ||
  fail "the conversation at the far side: $(cat "$T/out")"
[ "$(jq -r 'select(.conversation_handle == "'"$h3"'")' "$T/out")" = "" ] ||
  fail "a conversation whose first message was refused stayed at the far side"
expect_rc 0 mq-receive --store "$B" dest --conversation "$h" --all --json
[ "$(jq -c '[.body, .message_sequence_number, .conversation_group_id == "'"$h"'", .service_name, .message_type_name, .validation]' "$T/out" | tr -d '\n')" = \
  '["<o n=\"1\"/>",0,true,"shop","order","X"]["<o n=\"2\"/>",1,true,"shop","order","X"]["<o n=\"3\"/>",2,true,"shop","order","X"]' ] ||
  fail "conversation messages at the far side: $(jq -c '[.body, .message_sequence_number, .conversation_group_id, .service_name, .message_type_name, .validation]' "$T/out")"
expect_rc 0 mq-receive --store "$B" dest --group "$g" --json
[ "$(jq -r '[.body, .conversation_handle] | join(" ")' "$T/out")" = "other $h2" ] ||
  fail "a new conversation's group at the far side: $(cat "$T/out")"
# Ending a conversation at the sending end travels: its EndDialog (or Error) message follows
# the conversation's messages and ends it at the far side; no send may follow it here.
expect_rc 0 mq-send --conversation "$h" --message-type order b:dest '<o n="4"/>'
expect_rc 0 mq-admin end-conversation "$h"
expect_rc 5 mq-send --conversation "$h" --message-type order b:dest '<o n="5"/>'
expect_err_match "conversation $h has ended here"
expect_rc 0 mq-admin end-conversation "$h"   # again: nothing more to do, as for a local one
expect_rc 5 mq-admin end-conversation "$h" --error 1 --description late
expect_rc 0 mq-admin end-conversation "$h2" --error 42 --description 'out of stock'
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-admin --store "$B" conversations --json
[ "$(jq -r 'select(.conversation_handle == "'"$h"'" or .conversation_handle == "'"$h2"'") | [.conversation_handle, .state] | join(" ")' "$T/out" | sort | tr '\n' ,)" = \
  "$(printf '%s ended\n%s error\n' "$h" "$h2" | sort | tr '\n' ,)" ] ||
  fail "conversations ended at the sending end, at the far side: $(cat "$T/out")"
expect_rc 0 mq-receive --store "$B" dest --conversation "$h" --all --json
[ "$(jq -c '[.body, .message_type_name]' "$T/out" | tr -d '\n')" = \
  '["<o n=\"4\"/>","order"]["","http://schemas.microsoft.com/SQL/ServiceBroker/EndDialog"]' ] ||
  fail "the EndDialog after the conversation's messages: $(jq -c '[.body, .message_type_name]' "$T/out")"
expect_rc 0 mq-receive --store "$B" dest --conversation "$h2" --json
[ "$(jq -r .message_type_name "$T/out")" = http://schemas.microsoft.com/SQL/ServiceBroker/Error ] ||
  fail "the Error message at the far side: $(cat "$T/out")"
jq -r .body "$T/out" | grep -q '<Code>42</Code>' && jq -r .body "$T/out" | grep -q 'out of stock' ||
  fail "the Error body at the far side: $(jq -r .body "$T/out")"
expect_rc 5 mq-send --store "$B" --conversation "$h" dest 'after the end'
expect_rc 0 mq-admin link delete b
expect_rc 0 mq-admin link add b --via "mq-admin --store '$B' accept"
expect_rc 3 mq-send --conversation "$h" b:dest x
expect_err_match "no conversation $h through link b"

expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
