#!/bin/bash
# Issue 25: store formats 2 (native message ids), 3 (lean records) and 4 (one tree: each record
# keyed by its place in the delivery order), and mq-admin upgrade. A store made now is of
# format 4: its messages' ids need no index entry, and their records leave out what the store
# says (record version 2). A store of an older format (made by an older mq: the fixtures in
# tests/fixtures/store, loaded with LMDB's own mdb_load) is refused with the command that
# upgrades it, and mq-admin upgrade brings it to format 4 only while no other process has it
# open, keeping every message in its state and findable by its id.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

by_id_entries() { mdb_stat -s by_id "$1" | awk '/Entries:/ { print $2 }'; }
# record_versions DIR: the version byte of each message record, in key order, on one line.
record_versions() {
  mdb_dump -s messages "$1" | awk '/^HEADER=END/ { d = 1; n = 0; next } /^DATA=END/ { d = 0 }
    d { if (n++ % 2) printf "%s ", substr($1, 1, 2) }'
}
# old_store DIR N: DIR becomes the store of format N that an older mq made, with its marker
# (which mq-admin upgrade's lone open needs): the first open writes it, even as it refuses
# the store.
old_store() {
  mkdir "$1"
  mdb_load -f "$MQ_SRC/tests/fixtures/store/format$2.dump" "$1" 2>/dev/null ||
    fail "mdb_load of the format $2 fixture failed"
  expect_rc 10 mq-admin -s "$1" stat
}
# set_format DIR HEX: rewrites the closed store DIR with LMDB's dump and load, its meta
# "format" record set to HEX (8 digits).
set_format() {
  mdb_dump -a "$1" | awk -v fmt=" $2" '
    /^database=/ { meta = ($0 == "database=meta") }
    /^HEADER=END/ { data = 1; key = ""; print; next }
    /^DATA=END/ { data = 0; print; next }
    data && meta {
      if (key == "") { key = $0; next }
      val = $0
      if (key == " 666f726d6174") val = fmt  # "format"
      print key; print val; key = ""; next
    }
    { print }' >"$T/forged.dump"
  mkdir "$T/forged"
  mdb_load -f "$T/forged.dump" "$T/forged" 2>/dev/null || fail "mdb_load of the forged store failed"
  mv "$T/forged/data.mdb" "$1/data.mdb"
  chmod 600 "$1/data.mdb"
  rm -rf "$1/lock.mdb" "$T/forged"
}

# A new store: format 4, native ids (no by_id entry), lean records, and nothing for upgrade
# to do.
expect_rc 0 mq-admin create q
printf '%s\n' one two three | mq-send -l q
[ "$(by_id_entries "$STORE")" = 0 ] || fail "a format 4 store indexed $(by_id_entries "$STORE") native ids"
[ "$(record_versions "$STORE")" = "02 02 02 " ] || fail "record versions: $(record_versions "$STORE")"
[ -z "$(mdb_stat -a "$STORE" | grep -x 'Status of order')" ] || fail "a format 4 store has an order database"
expect_rc 0 mq-admin stat
grep -q "^store $STORE: .*, format 4$" "$T/out" || fail "stat's store line: $(tail -n1 "$T/out")"
expect_rc 0 mq-admin stat q --json
[ "$(jq .store_format "$T/out")" = 4 ] || fail "stat --json store_format: $(cat "$T/out")"
expect_rc 0 mq-admin upgrade
expect_err_match "already format 4: nothing to do"
# What a lean record leaves out reads back: the id (its counter is the lookup id), the source
# (the store), the enqueue time (the arrival) and the queuing order (the lookup id).
expect_rc 0 mq-peek q --all --json
[ "$(jq -r 'select(. as $m | (.id | endswith("\\" + ($m.lookup_id | tostring))) and .source_qm_guid != null
  and .message_enqueue_time == .arrived_time and .queuing_order == .lookup_id) | .body' "$T/out" |
  tr '\n' ' ')" = "one two three " ] || fail "a lean record reads back wrong: $(cat "$T/out")"
[ "$(jq -r .source_qm_guid "$T/out" | sort -u | wc -l)" = 1 ] || fail "sources differ: $(cat "$T/out")"
id=$(mq-peek q --all --columns message_id | head -n1)
expect_rc 0 mq-peek q --id "$id"
expect_out "one"

# Refused while another process has the store open (a waiting receive), in time.
expect_rc 0 mq-admin create idle
start mq-receive idle --wait 30s
wait_blocked "$PID" poll
expect_rc 5 mq-admin upgrade --wait 300ms
expect_err_match "the store is in use by other processes"
mq-send idle wake-up
expect_bg 0 "$PID"

# A store of format 1: q with a, b, c and d, each id with its by_id entry.
OLD=$T/old
old_store "$OLD" 1
export MQ_STORE=$OLD
cp "$OLD/data.mdb" "$T/f1.mdb"
# Every tool refuses it, saying what to do, and leaves it alone.
for cmd in "mq-send q x" "mq-peek q" "mq-receive q" "mq-admin stat" "mq-admin check"; do
  expect_rc 10 $cmd
  expect_err_match "store format 1 is older than this mq's \(4\): run mq-admin upgrade"
done
cmp -s "$OLD/data.mdb" "$T/f1.mdb" || fail "a refused open changed data.mdb"
[ "$(by_id_entries "$OLD")" = 4 ] || fail "format 1: $(by_id_entries "$OLD") by_id entries for 4 messages"
expect_rc 0 mq-admin upgrade
expect_err_match "upgraded: format 1 -> 4 \(4 queues, 4 messages moved\)"
expect_rc 0 mq-admin stat q --json
[ "$(jq .store_format "$T/out")" = 4 ] || fail "upgrade left format $(jq .store_format "$T/out")"
expect_rc 0 mq-admin check
old_ids=$(mq-peek q --all --columns message_id)
[ "$(printf '%s\n' $old_ids | wc -l)" = 4 ] || fail "after upgrade: ids $old_ids"

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

# A store of format 2: q with a and b, whole records; upgrade moves them as they are, and
# what is written from then on is lean.
F2=$T/f2
old_store "$F2" 2
export MQ_STORE=$F2
[ "$(record_versions "$F2")" = "01 01 " ] || fail "format 2 record versions: $(record_versions "$F2")"
expect_rc 0 mq-admin upgrade
expect_err_match "upgraded: format 2 -> 4 \(2 messages moved\); an mq older"
printf '%s\n' c d | mq-send -l q
[ "$(record_versions "$F2")" = "01 01 02 02 " ] || fail "after upgrade: $(record_versions "$F2")"
[ "$(by_id_entries "$F2")" = 0 ] || fail "format 2 -> 4: $(by_id_entries "$F2") by_id entries"
for i in $(mq-peek q --all --columns message_id); do expect_rc 0 mq-peek q --id "$i"; done
expect_rc 0 mq-admin check
expect_rc 0 mq-receive q --all -l
expect_out "a
b
c
d
"

# A store of format 3 with a message in each state (tests/fixtures/store/README): each keeps
# its state and its place.
F3=$T/f3
old_store "$F3" 3
export MQ_STORE=$F3
expect_rc 0 mq-admin upgrade
expect_err_match "upgraded: format 3 -> 4 \(10 messages moved\)"
expect_rc 0 mq-admin check
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.messages, .locked, .delayed]' "$T/out")" = "[7,2,1]" ] ||
  fail "format 3 -> 4: q's counts $(cat "$T/out")"
expect_rc 0 mq-peek q --all -l
expect_out "p3-b
corr
ttl
p0
"
expect_rc 0 mq-peek q --all -l --locked
expect_out "p7
p3-a
p3-b
corr
ttl
p0
"
expect_rc 0 mq-peek q --correlation 0123456789abcdef0123456789abcdef01234567 -l
expect_out "corr
"
# The lease made by the older mq still holds its messages: rolled back, they are ready in
# their places.
expect_rc 0 mq-admin nack "$(cat "$MQ_SRC/tests/fixtures/store/format3.lease")"
expect_rc 0 mq-receive q --all -l
expect_out "p7
p3-a
p3-b
corr
ttl
p0
"
# The conversation's retained messages stay, in order; one sent now is received.
expect_rc 0 mq-peek conv --all --columns status,message_body
expect_out "0	c1
0	c2
0	c3
"
handle=$(cat "$MQ_SRC/tests/fixtures/store/format3.handle")
expect_rc 0 mq-send --conversation "$handle" conv c4
expect_rc 0 mq-receive conv --conversation "$handle" --all -l
expect_out "c4
"
expect_rc 0 mq-admin check
export MQ_STORE=$OLD

# A store of a format newer than this mq's is refused, clearly, and left alone.
set_format "$OLD" 00000005
cp "$OLD/data.mdb" "$T/newer.mdb"
expect_rc 10 mq-send q x
expect_err_match "store format 5 is newer than this mq understands \(4\); upgrade mq"
expect_rc 10 mq-admin upgrade
expect_err_match "store format 5 is newer than this mq understands"
cmp -s "$OLD/data.mdb" "$T/newer.mdb" || fail "a refused open changed data.mdb"

finish
