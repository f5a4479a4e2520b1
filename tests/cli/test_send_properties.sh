#!/bin/bash
# Every message option of mq-send reaches the stored message, as mq-peek --json shows it;
# --print-id prints the new ids.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create acks
expect_rc 0 mq-admin create replies

# --print-id: one {GUID}\N line per message, and the id is the one stored.
expect_rc 0 mq-send --print-id q plain
grep -Eqx '\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\}\\[0-9]+' "$T/out" ||
  fail "--print-id printed '$(cat "$T/out")'"
[ "$(wc -l <"$T/out")" = 1 ] || fail "--print-id printed more than one line for one message"
id1=$(cat "$T/out")
expect_rc 0 mq-peek q --template '{id}\n'
expect_out "$id1
"
expect_rc 0 mq-send --print-id -l q < <(printf 'a\nb\nc\n')
[ "$(wc -l <"$T/out")" = 3 ] || fail "--print-id -l printed $(wc -l <"$T/out") lines for 3 messages"
sort -u "$T/out" | wc -l | grep -qx 3 || fail "--print-id printed repeated ids"
cp "$T/out" "$T/ids"
expect_rc 0 mq-peek q --all --template '{id}\n'
tail -n 3 "$T/out" | cmp -s - "$T/ids" || fail "--print-id ids are not those of the stored messages"
grep -qxF "$id1" "$T/ids" && fail "a second send reused an id"
# Without --print-id nothing is printed.
expect_rc 0 mq-send q quiet
expect_out ''
expect_rc 0 mq-admin purge q

# Defaults.
expect_rc 0 mq-send q defaults
expect_rc 0 mq-receive q --json
jq -e '.priority == 3 and .label == "" and .correlation_id == null and .app_specific == 0
       and .journal == false and .deadletter == false and .ack == "none" and .ack_value == 0
       and .admin_queue == null and .response_queue == null and .ttrq == null and .ttbr == null
       and .delivery == "recoverable" and .class == "normal" and .destination_queue == "q"
       and .body == "defaults" and .status == 1 and .delivery_count == 0' "$T/out" >/dev/null ||
  fail "default properties wrong: $(cat "$T/out")"

# Everything set at once.
corr=00112233445566778899aabbccddeeff00112233
start=$(date +%s)
expect_rc 0 mq-send q -p 7 -L 'a label' -c "$(echo $corr | tr a-f A-F)" --app 4294967295 \
  --body-type json --journal --deadletter --admin-queue acks --ack full-receive \
  --response-queue 'DIRECT=OS:.\private$\replies' --ttrq 1h --ttbr 2d --express '{"k":1}'
expect_rc 0 mq-peek q --json
cp "$T/out" "$T/m.json"
[ "$(wc -l <"$T/m.json")" = 1 ] || fail "--json printed more than one line for one message"
check() { jq -e "$1" "$T/m.json" >/dev/null || fail "property check '$1' failed: $(cat "$T/m.json")"; }
check '.priority == 7'
check '.label == "a label"'
check ".correlation_id == \"$corr\""
check '.app_specific == 4294967295'
check '.body_type_name == "json"'
check '.body_type == "json"'
check '.journal == true'
check '.deadletter == true'
check '.admin_queue == "acks"'
check '.response_queue == "replies"'
check '.ack == "full-receive"'
check '.delivery == "express"'
check '.body == "{\"k\":1}" and .body_encoding == "utf-8"'
# Deadlines are RFC 3339 times in the future, about 1h and 2d from now.
for f in ttrq:3600 ttbr:172800; do
  t=$(jq -r ".${f%%:*}" "$T/m.json")
  [[ $t =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$ ]] ||
    fail "${f%%:*} '$t' is not an RFC 3339 time"
  s=$(date -d "$t" +%s 2>/dev/null || echo 0)
  want=$((start + ${f#*:}))
  [ "$s" -ge "$((want - 5))" ] && [ "$s" -le "$((want + 60))" ] ||
    fail "${f%%:*} is $t, not about ${f#*:}s after the send"
done
# The other times are around now.
s=$(date -d "$(jq -r .sent_time "$T/m.json")" +%s 2>/dev/null || echo 0)
[ "$s" -ge "$((start - 5))" ] && [ "$s" -le "$((start + 60))" ] || fail "sent_time is not now"

# Body types by name and number; acks by each name; a message id as correlation.
expect_rc 0 mq-admin purge q
for bt in bytes:bytes text:text xml:xml json:json 4113:bytes 8:text 0:empty 4242:4242; do
  expect_rc 0 mq-send q --body-type "${bt%%:*}" x
  expect_rc 0 mq-receive q --template '{body_type_name}'
  expect_out "${bt#*:}"
done
for ack in none full-reach-queue full-receive nack-reach-queue nack-receive; do
  expect_rc 0 mq-send q --admin-queue acks --ack "$ack" x
  expect_rc 0 mq-receive q --template '{ack}'
  expect_out "$ack"
done
expect_rc 0 mq-send --print-id q original
orig=$(cat "$T/out")
expect_rc 0 mq-send q -c "$orig" reply
expect_rc 0 mq-peek q --last --template '{correlation_id}'
guid=${orig#\{}; guid=${guid%%\}*}; n=${orig##*\\}
expect_out "$(printf '%s%08x' "${guid//-/}" "$n")"
# --ttbr infinite means no deadline; express absent means recoverable.
expect_rc 0 mq-send q --ttbr infinite x
expect_rc 0 mq-peek q --last --template '{ttbr}|{delivery}'
expect_out '|recoverable'

finish
