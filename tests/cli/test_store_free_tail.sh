#!/bin/bash
# A transaction can take pages from the end of data.mdb and give some back before its commit:
# LMDB never writes those, so the file ends before the last page its meta page counts. Such a
# store is sound (the missing pages are free) and must open; a file cut short where pages are
# in use is damaged (exit 10). Seen after an import and a purge: every tool then said
# "data.mdb is truncated".
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
seq -f 'message %g with a body long enough to fill some pages' 3000 | mq-send -l q
expect_rc 0 mq-admin export q
cp "$T/out" "$T/export"
short=0
for round in 1 2 3 4 5 6; do
  expect_rc 0 mq-admin import r --create --new-ids <"$T/export"
  expect_rc 0 mq-admin purge r
  for cmd in "mq-admin check" "mq-peek q" "mq-send q x" "mq-receive q"; do
    run $cmd
    [ "$RC" = 0 ] || fail "round $round: '$cmd' exited $RC after import and purge: $(head -c 300 "$T/err")"
  done
done
expect_rc 0 mq-admin check
expect_out ""

# Cut short where pages are in use (a store whose last pages hold messages): damaged, never a
# signal. (Cutting the store above would only remove free pages: sound.)
S2=$T/s2
seq 3000 | mq-send -s "$S2" --create -l q
truncate -s -8192 "$S2/data.mdb"
run mq-peek -s "$S2" q
[ "$RC" = 10 ] || fail "a data.mdb cut short opened: exit $RC: $(head -c 200 "$T/err")"
grep -q 'truncated' "$T/err" || fail "a data.mdb cut short: '$(cat "$T/err")'"
finish
