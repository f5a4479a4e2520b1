#!/bin/bash
# Access control by file permissions: another user gets 4 (MQ_ERROR_ACCESS_DENIED) from a
# private store, and a group store (init --group) is shared by the members of the group.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  skip "needs root and setpriv to act as another user"
fi
chmod 755 "$T"
if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$T"; then
  skip "user nobody cannot reach $T (a parent directory is private); set TMPDIR"
fi
# as_nobody / as_member CMD...: CMD as user nobody, outside or inside group users.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env PATH="$PATH" MQ_STORE="$MQ_STORE" "$@"; }
as_member() { setpriv --reuid=65534 --regid=65534 --groups="$USERS_GID" env PATH="$PATH" "$@"; }
if ! as_nobody mq-send --version >/dev/null 2>&1; then
  skip "user nobody cannot run the tools in $MQ_BIN (a parent directory is private)"
fi

# A private store (0700, root's): nobody may not use it, and is told so, in one line.
expect_rc 0 mq-send --create q secret
for tool in "mq-peek q" "mq-receive q" "mq-send q x" "mq-admin list" "mq-admin stat" \
            "mq-admin create other" "mq-admin init"; do
  expect_rc 4 as_nobody $tool
  expect_err_match "^mq-[a-z]+: ${STORE}[/a-z.]*: .*MQ_ERROR_ACCESS_DENIED"
done
expect_rc 0 mq-receive q
expect_out secret

# Even with the directory open to all, the 0600 files keep others out.
chmod 755 "$STORE"
expect_rc 4 as_nobody mq-peek q
expect_err_match "$STORE(/(data|lock)\\.mdb)?: .*MQ_ERROR_ACCESS_DENIED"
chmod 700 "$STORE"

# A group store: setgid 2770 directory, 0660 files, owned by the group.
USERS_GID=$(getent group users | cut -d: -f3)
if [ -z "$USERS_GID" ]; then
  echo "no group 'users': group store checks skipped"
  finish
fi
G=$T/shared
expect_rc 0 mq-admin -s "$G" init --group users
run stat -c '%a %g' "$G" "$G/data.mdb" "$G/lock.mdb"
expect_out "2770 $USERS_GID
660 $USERS_GID
660 $USERS_GID
"
# A member sends (creating the queue) and receives; root sends too; the member receives that.
expect_rc 0 as_member mq-send -s "$G" --create jobs from-member
expect_rc 0 mq-send -s "$G" jobs from-root
expect_rc 0 as_member mq-receive -s "$G" -n 2 -l jobs
expect_out $'from-member\nfrom-root\n'
expect_rc 0 as_member mq-admin -s "$G" check
# Every file any of them made in the store stays usable by the whole group.
bad=$(find "$G" -type f ! -perm -0660 -printf '%m %p\n')
[ -z "$bad" ] || fail "group store files not group read/write: $bad"
bad=$(find "$G" -type d ! -perm -2770 -printf '%m %p\n')
[ -z "$bad" ] || fail "group store directories not setgid 2770: $bad"
bad=$(find "$G" ! -gid "$USERS_GID" -printf '%g %p\n')
[ -z "$bad" ] || fail "group store entries not owned by group users: $bad"
# Someone outside the group: 4.
expect_rc 4 as_nobody mq-peek -s "$G" jobs
expect_err_match "MQ_ERROR_ACCESS_DENIED"

finish
