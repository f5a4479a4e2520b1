#!/bin/bash
# Issue 12: a planted, foreign or missing file never hijacks a file, crashes a tool or silently
# empties the store: symbolic links and hard links are refused with exit 10 naming the file,
# nothing outside the store is written, a missing or empty data.mdb of a store is damage (not
# a new store), and a file-size limit is a clean exit 6.
. "$(dirname "$0")/lib.sh"

fresh() {  # fresh DIR: a store with queue q holding 3 messages
  rm -rf "$1"
  mq-admin -s "$1" init >/dev/null && mq-admin -s "$1" create q >/dev/null &&
    printf '1\n2\n3\n' | mq-send -s "$1" -l q || fail "cannot make a store in $1"
}
S=$T/s
printf 'victim\n' >"$T/victim"
chmod 600 "$T/victim"
sum() { md5sum <"$1"; }
v0=$(sum "$T/victim")

# A symlink at lock.mdb: its target is never written.
fresh "$S"
rm "$S/lock.mdb"
ln -s "$T/victim" "$S/lock.mdb"
for cmd in "mq-admin stat" "mq-admin check" "mq-peek q" "mq-send q x" "mq-receive q" "mq-admin list"; do
  expect_rc 10 $cmd -s "$S"
  expect_err_match "lock\\.mdb: is a symbolic link"
done
[ "$(sum "$T/victim")" = "$v0" ] || fail "the target of a lock.mdb symlink was written"

# data.mdb as a symlink to an empty file: that file never becomes a store.
fresh "$S"
: >"$T/empty"
mv "$S/data.mdb" "$T/real.mdb"
ln -s "$T/empty" "$S/data.mdb"
expect_rc 10 mq-admin -s "$S" stat
expect_err_match "data\\.mdb: is a symbolic link"
[ ! -s "$T/empty" ] || fail "an empty file behind a data.mdb symlink was made a store"

# A hard link at data.mdb or lock.mdb.
fresh "$S"
ln "$S/data.mdb" "$T/second-name"
expect_rc 10 mq-peek -s "$S" q
expect_err_match "data\\.mdb: has 2 hard links"
rm "$T/second-name"
expect_rc 0 mq-peek -s "$S" q

# Hard links in notify/ and locks/: never written through, never re-moded.
fresh "$S"
mq-admin -s "$S" create e >/dev/null
mq-send -s "$S" e x && mq-receive -s "$S" e >/dev/null
qid=$(ls "$S/notify" | sort -n | tail -n1)   # e's doorbell, the newest queue's
rm -f "$S/notify/$qid"
ln "$T/victim" "$S/notify/$qid"
expect_rc 0 mq-send -s "$S" e four        # the send itself works; the doorbell is not rung
expect_rc 0 mq-receive -s "$S" e
expect_rc 10 mq-receive -s "$S" e --wait 1s
expect_err_match "notify/$qid: has 2 hard links"
ln "$T/victim" "$S/locks/cursor.$qid.c"
expect_rc 10 mq-peek -s "$S" e --cursor c --first
expect_err_match "locks/cursor\\.$qid\\.c: has 3 hard links"
[ "$(sum "$T/victim")" = "$v0" ] || fail "a hard-linked file in notify/ or locks/ was written through"
[ "$(stat -c %a "$T/victim")" = 600 ] || fail "a hard-linked file was re-moded to $(stat -c %a "$T/victim")"

# A missing or empty data.mdb of a store is damage: nothing is made in its place.
fresh "$S"
: >"$S/data.mdb"
for cmd in "mq-admin check" "mq-admin list" "mq-send q x" "mq-peek q"; do
  expect_rc 10 $cmd -s "$S"
  expect_err_match "data\\.mdb is empty, but this directory holds an mq store"
done
[ ! -s "$S/data.mdb" ] || fail "an empty data.mdb was made a new store"
rm "$S/data.mdb"
expect_rc 10 mq-admin -s "$S" list
expect_err_match "data\\.mdb is missing"
[ ! -e "$S/data.mdb" ] || fail "a missing data.mdb was made a new store"

# Truncated: never a signal.
fresh "$S"
seq 2000 | mq-send -s "$S" -l q
for size in 8192 -4096; do
  cp -a "$S" "$T/t"
  truncate -s "$size" "$T/t/data.mdb"
  for cmd in "mq-admin check" "mq-admin stat" "mq-peek q" "mq-send q x" "mq-receive q" "mq-watch q -t 0"; do
    run $cmd -s "$T/t"
    [ "$RC" = 10 ] || fail "'$cmd' on data.mdb truncated by $size exited $RC: $(head -c 200 "$T/err")"
  done
  rm -rf "$T/t"
done

# A file-size limit (ulimit -f): exit 6, nothing written.
fresh "$S"
before=$(mq-admin -s "$S" stat q --json | jq -r .messages)
head -c 300000 /dev/urandom | base64 -w 1000 >"$T/bulk"
( ulimit -f 200; mq-send -s "$S" -l q <"$T/bulk" ) 2>"$T/err"
rc=$?
[ "$rc" = 6 ] || fail "a send past the file-size limit exited $rc: $(cat "$T/err")"
grep -q "nothing was written" "$T/err" || fail "file-size limit: stderr '$(cat "$T/err")'"
[ "$(mq-admin -s "$S" stat q --json | jq -r .messages)" = "$before" ] ||
  fail "a send past the file-size limit changed the queue"
expect_rc 0 mq-admin -s "$S" check

finish
