#!/bin/bash
# mq-watch (EnableNotification, seed 000): Arrived prints "arrived QUEUE LOOKUP_ID" (or a JSON
# object) and exits 0; ArrivedError goes to stdout as "error QUEUE SYMBOL 0xHEX" with exit 1
# (MESSAGE_NOT_FOUND for -t 0, IO_TIMEOUT when the timeout expires); the seed's error order
# (bad cursor action 2, missing store OLE_E_BLANK 3, missing queue 3, closed queue 5);
# FIRST/CURRENT/NEXT on a named cursor shared with mq-peek; --follow until SIGINT/SIGTERM
# (exit 0), with a named cursor moving NEXT after each event; a closed pipe ends it quietly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

# Seed order: the cursor action is checked first, then the store, then the queue.
expect_rc 2 mq-watch --store "$T/nostore" q --cursor last
expect_err_match "^mq-watch: invalid cursor action 'last': use first, current or next \\(or --cursor NAME with --first, --current or --next\\) \\(E_INVALIDARG 0x80070057\\)\$"
expect_rc 3 mq-watch --store "$T/nostore" q -t 0
expect_err_match '^mq-watch: .*nostore: .*\(OLE_E_BLANK 0x80040007\)$'
expect_out ''
[ -e "$T/nostore" ] && fail "mq-watch created the missing store $T/nostore"
expect_rc 0 mq-admin create q
expect_rc 3 mq-watch nosuch -t 0
expect_err_match '^mq-watch: nosuch: no such queue \(MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003\)$'
expect_out ''
expect_rc 3 timeout -s KILL 10 mq-watch nosuch --follow
expect_err_match 'MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003'
expect_rc 0 mq-admin set q --status off
expect_rc 5 mq-watch q -t 0
expect_err_match '^mq-watch: q: .*\(MQ_ERROR_INVALID_HANDLE 0xC00E0007\)$'
expect_out ''
expect_rc 0 mq-admin set q --status on

# Nothing there: timeout 0 is MESSAGE_NOT_FOUND, a timeout IO_TIMEOUT after it expired.
expect_rc 1 mq-watch q -t 0
expect_out $'error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
[ -s "$T/err" ] && fail "ArrivedError also went to stderr: $(cat "$T/err")"
expect_rc 1 mq-watch q --timeout 0 --json
expect_out $'{"event":"error","queue":"q","error":"MQ_ERROR_MESSAGE_NOT_FOUND","code":"0xC00E0088"}\n'
for t in "-t 200ms" "--timeout 200ms" "--timeout=0.2s" "-t 200ms --json"; do
  now_us; t0=$NOW
  expect_rc 1 timeout -s KILL 10 mq-watch q $t
  now_us; ms=$(((NOW - t0) / 1000))
  case $t in
    *json*) expect_out $'{"event":"error","queue":"q","error":"MQ_ERROR_IO_TIMEOUT","code":"0xC00E001B"}\n' ;;
    *) expect_out $'error q MQ_ERROR_IO_TIMEOUT 0xC00E001B\n' ;;
  esac
  [ "$ms" -ge 200 ] && [ "$ms" -lt 2000 ] || fail "mq-watch q $t took $ms ms"
done

# Arrived: a message already there (FIRST: the head, by priority), nothing removed.
expect_rc 0 mq-send q one                          # 1
expect_rc 0 mq-send -p 5 -L 'say "hi" ü' q two     # 2, first in delivery order
expect_rc 0 mq-watch q
expect_out $'arrived q 2\n'
[ -s "$T/err" ] && fail "mq-watch wrote to stderr: $(cat "$T/err")"
expect_rc 0 mq-watch q --cursor first -t 0
expect_out $'arrived q 2\n'
expect_rc 0 mq-watch q --json
id=$(mq-peek q --template '{id}')
expect_out "{\"event\":\"arrived\",\"queue\":\"q\",\"lookup_id\":2,\"id\":\"${id//\\/\\\\}\",\"priority\":5,\"label\":\"say \\\"hi\\\" ü\"}"$'\n'
expect_rc 0 mq-peek q --all --template '{lookup_id} '
expect_out '2 1 '
# MSMQ format names work too.
expect_rc 0 mq-watch '.\private$\q' -t 0
expect_out $'arrived q 2\n'

# Arrived after a wait.
expect_rc 0 mq-admin purge q
start mq-watch q; w=$PID
wait_blocked "$w" poll
expect_rc 0 mq-send q three                        # 3
expect_bg 0 "$w"
expect_out $'arrived q 3\n'
expect_rc 0 mq-admin purge q
start mq-watch q --json -t 10s; w=$PID
wait_blocked "$w" poll
expect_rc 0 mq-send --delay 1h q later             # 4: rings the doorbell, not visible
sleep 0.1
kill -0 "$w" 2>/dev/null || fail "a delayed message (nothing visible) ended the watch"
expect_rc 0 mq-send -L x q four                    # 5
expect_bg 0 "$w"
grep -Eq '^\{"event":"arrived","queue":"q","lookup_id":5,"id":"\{[0-9a-f-]{36}\}\\\\[0-9]+","priority":3,"label":"x"\}$' "$T/out" ||
  fail "mq-watch --json printed $(cat "$T/out")"

# A named cursor, shared with mq-peek --cursor.
expect_rc 0 mq-admin purge q
# CURRENT is a cursor's first move (MSMQ): in an empty queue, with -t 0, nothing arrives.
expect_rc 1 mq-watch q --cursor current --cursor-name c -t 0
expect_out $'error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
# NEXT on a cursor never moved is illegal: with -t 0 seed 000 fires ArrivedError
# MQ_ERROR_MESSAGE_NOT_FOUND (stdout, exit 1); a NEXT that would wait is an error (7).
expect_rc 1 mq-watch q --cursor next --cursor-name c -t 0
expect_out $'error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
expect_rc 7 mq-watch q --cursor next --cursor-name c -t 100ms
expect_err_match '^mq-watch: q: .*\(MQ_ERROR_ILLEGAL_CURSOR_ACTION 0xC00E001C\)$'
expect_out ''
expect_rc 1 mq-watch q --cursor first --cursor-name c -t 0
expect_out $'error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
expect_rc 0 mq-send -l q < <(printf 'a\nb\nc\n')   # 6 7 8
expect_rc 0 mq-watch q --cursor-name c -t 0        # FIRST is the default action
expect_out $'arrived q 6\n'
expect_rc 0 mq-watch q --cursor current --cursor-name c -t 0
expect_out $'arrived q 6\n'
expect_rc 0 mq-watch q --cursor next --cursor-name c -t 0
expect_out $'arrived q 7\n'
expect_rc 0 mq-peek q --cursor c --current
expect_out b
expect_rc 0 mq-peek q --cursor c --next
expect_out c
expect_rc 0 mq-watch q --cursor current --cursor-name c
expect_out $'arrived q 8\n'
expect_rc 1 mq-watch q --cursor next --cursor-name c -t 0
expect_out $'error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
expect_rc 1 mq-watch q --cursor next --cursor-name c -t 100ms
expect_out $'error q MQ_ERROR_IO_TIMEOUT 0xC00E001B\n'
expect_rc 0 mq-watch q --cursor current --cursor-name c -t 0   # a failed NEXT did not move it
expect_out $'arrived q 8\n'
# NEXT waits for the message after the cursor.
start mq-watch q --cursor next --cursor-name c; w=$PID
wait_blocked "$w" poll
expect_rc 0 mq-send q d                            # 9
expect_bg 0 "$w"
expect_out $'arrived q 9\n'
expect_rc 0 mq-peek q --cursor c --current
expect_out d
# CURRENT on a message received since: EnableNotification advances to a suitable one.
expect_rc 0 mq-receive q --cursor c --current
expect_out d
start mq-watch q --cursor current --cursor-name c -t 10s; w=$PID
wait_blocked "$w" poll
expect_rc 0 mq-send q e                            # 10
expect_bg 0 "$w"
expect_out $'arrived q 10\n'

# --follow, anonymous: every message present, then each new one, until SIGTERM (exit 0).
expect_rc 0 mq-admin purge q
expect_rc 0 mq-send -l q < <(printf 'f1\nf2\n')    # 11 12
start mq-watch q --follow; w=$PID
wait_blocked "$w" poll
expect_rc 0 mq-send -p 7 q f3                      # 13
expect_rc 0 mq-send q f4                           # 14
wait_lines "$w" 4
wait_blocked "$w" poll
kill -TERM "$(tool_pid "$w")"
expect_bg 0 "$w"
expect_out $'arrived q 11\narrived q 12\narrived q 13\narrived q 14\n'
[ -s "$T/err" ] && fail "mq-watch --follow wrote to stderr: $(cat "$T/err")"
# SIGINT too; --json.
start mq-watch q --follow --json; w=$PID
wait_lines "$w" 4
wait_blocked "$w" poll
kill -INT "$(tool_pid "$w")"
expect_bg 0 "$w"
[ "$(grep -c '^{"event":"arrived","queue":"q","lookup_id":1[1-4],' "$T/out")" = 4 ] ||
  fail "mq-watch --follow --json printed: $(cat "$T/out")"
# A single (not --follow) watcher stopped by a signal dies by it, as other tools do.
expect_rc 0 mq-admin create idle
start mq-watch idle; w=$PID
wait_blocked "$w" poll
kill -TERM "$(tool_pid "$w")"
expect_bg 143 "$w"
expect_out ''
# --follow with a timeout: an idle timeout, ending with the ArrivedError.
expect_rc 1 timeout -s KILL 10 mq-watch q --follow -t 300ms
expect_out $'arrived q 11\narrived q 12\narrived q 13\narrived q 14\nerror q MQ_ERROR_IO_TIMEOUT 0xC00E001B\n'
expect_rc 1 timeout -s KILL 10 mq-watch q --follow -t 0
expect_out $'arrived q 11\narrived q 12\narrived q 13\narrived q 14\nerror q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
# Watching removed nothing.
expect_rc 0 mq-peek q --all --template '{lookup_id} '
expect_out '13 11 12 14 '

# --follow with a named cursor: FIRST, then NEXT after each event, in delivery order; the
# cursor stays on the last message reported.
start mq-watch q --cursor-name fc --follow; w=$PID
wait_lines "$w" 4
wait_blocked "$w" poll
expect_rc 0 mq-send q f5                           # 15
wait_lines "$w" 5
wait_blocked "$w" poll
kill -TERM "$(tool_pid "$w")"
expect_bg 0 "$w"
expect_out $'arrived q 13\narrived q 11\narrived q 12\narrived q 14\narrived q 15\n'
expect_rc 0 mq-peek q --cursor fc --current
expect_out f5
# ... and --cursor next --follow resumes after it.
expect_rc 0 mq-send q f6                           # 16
expect_rc 1 timeout -s KILL 10 mq-watch q --cursor next --cursor-name fc --follow -t 200ms
expect_out $'arrived q 16\nerror q MQ_ERROR_IO_TIMEOUT 0xC00E001B\n'

# A reader that goes away ends --follow quietly (exit 0) at its next event.
mkfifo "$T/pipe"
timeout -s KILL 10 head -n 1 <"$T/pipe" >"$T/out" &
hp=$!
BG+=($hp)
( exec timeout -s KILL 10 mq-watch q --follow >"$T/pipe" 2>"$T/err" ) &
wp=$!
BG+=($wp)
wait $hp
expect_out $'arrived q 11\n'
expect_rc 0 mq-send q f7                           # 17: the next event meets the closed pipe
wait $wp
rc=$?
[ "$rc" = 0 ] || fail "mq-watch --follow | head -n 1 exited $rc; stderr: $(cat "$T/err")"
[ -s "$T/err" ] && fail "mq-watch wrote to stderr on a closed pipe: $(cat "$T/err")"

expect_rc 0 mq-admin check
expect_out ''
finish
