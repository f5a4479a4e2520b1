#!/bin/bash
# Bad input to the wait, cursor, watch and delay options: each is refused before anything
# happens with one line on stderr (`mq-TOOL: [SUBJECT: ]what (SYMBOL 0xHEX)`), nothing on
# stdout, and the documented exit code: 2 for usage (E_INVALIDARG), 3 for a missing queue or
# store, 5 for a closed queue, 7 for an illegal cursor action. Nothing is sent or created.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q keep

# bad RC TOOL ARGS... : runs the tool (killed after 10 s: nothing here may wait) and asserts
# the exit code, one well-formed error line and an empty stdout.
bad() {
  local want=$1 tool=$2
  shift
  expect_rc "$want" timeout -s KILL 10 "$@"
  case $want in
    2) sym='(E_INVALIDARG 0x80070057|MQ_ERROR_ILLEGAL_QUEUE_PATHNAME 0xC00E0014)' ;;
    3) sym='(MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003|OLE_E_BLANK 0x80040007)' ;;
    5) sym='MQ_ERROR_[A-Z_]+ 0xC00E00[0-9A-F]{2}' ;;
    7) sym='MQ_ERROR_ILLEGAL_CURSOR_ACTION 0xC00E001C' ;;
  esac
  expect_err_match "^$tool: [^ ].* \\($sym\\)\$"
  expect_out ''
}

# Durations.
bad 2 mq-peek q --wait=5x
expect_err_match "invalid duration '5x'"
bad 2 mq-peek q --wait 5x          # not a duration, so --wait waits forever and 5x is extra
bad 2 mq-receive q -w 5x
bad 2 mq-receive q --wait=-5s
bad 2 mq-receive q --wait=1.5       # a fraction needs a unit (1.5s is 1500 ms)
bad 2 mq-receive q --wait=5secs
bad 2 mq-watch q -t soon
expect_err_match "invalid duration 'soon'"
bad 2 mq-watch q --timeout=5x
bad 2 mq-watch q --timeout ''
bad 2 mq-send q --delay -1s body
expect_err_match "invalid duration '-1s'"
bad 2 mq-send q --delay 5x body
bad 2 mq-send q --delay infinite body
bad 2 mq-send q --delay 0.5ms body   # finer than a millisecond
bad 2 mq-send q --at tomorrow body
expect_err_match "invalid time 'tomorrow'"
bad 2 mq-send q --at @ body
bad 2 mq-send q --at @-5 body
bad 2 mq-send q --at @12abc body
bad 2 mq-send q --at 2026-13-01T00:00:00Z body
bad 2 mq-send q --at 2026-12-01T25:00:00Z body
bad 2 mq-send q --at 2026-12-01 body
bad 2 mq-send q --at '2026-12-01T08:00:00+2' body
bad 2 mq-send q --delay 1s --at @1 body
# Watch: cursor actions and names.
bad 2 mq-watch q --cursor last
expect_err_match "invalid cursor action 'last'"
bad 2 mq-watch q --cursor FIRST
bad 2 mq-watch q --cursor ''
bad 2 mq-watch q --cursor current
expect_err_match 'cursor-name'
bad 2 mq-watch q --cursor next
for name in a/b ../x .hidden 'a b' ''; do
  bad 2 mq-watch q --cursor-name "$name" -t 0
done
bad 2 mq-watch
bad 2 mq-watch q extra
bad 2 mq-watch 'a/b'
bad 2 mq-watch --bogus q
# Watch: store and queue.
bad 3 mq-watch --store "$T/nostore" q -t 0
expect_err_match '\(OLE_E_BLANK 0x80040007\)$'
[ -e "$T/nostore" ] && fail "mq-watch made the store $T/nostore"
bad 3 mq-watch nosuch
expect_err_match '^mq-watch: nosuch: .*\(MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003\)$'
bad 3 mq-watch nosuch --follow --cursor-name c
# Peek/receive: cursors.
bad 2 mq-peek q --current
expect_err_match -- '--current needs --cursor'
bad 2 mq-receive q --current
bad 2 mq-peek q --cursor c
bad 2 mq-peek q --cursor c --first --next
bad 2 mq-peek q --cursor c --current --next
bad 2 mq-peek q --cursor c --lookup-id 1 --first
bad 2 mq-peek q --cursor c --lookup-id 1 --next
bad 2 mq-receive q --cursor c --lookup-id 1 --current
bad 2 mq-peek q --cursor c --first --last
bad 2 mq-peek q --cursor c --last
bad 2 mq-peek q --cursor c --prev
bad 2 mq-peek q --cursor c --first --all
bad 2 mq-peek q --cursor c --first -n 2
bad 2 mq-peek q --cursor c --first --id '{00000000-0000-0000-0000-000000000000}\1'
bad 2 mq-receive q --cursor c --next
bad 2 mq-receive q --cursor c --first
bad 2 mq-receive q --cursor c --top 2 --current
for name in a/b ../x ../../etc/passwd .hidden 'a b' 'x;y' "$(printf 'n%.0s' {1..125})"; do
  bad 2 mq-peek q --cursor "$name" --first
  expect_err_match 'invalid cursor name'
  bad 2 mq-receive q --cursor "$name" --current
done
bad 2 mq-peek q --cursor '' --first
bad 2 mq-receive q --cursor '' --current
# A cursor never moved: NEXT is illegal (7), waiting or not, and so is a receive at it
# (CURRENT is its first move: test_cursor_walk, test_cursor_msmq).
bad 7 mq-peek q --cursor fresh --next
bad 7 mq-peek q --cursor fresh --next --wait
bad 7 mq-receive q --cursor fresh --current
bad 7 mq-watch q --cursor next --cursor-name fresh --follow
# Missing and closed queues.
bad 3 mq-peek nosuch --cursor c --first
bad 3 mq-peek nosuch --cursor c --first --wait
bad 3 mq-receive nosuch --wait
expect_rc 0 mq-admin set q --status off
bad 5 mq-watch q
expect_err_match '\(MQ_ERROR_INVALID_HANDLE 0xC00E0007\)$'
bad 5 mq-receive q --wait
bad 5 mq-peek q --wait 10s
bad 5 mq-peek q --cursor c --first --wait
expect_rc 0 mq-admin set q --status on

# Nothing was sent, no cursor was made, no lock or store file named after a bad argument.
expect_rc 0 mq-peek q --all -l
expect_out $'keep\n'
expect_rc 0 mq-admin cursors
expect_out ''
if ls -a "$STORE/locks" | grep -q -e '^cursor\.[0-9]*\.\.' -e passwd -e hidden -e ' '; then
  fail "a lock file was made for a bad cursor name: $(ls -a "$STORE/locks" | tr '\n' ' ')"
fi
expect_rc 0 mq-admin check
expect_out ''
finish
