#!/bin/bash
# Issue 25: store format 2 (native message ids) and mq-admin upgrade. A store made now is of
# format 2, and its messages' ids need no index entry; a store of format 1 (made by an older
# mq: rebuilt here with LMDB's own dump and load) works as it is, says so in stat, and
# mq-admin upgrade brings it to format 2 only while no other process has it open, keeping
# every message findable by its id.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

by_id_entries() { mdb_stat -s by_id "$1" | awk '/Entries:/ { print $2 }'; }

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

# A new store: format 2, native ids (no by_id entry), and nothing for upgrade to do.
expect_rc 0 mq-admin create q
printf '%s\n' one two three | mq-send -l q
[ "$(by_id_entries "$STORE")" = 0 ] || fail "a format 2 store indexed $(by_id_entries "$STORE") native ids"
expect_rc 0 mq-admin stat
grep -q "^store $STORE: .*, format 2$" "$T/out" || fail "stat's store line: $(tail -n1 "$T/out")"
expect_rc 0 mq-admin stat q --json
[ "$(jq .store_format "$T/out")" = 2 ] || fail "stat --json store_format: $(cat "$T/out")"
expect_rc 0 mq-admin upgrade
expect_err_match "already format 2: nothing to do"
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
expect_err_match "upgraded: format 1 -> 2 \(5 queues\)"
expect_rc 0 mq-admin stat q --json
[ "$(jq .store_format "$T/out")" = 2 ] || fail "upgrade left format $(jq .store_format "$T/out")"
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

# A store of a format newer than this mq's is refused, clearly, and left alone.
set_format "$OLD" 00000003
cp "$OLD/data.mdb" "$T/newer.mdb"
expect_rc 10 mq-send q x
expect_err_match "store format 3 is newer than this mq understands \(2\); upgrade mq"
expect_rc 10 mq-admin upgrade
expect_err_match "store format 3 is newer than this mq understands"
cmp -s "$OLD/data.mdb" "$T/newer.mdb" || fail "a refused open changed data.mdb"

finish
