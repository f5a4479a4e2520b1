#!/bin/bash
# Issue 25: store formats 2 (native message ids) and 3 (lean records), and mq-admin upgrade. A
# store made now is of format 3: its messages' ids need no index entry, and their records leave
# out what the store says (record version 2). A store of format 1 or 2 (made by an older mq:
# rebuilt here with LMDB's own dump and load) works as it is, writes records an older mq
# reads, says so in stat, and mq-admin upgrade brings it to format 3 only while no other
# process has it open, keeping every message findable by its id.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

by_id_entries() { mdb_stat -s by_id "$1" | awk '/Entries:/ { print $2 }'; }
# record_versions DIR: the version byte of each message record, in key order, on one line.
record_versions() {
  mdb_dump -s messages "$1" | awk '/^HEADER=END/ { d = 1; n = 0; next } /^DATA=END/ { d = 0 }
    d { if (n++ % 2) printf "%s ", substr($1, 1, 2) }'
}

# set_format DIR HEX [drop-prefix]: rewrites the closed store DIR with LMDB's dump and load,
# its meta "format" record set to HEX (8 digits) and, with drop-prefix, no "id_prefix" (as
# format 1 wrote the meta record).
set_format() {
  local n=$((++forged))
  mdb_dump -a "$1" | awk -v fmt=" $2" -v drop="${3:-}" '
    /^database=/ { meta = ($0 == "database=meta") }
    /^HEADER=END/ { data = 1; key = ""; print; next }
    /^DATA=END/ { data = 0; print; next }
    data && meta {
      if (key == "") { key = $0; next }
      val = $0
      if (key == " 69645f707265666978" && drop != "") { key = ""; next }  # "id_prefix"
      if (key == " 666f726d6174") val = fmt                                 # "format"
      print key; print val; key = ""; next
    }
    { print }' >"$T/forged.$n.dump"
  mkdir "$T/forged.$n"
  mdb_load -f "$T/forged.$n.dump" "$T/forged.$n" 2>/dev/null || fail "mdb_load of the forged store failed"
  mv "$T/forged.$n/data.mdb" "$1/data.mdb"
  chmod 600 "$1/data.mdb"
  rm -f "$1/lock.mdb"
}
forged=0

# A new store: format 3, native ids (no by_id entry), lean records, and nothing for upgrade
# to do.
expect_rc 0 mq-admin create q
printf '%s\n' one two three | mq-send -l q
[ "$(by_id_entries "$STORE")" = 0 ] || fail "a format 3 store indexed $(by_id_entries "$STORE") native ids"
[ "$(record_versions "$STORE")" = "02 02 02 " ] || fail "record versions: $(record_versions "$STORE")"
expect_rc 0 mq-admin stat
grep -q "^store $STORE: .*, format 3$" "$T/out" || fail "stat's store line: $(tail -n1 "$T/out")"
expect_rc 0 mq-admin stat q --json
[ "$(jq .store_format "$T/out")" = 3 ] || fail "stat --json store_format: $(cat "$T/out")"
expect_rc 0 mq-admin upgrade
expect_err_match "already format 3: nothing to do"
# What a lean record leaves out reads back: the id (its counter is the lookup id), the source
# (the store), the enqueue time (the arrival) and the queuing order (the lookup id).
expect_rc 0 mq-peek q --all --json
[ "$(jq -r 'select(. as $m | (.id | endswith("\\" + ($m.lookup_id | tostring))) and .source_qm_guid != null
  and .message_enqueue_time == .arrived_time and .queuing_order == .lookup_id) | .body' "$T/out" |
  tr '\n' ' ')" = "one two three " ] || fail "a lean record reads back wrong: $(cat "$T/out")"
[ "$(jq -r .source_qm_guid "$T/out" | sort -u | wc -l)" = 1 ] || fail "sources differ: $(cat "$T/out")"
id=$(mq-peek q --columns message_id | head -n1)
expect_rc 0 mq-peek q --id "$id"
expect_out "one"

# A store of format 1: the same store before any message, its meta record as format 1 wrote it
# (format 1, no id prefix).
OLD=$T/old
mq-admin -s "$OLD" init >/dev/null
mq-admin -s "$OLD" create q >/dev/null
set_format "$OLD" 00000001 drop-prefix

export MQ_STORE=$OLD
printf '%s\n' a b c d | mq-send -l q || fail "send to a format 1 store failed"
[ "$(by_id_entries "$OLD")" = 4 ] || fail "format 1: $(by_id_entries "$OLD") by_id entries for 4 messages"
expect_rc 0 mq-admin stat
grep -q "format 1 (mq-admin upgrade brings it to this mq's)$" "$T/out" ||
  fail "stat does not say the store is of format 1: $(tail -n1 "$T/out")"
old_ids=$(mq-peek q --all --columns message_id)

# Refused while another process has the store open (a waiting receive), in time.
expect_rc 0 mq-admin create idle
start mq-receive idle --wait 30s
wait_blocked "$PID" poll
expect_rc 5 mq-admin upgrade --wait 300ms
expect_err_match "the store is in use by other processes"
expect_rc 0 mq-admin stat q --json
[ "$(jq .store_format "$T/out")" = 1 ] || fail "a refused upgrade changed the format"
mq-send idle wake-up
expect_bg 0 "$PID"

expect_rc 0 mq-admin upgrade
expect_err_match "upgraded: format 1 -> 3 \(5 queues\)"
expect_rc 0 mq-admin stat q --json
[ "$(jq .store_format "$T/out")" = 3 ] || fail "upgrade left format $(jq .store_format "$T/out")"
expect_rc 0 mq-admin check

# The old messages keep their ids and entries; new ones need none; every id is found.
printf '%s\n' e f | mq-send -l q
[ "$(by_id_entries "$OLD")" = 4 ] || fail "after upgrade: $(by_id_entries "$OLD") by_id entries, expected the 4 old ones"
for i in $old_ids $(mq-peek q --all --columns message_id | tail -n2); do
  expect_rc 0 mq-peek q --id "$i"
done
new_ids=$(mq-peek q --all --columns message_id | tail -n2)
for i in $new_ids; do
  case " $old_ids " in *" $i "*) fail "a new id $i repeats an old one" ;; esac
done
expect_rc 0 mq-admin check
expect_rc 0 mq-receive q --all -l
expect_out "a
b
c
d
e
f
"
[ "$(by_id_entries "$OLD")" = 0 ] || fail "received all, yet by_id keeps $(by_id_entries "$OLD") entries"
expect_rc 0 mq-admin check

# A store of format 2: its records stay whole (an older mq reads them) until upgrade, which
# only changes what is written from then on.
F2=$T/f2
mq-admin -s "$F2" init >/dev/null
mq-admin -s "$F2" create q >/dev/null
set_format "$F2" 00000002
export MQ_STORE=$F2
printf '%s\n' a b | mq-send -l q || fail "send to a format 2 store failed"
[ "$(record_versions "$F2")" = "01 01 " ] || fail "format 2 record versions: $(record_versions "$F2")"
expect_rc 0 mq-admin upgrade
expect_err_match "upgraded: format 2 -> 3; an mq older"
printf '%s\n' c d | mq-send -l q
[ "$(record_versions "$F2")" = "01 01 02 02 " ] || fail "after upgrade: $(record_versions "$F2")"
[ "$(by_id_entries "$F2")" = 0 ] || fail "format 2 -> 3: $(by_id_entries "$F2") by_id entries"
for i in $(mq-peek q --all --columns message_id); do expect_rc 0 mq-peek q --id "$i"; done
expect_rc 0 mq-admin check
expect_rc 0 mq-receive q --all -l
expect_out "a
b
c
d
"
export MQ_STORE=$OLD

# A store of a format newer than this mq's is refused, clearly, and left alone.
set_format "$OLD" 00000004
cp "$OLD/data.mdb" "$T/newer.mdb"
expect_rc 10 mq-send q x
expect_err_match "store format 4 is newer than this mq understands \(3\); upgrade mq"
expect_rc 10 mq-admin upgrade
expect_err_match "store format 4 is newer than this mq understands"
cmp -s "$OLD/data.mdb" "$T/newer.mdb" || fail "a refused open changed data.mdb"

finish
