#!/bin/bash
# Stores that cannot be used: a non-empty directory that is not a store (3, untouched), a plain
# file (3), a foreign LMDB environment (10), and a store of a newer format (10, "upgrade").
. "$(dirname "$0")/lib.sh"

# A directory with other files in it is not turned into a store, not even by init/--create.
mkdir "$T/docs"
echo notes >"$T/docs/readme.txt"
for cmd in "mq-admin -s $T/docs init" "mq-send -s $T/docs --create q x" "mq-peek -s $T/docs q" \
           "mq-admin -s $T/docs list"; do
  expect_rc 3 $cmd
  expect_err_match "docs: .*(not an mq store|store not found)"
done
run ls -A "$T/docs"
expect_out $'readme.txt\n'

# The default store location, occupied by something else, is refused the same way.
mkdir "$T/other"
echo x >"$T/other/file"
MQ_STORE=$T/other expect_rc 3 mq-send --create q x
run ls -A "$T/other"
expect_out $'file\n'

# A plain file where the store should be.
echo x >"$T/plain"
expect_rc 3 mq-admin -s "$T/plain" init
expect_err_match 'plain: .*not a store directory'
expect_rc 3 mq-peek -s "$T/plain" q
expect_err_match 'plain: '

# A foreign LMDB environment (data.mdb of some other program): 10, and it is left alone.
mkdir "$T/foreign"
printf 'somekey\nsomevalue\n' | mdb_load -T "$T/foreign" || fail "mdb_load could not make a foreign LMDB"
chmod 600 "$T/foreign"/*.mdb
cp "$T/foreign/data.mdb" "$T/foreign.before"
for cmd in "mq-peek q" "mq-receive q" "mq-send --create q x" "mq-admin init" "mq-admin list" \
           "mq-admin check"; do
  expect_rc 10 ${cmd/ / -s $T/foreign }
  expect_err_match 'foreign: .*not an mq store'
done
cmp -s "$T/foreign/data.mdb" "$T/foreign.before" || fail "the foreign data.mdb was changed"
run ls -A "$T/foreign"
expect_out $'data.mdb\nlock.mdb\n'
run mdb_dump -p "$T/foreign"
grep -q somevalue "$T/out" || fail "the foreign record is gone"

# A store of a newer format: refused with advice to upgrade, every tool, nothing changed.
expect_rc 0 mq-send --create q kept
printf 'format\n\\00\\00\\00\\05\n' | mdb_load -T -s meta "$STORE" || fail "cannot forge the format record"
for cmd in "mq-peek q" "mq-receive q" "mq-send q x" "mq-admin list" "mq-admin check" "mq-admin init"; do
  expect_rc 10 $cmd
  expect_err_match 'store: .*format 5 .*upgrade'
done
# Put the format back: the message is still there, the store is whole.
printf 'format\n\\00\\00\\00\\04\n' | mdb_load -T -s meta "$STORE"
expect_rc 0 mq-peek --all -l q
expect_out $'kept\n'
expect_rc 0 mq-admin check

finish
