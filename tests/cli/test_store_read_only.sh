#!/bin/bash
# A store that cannot be written can still be looked at (issue 25, trap 4): on a read-only
# mount mq-peek, mq-admin stat, list, check, export and backup open it read-only (LMDB's
# MDB_RDONLY) and say so once; writing tools keep the clear "need rwx" error, and a wait,
# which needs the doorbell, is refused. Without write permission (another account's store)
# the same, and without a writable lock file too the note says that no reader lock is held.
# The read-only mount is made in a private mount namespace (unshare -m), gone with the test.
if [ -z "${MQ_RO_NS:-}" ] && [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  MQ_RO_NS=1 exec unshare -m bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/src" "$T/ro"
export MQ_STORE=$T/src/s
expect_rc 0 mq-admin init
expect_rc 0 mq-admin create q
expect_rc 0 mq-send q one
expect_rc 0 mq-send q two
sum_before=$(md5sum <"$T/src/s/data.mdb")

if [ -n "${MQ_RO_NS:-}" ] && mount --bind "$T/src" "$T/ro" 2>/dev/null &&
  mount -o remount,bind,ro "$T/ro" 2>/dev/null; then
  trap 'umount "$T/ro"; rm -rf "$T"' EXIT
  export MQ_STORE=$T/ro/s
  note="^mq-[a-z]*: $T/ro/s: note: opened read-only: a read-only file system\$"
  expect_rc 0 mq-peek q --all -l
  expect_out $'one\ntwo\n'
  expect_err_match "$note"
  expect_rc 0 mq-admin stat q --json
  grep -q '"messages":2[,}]' "$T/out" || fail "stat on the read-only store: $(cat "$T/out")"
  expect_err_match "$note"
  expect_rc 0 mq-admin list
  expect_rc 0 mq-admin check
  expect_rc 0 mq-admin export q
  [ "$(grep -c . "$T/out")" = 2 ] || fail "export wrote: $(cat "$T/out")"
  expect_rc 0 mq-admin backup "$T/copy"
  expect_rc 0 mq-peek -s "$T/copy" q --all -l
  expect_out $'one\ntwo\n'
  # Writing tools: the clear error, as before.
  for cmd in "mq-receive q" "mq-send q three" "mq-admin purge q"; do
    expect_rc 4 $cmd
    expect_err_match "permission denied on the store directory \\(need rwx\\): Read-only file system"
  done
  # A wait, or a cursor (a write), fails clearly; nothing hangs.
  expect_rc 4 timeout 10 mq-peek q --id '{00000000-0000-0000-0000-000000000001}\1' -w 1s
  grep -q "cannot wait for messages in a store opened read-only (a read-only file system): use -w 0" "$T/err" ||
    fail "the wait's error: $(cat "$T/err")"
  expect_rc 4 timeout 10 mq-peek q --cursor c --next
  export MQ_STORE=$T/src/s
else
  echo "note: no read-only mount here (needs root and unshare -m): that part is not run"
fi

# Another account's store: readable, not writable.
need_nobody
chmod 755 "$T/src" "$T/src/s"
chmod 644 "$T/src/s/data.mdb" "$T/src/s/lock.mdb" "$T/src/s/mq-store"
expect_rc 0 as_nobody mq-peek q --all -l
expect_out $'one\ntwo\n'
expect_err_match "^mq-peek: $T/src/s: note: opened read-only: no write permission on the store or its lock file, so no reader lock either: a process writing to the store meanwhile could make what is read wrong\$"
expect_rc 4 as_nobody mq-receive q
expect_err_match "need rwx"
chmod 666 "$T/src/s/lock.mdb"
expect_rc 0 as_nobody mq-admin stat q
expect_err_match "^mq-admin: $T/src/s: note: opened read-only: no write permission on the store\$"
# Nothing was written by any of it.
[ "$(md5sum <"$T/src/s/data.mdb")" = "$sum_before" ] || fail "data.mdb changed"
finish
