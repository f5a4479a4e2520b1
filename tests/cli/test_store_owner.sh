#!/bin/bash
# Issue 12: root working in a user's store never locks the owner out: everything a tool run
# as root creates there (lock.mdb, doorbells, lease and cursor lock files, the lock and
# doorbell directories) is given to the store's owner and group.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  skip "needs root and setpriv to act as another user"
fi
chmod 755 "$T"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env PATH="$PATH" "$@"; }
if ! as_nobody mq-send --version >/dev/null 2>&1; then
  skip "user nobody cannot run the tools in $MQ_BIN (a parent directory is private)"
fi
U=$T/user-store
mkdir "$U" && chown 65534:65534 "$U" && chmod 700 "$U"
expect_rc 0 as_nobody mq-admin -s "$U" init
expect_rc 0 as_nobody mq-send -s "$U" --create q first
# Root works in it: a lock.mdb of its own, doorbells, a lease, a cursor, a wait.
rm -f "$U/lock.mdb"
rm -rf "$U/notify" "$U/locks"
expect_rc 0 mq-admin -s "$U" stat
expect_rc 0 mq-send -s "$U" q second
expect_rc 0 mq-receive -s "$U" q --exec true
expect_rc 0 mq-peek -s "$U" q --cursor c --first
expect_rc 0 mq-admin -s "$U" create w
expect_rc 1 mq-receive -s "$U" w --wait 100ms
left=$(find "$U" ! -uid 65534 -printf '%u %p\n')
[ -z "$left" ] || fail "files root made in the user's store are not the user's: $left"
# The owner still uses every tool.
expect_rc 0 as_nobody mq-receive -s "$U" q
expect_out second
expect_rc 0 as_nobody mq-send -s "$U" w hello
expect_rc 0 as_nobody mq-receive -s "$U" w --exec true
expect_rc 0 as_nobody mq-send -s "$U" q third
expect_rc 0 as_nobody mq-peek -s "$U" q --cursor c --first
expect_rc 1 as_nobody mq-receive -s "$U" w --wait 100ms
expect_rc 0 as_nobody mq-admin -s "$U" check

finish
