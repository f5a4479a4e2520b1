#!/bin/bash
# Durations and times as users write them (issue 15, section 2): 1.5s, 1m30s and 5min are
# accepted by every option that takes a duration (mq(7), DURATIONS, SIZES AND TIMES); a bad
# one is named in a one-line usage error (exit 2), after -w/-t too; --at refuses a date that
# does not exist instead of carrying it into the next month.
. "$(dirname "$0")/lib.sh"

iso_ms() { date -d "$1" +%s%3N; }
# field KEY: KEY of the last run's JSON line.
field() { jq -r ".$1" "$T/out"; }
settings() { mq-admin list --json | jq -c "select(.queue == \"$1\") | [.dedup_window_ms, .retry_delay_ms]"; }

# mq-admin create/set: --dedup-window, --retry-delay.
expect_rc 0 mq-admin create q --dedup-window 1m30s --retry-delay 1.5s
[ "$(settings q)" = '[90000,1500]' ] || fail "create with 1m30s and 1.5s: $(settings q)"
expect_rc 0 mq-admin set q --dedup-window 5min --retry-delay 0.25s
[ "$(settings q)" = '[300000,250]' ] || fail "set with 5min and 0.25s: $(settings q)"
expect_rc 0 mq-admin set q --dedup-window 1h30m --retry-delay 10sec
[ "$(settings q)" = '[5400000,10000]' ] || fail "set with 1h30m and 10sec: $(settings q)"
expect_rc 0 mq-admin set q --retry-delay 0

# mq-send --ttbr, --ttrq, --delay: deadlines that far from the send.
expect_rc 0 mq-send q --ttbr 5min --ttrq 1m30s body
expect_rc 0 mq-peek q --json
sent=$(iso_ms "$(field sent_time)")
[ $(($(iso_ms "$(field ttbr)") - sent)) = 300000 ] || fail "--ttbr 5min: $(field ttbr) after $(field sent_time)"
[ $(($(iso_ms "$(field ttrq)") - sent)) = 90000 ] || fail "--ttrq 1m30s: $(field ttrq) after $(field sent_time)"
expect_rc 0 mq-receive q
expect_rc 0 mq-send q --delay 1.5m later
expect_rc 0 mq-admin stat q --json
[ "$(field delayed)" = 1 ] || fail "--delay 1.5m: not delayed: $(cat "$T/out")"

# Waits: -w/--wait and -t/--timeout of the readers and the watcher.
expect_rc 0 mq-admin create e
for t in mq-peek mq-receive; do
  expect_rc 1 $t e -w 0.1s
  expect_err_match 'MQ_ERROR_IO_TIMEOUT'
  expect_rc 1 $t e --wait=0.05s
done
expect_rc 1 mq-watch e -t 0.1s
expect_out $'error e MQ_ERROR_IO_TIMEOUT 0xC00E001B\n'
expect_rc 0 mq-send e now
expect_rc 0 mq-peek e -w 1m30s
expect_out now
# mq-receive --lease, mq-admin nack --delay, mq-admin compact -w.
expect_rc 0 mq-receive e --lease 1m30s
tok=$(cat "$T/err")
expect_rc 0 mq-admin nack --delay 1.5s "$tok"
expect_rc 0 mq-admin compact -w 2.5s

# A bad duration is named, in one line, exit 2, and nothing is done.
expect_rc 0 mq-admin create b
for cmd in "mq-peek b --wait 1x" "mq-peek --wait 1x b" "mq-receive -w x1 b" "mq-watch --wait soon b" \
           "mq-watch b -t 1x" "mq-send b --delay 5mins x" "mq-send b --ttbr 30s1m x" \
           "mq-admin create c --retry-delay 1m30" "mq-admin set b --dedup-window 1.5" \
           "mq-receive b --lease 1m1m" "mq-admin compact -w 2x"; do
  read -ra words <<<"$cmd"
  bad=${words[-1]}
  case $cmd in mq-send*) bad=${words[-2]} ;; "mq-peek --wait"*|"mq-receive -w"*|"mq-watch --wait"*) bad=${words[2]} ;; esac
  expect_rc 2 "${words[@]}"
  expect_err_match "^${words[0]}: ([bc]: )?invalid duration '$bad': "
done
expect_rc 2 mq-send b --delay 0.5ms x
expect_err_match "invalid duration '0.5ms': not a whole number of milliseconds"
count() { mq-admin stat "$1" --json | jq .messages; }
[ "$(count b)" = 0 ] || fail "a send with a bad duration sent: $(count b)"
expect_rc 0 mq-admin list
grep -qx c "$T/out" && fail "create with a bad duration made the queue"

# --at: a date that does not exist is refused (it used to land on March 3rd); one that does
# exist, a leap day, is taken.
expect_rc 2 mq-send b --at 2027-02-31T00:00:00Z x
expect_err_match "^mq-send: b: invalid time '2027-02-31T00:00:00Z': 2027-02 has 28 days"
expect_rc 2 mq-send b --at 2026-04-31T12:00:00+02:00 x
expect_err_match "2026-04 has 30 days"
[ "$(count b)" = 0 ] || fail "a send --at a date that does not exist sent: $(count b)"
expect_rc 0 mq-send b --at 2028-02-29T00:00:00Z leap
expect_rc 0 mq-admin export b
[ "$(field visible_time)" = 2028-02-29T00:00:00.000Z ] || fail "--at 2028-02-29: $(field visible_time)"
finish
