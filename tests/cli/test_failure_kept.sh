#!/bin/bash
# The failure is kept with the message (issue 26, item 5): a rollback records why in the
# message (last_failure, last_exit_status or last_signal, the last 2 KiB of the command's
# stderr in last_stderr, last_failure_time), shown by --json, --columns and --template, kept
# when the message moves to the poison subqueue or a dead-letter queue and through export
# and import; the command's stderr still reaches ours. nack, an expired lease and a killed
# receiver record that instead.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

fields() { mq-peek "$1" --json | jq -c "$2"; }

# 1. An exit status, with stderr passed on and kept.
expect_rc 0 mq-admin create q --max-retries 2
expect_rc 0 mq-send q one
t0=$(date +%s)
expect_rc 8 mq-receive q --exec sh -c 'echo "cannot parse line 7" >&2; exit 3'
grep -qx 'cannot parse line 7' "$T/err" || fail "the command's stderr did not reach ours: $(cat "$T/err")"
[ "$(fields q '[.last_failure, .last_exit_status, .last_signal, .last_stderr]')" = \
  '["exited with status 3",3,null,"cannot parse line 7\n"]' ] ||
  fail "after exit 3: $(fields q '[.last_failure, .last_exit_status, .last_signal, .last_stderr]')"
ft=$(date -d "$(fields q .last_failure_time | tr -d '"')" +%s)
((ft >= t0 && ft <= t0 + 5)) || fail "last_failure_time $ft, the failure was at $t0"
[ "$(mq-peek q --columns lookup_id,last_exit_status,last_failure)" = \
  "$(printf '1\t3\texited with status 3')" ] || fail "--columns: $(mq-peek q --columns lookup_id,last_exit_status,last_failure)"

# 2. Killed by SIGKILL: the signal, and the stderr written before; then the poison subqueue
# keeps the record.
expect_rc 8 mq-receive q --exec sh -c 'printf "half done" >&2; kill -KILL $$'
[ "$(fields 'q;poison' '[.last_failure, .last_exit_status, .last_signal, .last_stderr]')" = \
  '["was killed by signal 9 (Killed)",null,9,"half done"]' ] ||
  fail "in q;poison: $(mq-peek 'q;poison' --json)"
[ "$(mq-peek 'q;poison' --template '{last_signal}:{last_stderr}')" = '9:half done' ] ||
  fail "--template: $(mq-peek 'q;poison' --template '{last_signal}:{last_stderr}')"

# 3. Only the last 2 KiB of a long stderr, from a whole character; bytes that are not UTF-8
# become U+FFFD.
expect_rc 0 mq-send q two
expect_rc 8 mq-receive q --exec sh -c \
  'head -c 5000 /dev/zero | tr "\0" x >&2; printf "\303\251\377end" >&2; exit 1'
tail=$(fields q .last_stderr | jq -r .)
[ "${#tail}" -le 2048 ] && [ "${#tail}" -ge 2040 ] || fail "last_stderr holds ${#tail} characters"
[ "${tail: -6}" = "xé�end" ] || fail "last_stderr ends '${tail: -6}'"
expect_rc 0 mq-receive q --exec true

# 4. A dead-letter queue keeps it too, and export and import carry it.
expect_rc 0 mq-admin create d --max-retries 1 --poison deadletter
expect_rc 0 mq-send d three
expect_rc 8 mq-receive d --exec sh -c 'echo no >&2; exit 2'
[ "$(fields 'system;deadletter' '[.last_exit_status, .last_stderr]')" = '[2,"no\n"]' ] ||
  fail "in system;deadletter: $(mq-peek 'system;deadletter' --json)"
mq-admin export -q 'system;deadletter' >"$T/dl.json"
mq-admin -s "$T/other" init >/dev/null
mq-admin -s "$T/other" import -q back --create <"$T/dl.json" || fail "import failed"
[ "$(MQ_STORE=$T/other fields back '[.last_failure, .last_exit_status, .last_stderr]')" = \
  '["exited with status 2",2,"no\n"]' ] || fail "after export and import: $(mq-peek -s "$T/other" back --json)"

# 5. nack, an expired lease, a receiver killed while its command ran.
expect_rc 0 mq-admin create n
expect_rc 0 mq-send n four
tok=$(mq-receive n --lease 1m 2>&1 >/dev/null)
expect_rc 0 mq-admin nack "$tok"
[ "$(fields n '[.last_failure, .last_exit_status, .last_signal, .last_stderr]')" = \
  '["nack",null,null,null]' ] || fail "after nack: $(mq-peek n --json)"
tok=$(mq-receive n --lease 200ms 2>&1 >/dev/null)
sleep 0.4
[ "$(fields n .last_failure)" = '"lease expired"' ] || fail "after the lease ran out: $(mq-peek n --json)"
kill_holder n
expect_rc 0 mq-admin sweep
[ "$(fields n '[.last_failure, .abort_count]')" = '["receiver died",3]' ] ||
  fail "after the receiver was killed: $(mq-peek n --json)"
expect_rc 0 mq-admin check
finish
