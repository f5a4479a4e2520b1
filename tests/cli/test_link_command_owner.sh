#!/bin/bash
# A group member cannot make another account run a command (issue 23, defect 1): a link's
# --via is code that whoever runs `mq-admin forward` executes (a service, root perhaps), so
# only the store's owner (or root) may set it (link add, link set --via), and forward refuses
# to run a command last set by anyone but the account running it or the store's owner. A
# member may still send through the link and set what is not code (--return).
. "$(dirname "$0")/lib.sh"

need_nobody
USERS_GID=$(getent group users | cut -d: -f3)
[ -n "$USERS_GID" ] || skip "no group 'users'"
as_member() { setpriv --reuid=65534 --regid=65534 --groups="$USERS_GID" env PATH="$PATH" "$@"; }

B=$T/B
expect_rc 0 mq-admin -s "$B" init --group users
expect_rc 0 mq-admin -s "$B" create q

# --- a group store of root's: a member may not set the command -----------------------------------
G=$T/G
expect_rc 0 mq-admin -s "$G" init --group users
expect_rc 0 mq-admin -s "$G" link add far --via "mq-admin --store '$B' accept"
expect_rc 4 as_member mq-admin -s "$G" link set far --via "id > '$T/pwned'"
expect_err_match "^mq-admin: far: .*only the store's owner \(uid 0\) may set it.*MQ_ERROR_ACCESS_DENIED"
expect_rc 4 as_member mq-admin -s "$G" link add other --via "id > '$T/pwned'"
expect_err_match 'MQ_ERROR_ACCESS_DENIED'
expect_rc 0 mq-admin -s "$G" link stat far --json
[ "$(jq -r '[.via, .via_uid] | join(" ")' "$T/out")" = "mq-admin --store '$B' accept 0" ] ||
  fail "the member changed the command: $(cat "$T/out")"
# What is not code is a member's to set, and sending is.
expect_rc 0 as_member mq-admin -s "$G" link set far --return back
expect_rc 0 as_member mq-send -s "$G" far:q x
expect_rc 0 mq-admin -s "$G" forward far --once
[ ! -e "$T/pwned" ] || fail "a member's command ran: $(cat "$T/pwned")"
expect_rc 0 mq-receive -s "$B" q
expect_out x

# --- forward runs only a command set by its own account or the store's owner ---------------------
# A group store owned by nobody, whose link command root set: nobody's forward refuses it.
M=$T/M
expect_rc 0 mq-admin -s "$M" init --group users
chown -R 65534 "$M"
expect_rc 0 mq-admin -s "$M" link add far --via "id > '$T/pwned'; exec mq-admin --store '$B' accept"
expect_rc 0 as_member mq-send -s "$M" far:q y
expect_rc 4 as_member mq-admin -s "$M" forward far --once
expect_err_match "^mq-admin: far: the link's command was last set by uid 0, neither this account \(uid 65534\) nor the store's owner \(uid 65534\).*MQ_ERROR_ACCESS_DENIED"
[ ! -e "$T/pwned" ] || fail "forward ran a command another account set: $(cat "$T/pwned")"
# Set again by the owner, it runs.
expect_rc 0 as_member mq-admin -s "$M" link set far --via "exec mq-admin --store '$B' accept"
expect_rc 0 as_member mq-admin -s "$M" forward far --once
expect_rc 0 mq-receive -s "$B" q
expect_out y

expect_rc 0 mq-admin -s "$G" check
expect_rc 0 mq-admin -s "$M" check
finish
