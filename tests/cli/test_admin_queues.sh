#!/bin/bash
# mq-admin create, delete, set, list, stat (text, --json, prometheus), purge and check.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq -r .messages; }

# create: new queue, then 5 if it exists (settings unchanged).
expect_rc 0 mq-admin create q --label 'work items'
expect_out ''
expect_rc 5 mq-admin create q --label other
expect_err_match '^mq-admin: q: .*MQ_ERROR_QUEUE_EXISTS'
expect_rc 0 mq-admin stat q --json
jq -e '.label == "work items"' "$T/out" >/dev/null || fail "a failed create changed the label"
expect_rc 2 mq-admin create 'q;journal'
expect_rc 2 mq-admin create q2 --label "$(printf 'x%.0s' $(seq 125))"
expect_rc 2 mq-admin create q2 --quota lots
expect_rc 3 mq-peek q2

# list: the queues one per line, sorted, system queues included; --json one object each.
expect_rc 0 mq-admin create b
expect_rc 0 mq-admin create a
expect_rc 0 mq-admin list
expect_out $'a\nb\nq\nsystem;deadletter\nsystem;deadxact\nsystem;journal\n'
expect_rc 0 mq-admin list --json
[ "$(wc -l <"$T/out")" = 6 ] || fail "list --json printed $(wc -l <"$T/out") lines"
jq -s -e 'map(.queue) == ["a","b","q","system;deadletter","system;deadxact","system;journal"]' \
  "$T/out" >/dev/null || fail "list --json queues wrong: $(cat "$T/out")"
jq -s -e 'all(has("messages") and has("status") and has("label") and has("quota"))' "$T/out" >/dev/null ||
  fail "list --json objects lack keys"

# stat: counts and bytes, per queue or all.
expect_rc 0 mq-send -l q < <(printf 'one\ntwo\nthree\n')
expect_rc 0 mq-admin stat q --json
[ "$(wc -l <"$T/out")" = 1 ] || fail "stat q --json printed more than one line"
jq -e '.queue == "q" and .messages == 3 and .bytes > 0 and .status == "on" and
       (.oldest_arrived_time | type == "string")' "$T/out" >/dev/null ||
  fail "stat q --json: $(cat "$T/out")"
expect_rc 0 mq-admin stat --json
[ "$(wc -l <"$T/out")" = 6 ] || fail "stat --json printed $(wc -l <"$T/out") lines for 6 queues"
jq -s -e 'map(select(.queue == "a"))[0].messages == 0' "$T/out" >/dev/null || fail "stat --json: a not empty"
expect_rc 0 mq-admin stat q
[ "$(wc -l <"$T/out")" = 2 ] || fail "stat q (text) printed $(wc -l <"$T/out") lines"
grep -Eq '^q +3 +0 +0 +[0-9]+ +[0-9a-z]+ +0 +on$' "$T/out" || fail "stat q (text): $(cat "$T/out")"
expect_rc 0 mq-admin stat q --format prometheus
grep -qxF "mq_queue_messages{store=\"$STORE\",queue=\"q\"} 3" "$T/out" ||
  fail "prometheus: no 'mq_queue_messages{store=\"$STORE\",queue=\"q\"} 3' line in: $(cat "$T/out")"
grep -q '^# TYPE mq_queue_messages gauge$' "$T/out" || fail "prometheus: no TYPE line"
grep -v '^#' "$T/out" | grep -v '^mq_store_' | grep -Evq '^mq_[a-z_]+\{store="[^"]*",queue="q"\} [0-9.]+$' &&
  fail "prometheus: a line is not 'name{labels} value': $(grep -v '^#' "$T/out")"
grep -Eq '^mq_store_file_bytes\{store="[^"]*"\} [0-9]+$' "$T/out" || fail "prometheus: no mq_store_file_bytes"
grep -Eq '^mq_store_used_bytes\{store="[^"]*"\} [0-9]+$' "$T/out" || fail "prometheus: no mq_store_used_bytes"
expect_rc 0 mq-admin stat --format prometheus
grep -qxF "mq_queue_messages{store=\"$STORE\",queue=\"system;deadletter\"} 0" "$T/out" ||
  fail "prometheus (all queues): system;deadletter missing"
expect_rc 2 mq-admin stat q --format nonsense
expect_rc 3 mq-admin stat nosuch
expect_err_match '^mq-admin: nosuch: .*MQ_ERROR_QUEUE_NOT_FOUND'

# set: status off/on, label; a missing queue is 3.
expect_rc 0 mq-admin set q --status off
expect_rc 0 mq-admin stat q --json
jq -e '.status == "off" and .messages == 3' "$T/out" >/dev/null || fail "set --status off: $(cat "$T/out")"
expect_rc 5 mq-send q x
expect_rc 5 mq-receive q
expect_rc 0 mq-admin set q --status on --label 'new label'
expect_rc 0 mq-admin list --json
jq -s -e 'map(select(.queue == "q"))[0] | .status == "on" and .label == "new label"' "$T/out" >/dev/null ||
  fail "set --status on --label: $(cat "$T/out")"
expect_rc 2 mq-admin set q --status maybe
expect_rc 3 mq-admin set nosuch --label x
expect_err_match 'MQ_ERROR_QUEUE_NOT_FOUND'

# purge: empties the queue, keeps the queue and its settings.
expect_rc 0 mq-admin purge q
[ "$(count q)" = 0 ] || fail "purge left $(count q) messages"
expect_rc 1 mq-peek q
expect_rc 0 mq-admin stat q --json
jq -e '.label == "new label" and .bytes == 0' "$T/out" >/dev/null || fail "purge: $(cat "$T/out")"
expect_rc 0 mq-admin purge q
expect_rc 3 mq-admin purge nosuch
expect_rc 0 mq-send q after-purge
expect_rc 0 mq-peek q
expect_out after-purge

# delete: messages gone, later sends 3, a second delete 3; the name can be created anew, empty.
expect_rc 0 mq-send -l q < <(seq 1 100)
expect_rc 0 mq-admin delete q
expect_out ''
expect_rc 3 mq-peek q
expect_rc 3 mq-send q x
expect_err_match 'MQ_ERROR_QUEUE_NOT_FOUND'
expect_rc 3 mq-admin delete q
expect_err_match '^mq-admin: q: .*MQ_ERROR_QUEUE_NOT_FOUND'
expect_rc 3 mq-admin stat q
expect_rc 0 mq-admin list
expect_out $'a\nb\nsystem;deadletter\nsystem;deadxact\nsystem;journal\n'
expect_rc 0 mq-admin create q
expect_rc 1 mq-peek q
expect_rc 0 mq-admin stat q --json
jq -e '.messages == 0 and .label == ""' "$T/out" >/dev/null || fail "re-created queue not fresh: $(cat "$T/out")"
expect_rc 2 mq-admin delete 'system;deadletter'
expect_rc 2 mq-admin delete '../q'

expect_rc 0 mq-admin check
expect_out ''

finish
