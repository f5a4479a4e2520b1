#!/bin/bash
# Journals (issue 6.3): a queue created with --journal keeps a copy of every committed receive
# in QUEUE;journal (none for a rolled-back one); mq-send --journal leaves a copy in
# system;journal when the message reaches its queue. Journals are read like queues; when one
# is full journaling stops, stat says so, and the original operation still succeeds.
. "$(dirname "$0")/lib.sh"

field() { mq-peek "$1" --all --json | jq -c "$2" | tr -d '\n'; }
count() { mq-admin stat "$1" --json | jq .messages; }

expect_rc 0 mq-admin create q --journal
expect_rc 0 mq-send q --print-id one
id1=$(cat "$T/out")
expect_rc 0 mq-send q two
expect_rc 0 mq-send q three
[ "$(count 'q;journal')" = 0 ] || fail "journal copy before any receive"
expect_rc 0 mq-receive q
expect_out "one"
# The copy keeps the message's id and properties.
[ "$(field 'q;journal' '[.body, .id, .queue]')" = "[\"one\",$(jq -n --arg i "$id1" '$i'),\"q;journal\"]" ] ||
  fail "journal copy: $(field 'q;journal' '[.body, .id, .queue]')"
expect_rc 0 mq-peek 'q;journal' --id "$id1"
expect_out "one"
# A rolled-back --exec makes no copy; its commit makes one.
expect_rc 8 mq-receive q --exec false
[ "$(count 'q;journal')" = 1 ] || fail "a rolled-back receive was journaled"
expect_rc 0 mq-receive q --exec true
[ "$(field 'q;journal' '.body')" = '"one""two"' ] || fail "after commit: $(field 'q;journal' '.body')"
# A nack'ed lease makes none either.
expect_rc 0 mq-receive q --lease 1m --json
expect_rc 0 mq-admin nack "$(jq -r .lease_token "$T/out")"
[ "$(count 'q;journal')" = 2 ] || fail "a nack'ed lease was journaled"
# Journals are read and emptied like queues.
expect_rc 0 mq-receive 'q;journal'
expect_out "one"
[ "$(count 'q;journal')" = 1 ] || fail "receive from a journal did not remove"
expect_rc 0 mq-admin purge 'q;journal'

# --- journal quota: journaling stops, the receive does not fail ------------------------------
expect_rc 0 mq-admin set q --journal-quota 200
expect_rc 0 mq-admin purge q
for i in 1 2 3 4 5; do mq-send q "message-$i" || fail "send $i"; done
for i in 1 2 3 4 5; do
  expect_rc 0 mq-receive q
  expect_out "message-$i"
done
bytes=$(mq-admin stat 'q;journal' --json | jq .bytes)
[ "$bytes" -le 200 ] || fail "journal holds $bytes bytes, quota 200"
[ "$(count 'q;journal')" -ge 1 ] && [ "$(count 'q;journal')" -lt 5 ] ||
  fail "journal kept $(count 'q;journal') of 5 with a 200-byte quota"
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.journal, .journal_quota, .journal_full]' "$T/out")" = '[true,200,true]' ] ||
  fail "stat json: $(cat "$T/out")"
dropped=$(jq .journal_dropped "$T/out")
[ "$dropped" = $((5 - $(count 'q;journal'))) ] || fail "journal_dropped $dropped"
expect_rc 0 mq-admin stat q
grep -Eq '^q +.* on,journal-full$' "$T/out" || fail "stat text: $(cat "$T/out")"
# Purging the journal makes room: journaling resumes and stat stops calling it full.
expect_rc 0 mq-admin purge 'q;journal'
expect_rc 0 mq-admin stat q --json
[ "$(jq .journal_full "$T/out")" = false ] || fail "still full after purge"
expect_rc 0 mq-send q again
expect_rc 0 mq-receive q
[ "$(field 'q;journal' '.body')" = '"again"' ] || fail "journaling did not resume"
# --no-journal stops it.
expect_rc 0 mq-admin set q --no-journal
expect_rc 0 mq-send q unjournaled
expect_rc 0 mq-receive q
[ "$(count 'q;journal')" = 1 ] || fail "--no-journal still journals"

# --- source journaling: system;journal when the message reaches its queue ---------------------
expect_rc 0 mq-admin create plain
expect_rc 0 mq-send plain --journal --print-id src
sid=$(cat "$T/out")
[ "$(field 'system;journal' '[.body, .queue]')" = '["src","system;journal"]' ] ||
  fail "source journal: $(field 'system;journal' '[.body, .queue]')"
expect_rc 0 mq-send plain nocopy
[ "$(count 'system;journal')" = 1 ] || fail "a message without --journal was journaled"
# A delayed message reaches its queue when it becomes visible.
expect_rc 0 mq-send plain --journal --delay 300ms later
[ "$(count 'system;journal')" = 1 ] || fail "journaled before it reached the queue"
sleep 0.4
expect_rc 0 mq-admin sweep
[ "$(field 'system;journal' '.body')" = '"src""later"' ] || fail "delayed source journal: $(field 'system;journal' '.body')"
# The original and its copy are both found by id.
expect_rc 0 mq-peek plain --id "$sid"
expect_out "src"
expect_rc 0 mq-peek 'system;journal' --id "$sid"
expect_out "src"
# system;journal has its own quota.
expect_rc 0 mq-admin set 'system;journal' --quota 1
expect_rc 0 mq-send plain --journal notkept
[ "$(count 'system;journal')" = 2 ] || fail "system;journal quota ignored"
expect_rc 0 mq-admin stat 'system;journal' --json
[ "$(jq .journal_dropped "$T/out")" = 1 ] || fail "system;journal drop not counted: $(cat "$T/out")"
expect_rc 0 mq-admin check
expect_out ""
finish
