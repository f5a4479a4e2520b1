#!/bin/bash
# mq-admin cursors [--json] lists the named cursors (queue, name, lookup id or unset, in-use or
# idle); delete-cursor forgets one (a missing one is status 2); deleting a queue forgets its
# cursors; cursor names follow the queue-name rule; mq-admin check stays clean.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create r
# No cursors: nothing listed.
expect_rc 0 mq-admin cursors
expect_out ''
expect_rc 0 mq-admin cursors --json
expect_out ''

expect_rc 0 mq-send -l q < <(printf 'a\nb\nc\n')   # lookup ids 1 2 3
expect_rc 0 mq-send -p 6 r hi                       # r: 1
expect_rc 0 mq-peek q --cursor c --first
expect_rc 0 mq-peek q --cursor c --next
expect_rc 0 mq-peek q --cursor audit.v2 --first
expect_rc 0 mq-peek r --cursor c --first
expect_rc 0 mq-watch q --cursor-name watcher -t 0
expect_out $'arrived q 1\n'
expect_rc 0 mq-watch q --cursor-name watcher --cursor next -t 0
expect_out $'arrived q 2\n'
expect_rc 0 mq-watch q --cursor-name watcher --cursor next -t 0
expect_out $'arrived q 3\n'

expect_rc 0 mq-admin cursors
expect_out $'q\taudit.v2\t1\tidle\nq\tc\t2\tidle\nq\twatcher\t3\tidle\nr\tc\t1\tidle\n'
expect_rc 0 mq-admin cursors --json
expect_out '{"queue":"q","cursor":"audit.v2","positioned":true,"lookup_id":1,"priority":3,"in_use":false}
{"queue":"q","cursor":"c","positioned":true,"lookup_id":2,"priority":3,"in_use":false}
{"queue":"q","cursor":"watcher","positioned":true,"lookup_id":3,"priority":3,"in_use":false}
{"queue":"r","cursor":"c","positioned":true,"lookup_id":1,"priority":6,"in_use":false}
'
# Common options before the subcommand too.
expect_rc 0 env -u MQ_STORE mq-admin --store "$STORE" cursors
expect_out $'q\taudit.v2\t1\tidle\nq\tc\t2\tidle\nq\twatcher\t3\tidle\nr\tc\t1\tidle\n'

# In use: a process holding the cursor (waiting at the end of the queue).
start mq-peek q --cursor watcher --next --wait; holder=$PID
wait_blocked "$holder" poll
expect_rc 0 mq-admin cursors
expect_out $'q\taudit.v2\t1\tidle\nq\tc\t2\tidle\nq\twatcher\t3\tin-use\nr\tc\t1\tidle\n'
expect_rc 0 mq-admin cursors --json
grep -q '^{"queue":"q","cursor":"watcher","positioned":true,"lookup_id":3,"priority":3,"in_use":true}$' "$T/out" ||
  fail "cursors --json does not show watcher in use: $(cat "$T/out")"
expect_rc 0 mq-send q d                               # 4: the holder takes it and exits
expect_bg 0 "$holder"
expect_out d
expect_rc 0 mq-admin cursors
expect_out $'q\taudit.v2\t1\tidle\nq\tc\t2\tidle\nq\twatcher\t4\tidle\nr\tc\t1\tidle\n'

# A cursor in use that was never moved is listed as unset (its holder waits for a first
# message of an empty queue).
expect_rc 0 mq-admin create empty
start mq-peek empty --cursor fresh --first --wait; holder=$PID
wait_blocked "$holder" poll
expect_rc 0 mq-admin cursors
grep -q $'^empty\tfresh\tunset\tin-use$' "$T/out" ||
  fail "a cursor in use but never moved is not listed as 'empty fresh unset in-use': $(cat "$T/out" | tr '\n' '|')"
kill -TERM "$(tool_pid "$holder")"
expect_bg 143 "$holder"

# delete-cursor forgets: the cursor is no longer listed and acts as never moved.
expect_rc 0 mq-admin delete-cursor q c
expect_out ''
expect_rc 0 mq-admin cursors
expect_out $'q\taudit.v2\t1\tidle\nq\twatcher\t4\tidle\nr\tc\t1\tidle\n'
expect_rc 7 mq-peek q --cursor c --next
expect_err_match '^mq-peek: q: .*\(MQ_ERROR_ILLEGAL_CURSOR_ACTION 0xC00E001C\)$'
expect_rc 0 mq-peek r --cursor c --current     # same name on another queue: untouched
expect_out hi
# A cursor that does not exist: status 2, one line.
expect_rc 2 mq-admin delete-cursor q c
expect_err_match '^mq-admin: q: .*\(E_INVALIDARG 0x80070057\)$'
expect_rc 2 mq-admin delete-cursor q never-was
expect_err_match '^mq-admin: q: .*never-was.*\(E_INVALIDARG 0x80070057\)$'
# A missing queue: 3. Names with path characters: 2.
expect_rc 3 mq-admin delete-cursor nosuch c
expect_err_match '^mq-admin: nosuch: .*\(MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003\)$'
for bad in a/b ../x .hidden '' 'a b' "$(printf 'x%.0s' {1..125})"; do
  expect_rc 2 mq-admin delete-cursor q "$bad"
  expect_err_match '\(E_INVALIDARG 0x80070057\)$'
  expect_out ''
  expect_rc 2 mq-peek q --cursor "$bad" --first
  expect_err_match '^mq-peek: .*invalid cursor name.*\(E_INVALIDARG 0x80070057\)$'
  expect_out ''
done
# A 124-character name is fine.
long=$(printf 'x%.0s' {1..124})
expect_rc 0 mq-peek q --cursor "$long" --first
expect_out a
expect_rc 0 mq-admin delete-cursor q "$long"
# Nothing of a bad name reached the disk.
if ls "$STORE/locks" | grep -q -e '\.\.' -e '/'; then fail "a lock file was made for a bad name: $(ls "$STORE/locks")"; fi
[ -e "$T/x" ] && fail "a cursor name escaped the store"

# Deleting a queue forgets its cursors.
expect_rc 0 mq-admin delete q
expect_rc 0 mq-admin cursors
expect_out $'r\tc\t1\tidle\n'
expect_rc 0 mq-admin create q
expect_rc 0 mq-send q new
expect_rc 7 mq-peek q --cursor watcher --next
expect_rc 0 mq-admin delete-cursor r c
expect_rc 0 mq-admin cursors
expect_out ''

expect_rc 0 mq-admin check
expect_out ''
finish
