#!/bin/bash
# mq-admin create --exist-ok (issue 15, section 2), as mkdir -p: an existing queue is success
# when every option given matches its setting; an option that differs is MQ_ERROR_QUEUE_EXISTS
# (exit 5) naming the setting, and changes nothing; options not given are not compared.
. "$(dirname "$0")/lib.sh"

# A missing queue is created, with the settings given.
expect_rc 0 mq-admin create --exist-ok --max-retries 3 --label 'image jobs' --quota 1M \
  --dedup-window 1m30s --retry-delay 1.5s --journal --poison deadletter jobs
# settings: the JSON line of queue jobs in mq-admin list.
settings() { mq-admin list --json | grep '"queue":"jobs"'; }
settings | grep -q '"max_retries":3,"poison":"deadletter","dedup_window_ms":90000,"retry_delay_ms":1500' ||
  fail "created without the settings given: $(settings)"
before=$(settings)
# Again, the same: exit 0, silent, nothing changed.
expect_rc 0 mq-admin create --exist-ok --max-retries 3 --label 'image jobs' --quota 1024K \
  --dedup-window 90s --retry-delay 1500ms --journal --poison deadletter jobs
[ -s "$T/out" ] || [ -s "$T/err" ] && fail "create --exist-ok printed: $(cat "$T/out" "$T/err")"
# Options not given are not compared.
expect_rc 0 mq-admin create --exist-ok jobs
expect_rc 0 mq-admin create jobs --exist-ok --quota 1M
# Without --exist-ok it still exits 5.
expect_rc 5 mq-admin create jobs
expect_err_match '^mq-admin: jobs: queue already exists \(MQ_ERROR_QUEUE_EXISTS 0xC00E0005\)$'

# An option that differs: exit 5, naming it with both values; nothing changes.
[ "$(settings)" = "$before" ] || fail "create --exist-ok changed the queue: $before -> $(settings)"
expect_rc 0 mq-send jobs kept
before=$(settings)
expect_rc 5 mq-admin create --exist-ok --max-retries 9 jobs
expect_err_match '^mq-admin: jobs: queue exists with other settings: max-retries 3, not 9 \(MQ_ERROR_QUEUE_EXISTS 0xC00E0005\)$'
expect_rc 5 mq-admin create --exist-ok --quota 2M --retry-delay 2s --label x jobs
expect_err_match "label 'image jobs', not 'x'; quota 1048576, not 2097152; retry-delay 1500ms, not 2s"
expect_rc 5 mq-admin create --exist-ok --transactional jobs
expect_err_match 'transactional off, not on \(fixed at creation\)'
expect_rc 5 mq-admin create --exist-ok --retention on --poison subqueue jobs
expect_err_match 'poison deadletter, not subqueue; retention off, not on'
[ "$(settings)" = "$before" ] || fail "create --exist-ok changed the queue: $before -> $(settings)"
expect_rc 0 mq-receive jobs
expect_out 'kept'

# A transactional queue: --transactional matches; no --transactional is not compared.
expect_rc 0 mq-admin create --exist-ok --transactional tx
expect_rc 0 mq-admin create --exist-ok --transactional tx
expect_rc 0 mq-admin create --exist-ok tx

# Still only plain names, and still a usage error for a bad option value.
expect_rc 2 mq-admin create --exist-ok 'jobs;poison'
expect_rc 2 mq-admin create --exist-ok --quota lots jobs

# Scripts racing to set up the same queue all succeed, and it is made once.
for i in 1 2 3 4 5 6 7 8; do
  mq-admin create --exist-ok --max-retries 2 race 2>"$T/race.$i" &
done
rcs=0
for job in $(jobs -p); do wait "$job" || rcs=$((rcs + 1)); done
[ "$rcs" = 0 ] || fail "$rcs of 8 racing create --exist-ok failed: $(cat "$T"/race.*)"
expect_rc 0 mq-admin list
[ "$(grep -cx race "$T/out")" = 1 ] || fail "list after the race: $(cat "$T/out")"
finish
