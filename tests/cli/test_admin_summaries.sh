#!/bin/bash
# Long mq-admin operations say what they did (issue 15, section 2): purge, export, import,
# backup and compact print one summary line on stderr (counts, bytes, seconds); on a terminal,
# an operation that runs over a second also draws a progress line; --quiet silences both, after
# the command or before it (a common option, as --store). One message is "1 message".
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
seq 1000 | mq-send -l q
expect_rc 0 mq-admin export q
cp "$T/out" "$T/q.json"
expect_err_match '^mq-admin: q: exported 1000 messages, 2\.8 KiB of bodies in [0-9]+\.[0-9]{2} s$'
# (The purge comes before the import: an import followed by a purge of what it imported
# leaves a data.mdb that the damage check of issue 12 takes for truncated; reported.)
expect_rc 0 mq-admin purge q
expect_err_match '^mq-admin: q: purged 1000 messages, [0-9.]+ KiB in [0-9]+\.[0-9]{2} s$'
expect_rc 0 mq-admin create r
run mq-admin import r --new-ids <"$T/q.json"
[ "$RC" = 0 ] || fail "import exited $RC"
expect_err_match '^mq-admin: r: imported 1000 messages, 2\.8 KiB of bodies in [0-9]+\.[0-9]{2} s$'
expect_rc 0 mq-admin backup "$T/b"
expect_err_match "^mq-admin: $T/b: backup of .* written, data.mdb [0-9.]+ (KiB|MiB) in [0-9]+\.[0-9]{2} s\$"
expect_rc 0 mq-admin compact
expect_err_match '^mq-admin: .*: compacted: data.mdb [0-9]+ -> [0-9]+ bytes in [0-9]+\.[0-9]{2} s$'
for c in "export r" "purge r" "backup $T/b2" "compact"; do
  expect_rc 0 mq-admin $c --quiet
  [ -s "$T/err" ] && fail "$c --quiet printed: $(cat "$T/err")"
done
run mq-admin import q -q --new-ids <"$T/q.json"
[ -s "$T/err" ] && fail "import -q printed: $(cat "$T/err")"
for c in "export r" "purge r" "backup $T/b3" "compact"; do
  for q in -q --quiet "-s $STORE -q" "-q -s $STORE"; do
    expect_rc 0 mq-admin $q $c
    [ -s "$T/err" ] && fail "mq-admin $q $c printed: $(cat "$T/err")"
    rm -rf "$T/b3"
  done
done
run mq-admin --quiet import q --new-ids <"$T/q.json"
[ "$RC" = 0 ] && [ ! -s "$T/err" ] || fail "mq-admin --quiet import: exit $RC, $(cat "$T/err")"
# Other commands take it too, as they take --store, and say what they always say.
expect_rc 0 mq-admin -q list
expect_out $'q\nr\nsystem;deadletter\nsystem;deadxact\nsystem;journal\n'

# Singular for one message.
expect_rc 0 mq-admin create one
expect_rc 0 mq-send one x
expect_rc 0 mq-admin export one
cp "$T/out" "$T/one.json"
expect_err_match '^mq-admin: one: exported 1 message, 1 byte of bodies in [0-9]+\.[0-9]{2} s$'
expect_rc 0 mq-admin purge one
expect_err_match '^mq-admin: one: purged 1 message, [0-9.]+ (bytes|KiB) in [0-9]+\.[0-9]{2} s$'
run mq-admin import one <"$T/one.json"
expect_err_match '^mq-admin: one: imported 1 message, 1 byte of bodies in [0-9]+\.[0-9]{2} s$'
expect_rc 0 mq-admin purge one
expect_rc 0 mq-admin purge one
expect_err_match '^mq-admin: one: purged 0 messages, 0 bytes in [0-9]+\.[0-9]{2} s$'

# A progress line on a terminal: compact waits for a reader that holds the store for ~3 s.
# The reader is waiting (stat counts it) before compact starts, not just started 0.3 s before:
# else a slow start (the sanitizers, a loaded machine) leaves compact nothing to wait for. The
# progress line comes after 1 s: compact --quiet is checked to have taken that long.
ms() { date +%s%3N; }
waiting() { [ "$(mq-admin stat w --json | jq .waiting)" = 1 ]; }
if command -v script >/dev/null 2>&1; then
  expect_rc 0 mq-admin create w
  mq-receive w -w 3s -l >/dev/null 2>&1 &
  until_true 10 waiting || fail "the reader never waited on w"
  script -qec "mq-admin compact --wait 20s" /dev/null >"$T/tty" 2>&1
  grep -q 'mq-admin: compact: [0-9]* s\.\.\.' "$T/tty" || fail "no progress line on a terminal: $(cat -v "$T/tty")"
  grep -q 'compacted: data.mdb' "$T/tty" || fail "no summary on a terminal: $(cat -v "$T/tty")"
  wait
  mq-receive w -w 3s -l >/dev/null 2>&1 &
  until_true 10 waiting || fail "the reader never waited on w (--quiet)"
  t0=$(ms)
  script -qec "mq-admin compact --wait 20s --quiet" /dev/null >"$T/tty" 2>&1
  t1=$(ms)
  ((t1 - t0 > 1000)) ||
    fail "compact --quiet ended after $((t1 - t0)) ms, before a progress line would show"
  [ -s "$T/tty" ] && fail "--quiet on a terminal printed: $(cat -v "$T/tty")"
  wait
else
  echo "note: script(1) not installed; the terminal progress line is not checked" >&2
fi
finish
