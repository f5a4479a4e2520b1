#!/bin/bash
# A store made by init belongs to the account that made it, or to the --owner it names
# (issue 23, defect 6): root's init in an empty directory another user made (under a sticky
# /tmp) is refused, exit 4, and leaves the directory as it was, so that user cannot read what
# root sends; --owner naming that user makes the store theirs on purpose; --owner of someone
# else than the directory's owner is refused (exit 2); a new directory made with --owner
# belongs to that user; only root may name another owner.
. "$(dirname "$0")/lib.sh"

need_nobody
NOBODY=$(getent passwd 65534 | cut -d: -f1)

mkdir -m 1777 "$T/sh"
as_nobody mkdir -m 777 "$T/sh/v"
expect_rc 4 mq-admin -s "$T/sh/v" init
expect_err_match "^mq-admin: $T/sh/v: the directory belongs to uid 65534 \($NOBODY\), not to you: .*--owner.*MQ_ERROR_ACCESS_DENIED"
[ -z "$(ls -A "$T/sh/v")" ] || fail "the refused init left files: $(ls -A "$T/sh/v")"
[ "$(stat -c %a "$T/sh/v")" = 777 ] || fail "the refused init changed the directory's mode"
# Nothing root sends can reach nobody through it.
expect_rc 4 mq-send -s "$T/sh/v" --create q secret
# Named on purpose: the store is nobody's.
expect_rc 0 mq-admin -s "$T/sh/v" init --owner "$NOBODY"
[ "$(stat -c %u "$T/sh/v/data.mdb")" = 65534 ] || fail "data.mdb is not nobody's"
expect_rc 0 as_nobody mq-admin -s "$T/sh/v" stat
# --owner someone else than the directory's owner.
mkdir "$T/mine"
expect_rc 2 mq-admin -s "$T/mine" init --owner "$NOBODY"
expect_err_match "--owner $NOBODY, but the directory belongs to uid 0"
# A new directory made for nobody.
expect_rc 0 mq-admin -s "$T/new" init --owner "$NOBODY"
[ "$(stat -c '%u %a' "$T/new")" = "65534 700" ] || fail "the new store: $(stat -c '%u %a' "$T/new")"
expect_rc 0 as_nobody mq-send -s "$T/new" --create q hello
expect_rc 0 mq-admin -s "$T/new" check
# Only root names another owner; a user's own name is fine.
expect_rc 4 as_nobody mq-admin -s "$T/sh/x" init --owner root
expect_err_match 'only root may make a store for another account'
expect_rc 2 mq-admin -s "$T/y" init --owner no-such-user-here
finish
