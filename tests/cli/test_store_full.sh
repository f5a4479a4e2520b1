#!/bin/bash
# A full file system: the send that does not fit exits 6 (MQ_ERROR_INSUFFICIENT_RESOURCES)
# with one line on stderr, and every message whose send exited 0 is still there, intact.
# Runs in a private mount namespace on a 2 MiB tmpfs (needs root; skipped otherwise).
if [ "${1:-}" != inner ]; then
  if ! unshare -m true 2>/dev/null; then
    echo "skipped: unshare -m is not permitted here (needs root or user namespaces)"
    exit 77
  fi
  exec unshare -m bash "$0" inner
fi
. "$(dirname "$0")/lib.sh"
mkdir "$T/disk"
if ! mount -t tmpfs -o size=2m none "$T/disk" 2>"$T/mount.err"; then
  skip "cannot mount a tmpfs: $(cat "$T/mount.err")"
fi
trap 'umount "$T/disk" 2>/dev/null; rm -rf "$T"' EXIT
export MQ_STORE=$T/disk/store

count() { mq-admin stat "$1" --json | jq -r .messages; }

expect_rc 0 mq-admin create q
pad=$(head -c 20000 /dev/zero | tr '\0' x)
sent=0
for i in $(seq 1 500); do
  run mq-send q < <(printf '%s %s' "$i" "$pad")
  [ "$RC" = 0 ] || break
  sent=$i
done
[ "$RC" = 6 ] || fail "the send that did not fit exited $RC, not 6; stderr: $(cat "$T/err")"
expect_err_match '^mq-send: .*MQ_ERROR_INSUFFICIENT_RESOURCES'
[ "$sent" -gt 10 ] || fail "only $sent sends fit in 2 MiB"
[ "$(count q)" = "$sent" ] || fail "after a full disk: count $(count q), successful sends $sent"
expect_rc 0 mq-admin check
# Every acknowledged message, intact and in order.
mq-peek q --all --template '{body}\n' >"$T/got"
for i in $(seq 1 "$sent"); do echo "$i $pad"; done | cmp -s - "$T/got" ||
  fail "the messages on the full disk are not the $sent that were sent"
# Still full: refused again the same way, nothing changes.
expect_rc 6 mq-send q < <(printf 'again %s' "$pad")
expect_err_match 'MQ_ERROR_INSUFFICIENT_RESOURCES'
# A batch that does not fit: 6, and the count says how much of it arrived (nothing torn).
run mq-send -l q < <(for i in $(seq 1 50); do echo "batch $i $pad"; done)
[ "$RC" = 6 ] || fail "a -l batch on a full disk exited $RC, not 6"
n=$(count q)
mq-peek q --all --template '{body}\n' | grep -c '' | grep -qx "$n" || fail "stat and peek disagree after a failed batch"
expect_rc 0 mq-admin check
expect_out ''

finish
